package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// Every test that needs Redis starts its own server: the instance registry
// (keys.Instances) is one key per Redis, so instances of tests sharing a
// server would receive each other's notices.

// waitTimeout bounds every wait for something that happens through Redis.
const waitTimeout = 10 * time.Second

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// listen runs bus.Listen into hub until the test ends, or until the
// returned stop is called.
func listen(t *testing.T, bus *Bus, hub *Hub) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		bus.Listen(ctx, hub.Deliver)
	}()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds, failing the test after waitTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// registered reports whether every id is in the instance registry.
func registered(rdb redis.UniversalClient, ids ...string) bool {
	for _, id := range ids {
		if rdb.ZScore(context.Background(), keys.Instances, id).Err() != nil {
			return false
		}
	}
	return true
}

// unread holds what until took from a client and has not returned yet.
var unread = struct {
	sync.Mutex
	m map[*Client][]*Notice
}{m: map[*Client][]*Notice{}}

// nextUnread returns the first notice until took from c and has not
// returned yet, if any.
func nextUnread(c *Client) (*Notice, bool) {
	unread.Lock()
	defer unread.Unlock()
	ns := unread.m[c]
	if len(ns) == 0 {
		return nil, false
	}
	unread.m[c] = ns[1:]
	return ns[0], true
}

// until reads the client's notices up to and including the first that
// matches, and returns them all. It fails the test if the client is dropped
// or nothing matches within waitTimeout.
func until(t *testing.T, c *Client, what string, match func(Notice) bool) []Notice {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	var got []Notice
	for {
		for n, ok := nextUnread(c); ok; n, ok = nextUnread(c) {
			got = append(got, *n)
			if match(*n) {
				return got
			}
		}
		select {
		case <-c.Ready():
			ns := took(c)
			unread.Lock()
			unread.m[c] = ns
			unread.Unlock()
		case <-c.Dropped():
			t.Fatalf("client dropped while waiting for %s; got %s", what, describe(got))
		case <-timeout.C:
			t.Fatalf("no %s within %v; got %s", what, waitTimeout, describe(got))
		}
	}
}

// took takes the client's frames, and returns their notices in order.
func took(c *Client) []*Notice {
	var ns []*Notice
	for _, f := range c.Take() {
		ns = append(ns, f.Notices()...)
	}
	return ns
}

func isJob(id string) func(Notice) bool { return func(n Notice) bool { return n.JobID == id } }

func isType(typ string) func(Notice) bool { return func(n Notice) bool { return n.Type == typ } }

// describe lists notices as type(queue,job,operator) for failure messages.
func describe(ns []Notice) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprintf("%s(%s,%s,%s)", n.Type, n.Queue, n.JobID, n.Operator)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestPublishReachesEveryInstance(t *testing.T) {
	t.Parallel()
	rdb := taskstest.Redis(t).Client()
	ctx := context.Background()
	// Two web instances on one Redis, and a publisher that does not listen
	// (as cron is).
	busA, hubA := NewBus(rdb, quiet()), NewHub()
	busB, hubB := NewBus(rdb, quiet()), NewHub()
	stopA, stopB := listen(t, busA, hubA), listen(t, busB, hubB)
	eventually(t, "both instances to register", func() bool { return registered(rdb, busA.ID(), busB.ID()) })
	if busA.ID() == busB.ID() {
		t.Fatalf("two buses share the id %s", busA.ID())
	}
	clientA, clientB := hubA.Join(Viewer{Name: "boss", All: true}), hubB.Join(Viewer{Name: "boss", All: true})
	publishers := map[string]*Bus{"instance A": busA, "instance B": busB, "a publisher that does not listen": NewBus(rdb, quiet())}
	for name, from := range publishers {
		id := "job-from-" + strings.ReplaceAll(name, " ", "-")
		if err := from.Publish(ctx, Notice{Type: JobAvailable, Queue: "mail", JobID: id}); err != nil {
			t.Fatalf("Publish from %s: %v", name, err)
		}
		for hub, c := range map[string]*Client{"A": clientA, "B": clientB} {
			got := until(t, c, "the notice published by "+name+" on hub "+hub, isJob(id))
			if len(got) != 1 || got[0].Type != JobAvailable || got[0].Queue != "mail" {
				t.Errorf("hub %s got %s, want exactly the job.available from %s", hub, describe(got), name)
			}
		}
	}
	// Several notices in one call arrive in order.
	batch := []Notice{{Type: JobAvailable, JobID: "b1"}, {Type: QueueChanged, Queue: "mail"}, {Type: JobFinished, JobID: "b2"}}
	if err := busA.Publish(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	if got := until(t, clientB, "the batch", isJob("b2")); describe(got) != describe(batch) {
		t.Errorf("batch arrived as %s, want %s", describe(got), describe(batch))
	}

	// A stopped instance leaves the registry and its list is gone.
	stopA()
	stopB()
	for _, b := range []*Bus{busA, busB} {
		if err := rdb.ZScore(ctx, keys.Instances, b.ID()).Err(); err != redis.Nil {
			t.Errorf("stopped instance %s still registered (ZSCORE error %v)", b.ID(), err)
		}
		if n, err := rdb.Exists(ctx, keys.Notices(b.ID())).Result(); err != nil || n != 0 {
			t.Errorf("stopped instance %s still has its list (exists %d, %v)", b.ID(), n, err)
		}
	}
}

func TestListenerOnRedisWithoutBLMPOP(t *testing.T) {
	t.Parallel()
	// Redis before 7 has no BLMPOP: the listener takes one notice at a time.
	server, err := taskstest.NewServer("--rename-command", "BLMPOP", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	rdb := server.Client()
	bus, hub := NewBus(rdb, quiet()), NewHub()
	listen(t, bus, hub)
	eventually(t, "the instance to register", func() bool { return registered(rdb, bus.ID()) })
	c := hub.Join(boss)
	batch := []Notice{{Type: JobAvailable, JobID: "1"}, {Type: JobAvailable, JobID: "2"}, {Type: JobFinished, JobID: "3"}}
	if err := NewBus(rdb, quiet()).Publish(context.Background(), batch...); err != nil {
		t.Fatal(err)
	}
	if got := until(t, c, "the last notice", isJob("3")); describe(got) != describe(batch) {
		t.Errorf("got %s, want %s", describe(got), describe(batch))
	}
}

// Viewers of the filtering tests: two operators, a supervisor, and an
// operator who works no queue.
var (
	ann   = Viewer{Name: "ann", Queues: []string{"mail", "scans"}}
	bob   = Viewer{Name: "bob", Queues: []string{"mail"}}
	boss  = Viewer{Name: "boss", All: true}
	carl  = Viewer{Name: "carl"}
	flows = []struct {
		name           string
		n              Notice
		ann, bob, carl bool // boss sees everything but others' expiring
	}{
		{"counts of a queue of both", Notice{Type: QueueChanged, Queue: "mail"}, true, true, false},
		{"counts of a queue of ann's", Notice{Type: QueueChanged, Queue: "scans"}, true, false, false},
		{"counts of nobody's queue", Notice{Type: QueueChanged, Queue: "other"}, false, false, false},
		{"new job in a queue of both", Notice{Type: JobAvailable, Queue: "mail", JobID: "1"}, true, true, false},
		{"new job in a queue of ann's", Notice{Type: JobAvailable, Queue: "scans", JobID: "2"}, true, false, false},
		{"new job in nobody's queue", Notice{Type: JobAvailable, Queue: "other", JobID: "3"}, false, false, false},
		{"ann claimed in a queue of both", Notice{Type: ReservationCreated, Queue: "mail", JobID: "4", Operator: "ann"}, true, false, false},
		{"ann extended", Notice{Type: ReservationExtended, Queue: "mail", JobID: "4", Operator: "ann"}, true, false, false},
		{"ann completed", Notice{Type: ReservationCompleted, Queue: "mail", JobID: "4", Operator: "ann"}, true, false, false},
		{"bob released", Notice{Type: ReservationReleased, Queue: "mail", JobID: "5", Operator: "bob"}, false, true, false},
		{"bob's reservation expired", Notice{Type: ReservationExpired, Queue: "mail", JobID: "6", Operator: "bob"}, false, true, false},
		{"carl's reservation is expiring", Notice{Type: ReservationExpiring, Queue: "mail", JobID: "7", Operator: "carl"}, false, false, true},
		{"someone else's reservation", Notice{Type: ReservationCreated, Queue: "mail", JobID: "8", Operator: "dora"}, false, false, false},
		{"job finished", Notice{Type: JobFinished, Queue: "mail", JobID: "9", State: "completed"}, false, false, false},
		{"unknown type", Notice{Type: "queue.deleted", Queue: "mail"}, false, false, false},
		{"settings of a queue of both", Notice{Type: QueueSettings, Queue: "mail"}, true, true, false},
		{"resync", Notice{Type: Resync}, true, true, true},
	}
)

// bossSees says whether a supervisor sees the notice of the flows: all
// but the warning that someone's reservation runs out.
func bossSees(n Notice) bool { return n.Type != ReservationExpiring }

// An operator who is away hears of no new job, and of all else as before.
func TestAwayViewerHearsNoNewJobs(t *testing.T) {
	away := ann
	away.Away = true
	for _, tc := range flows {
		want := tc.ann && tc.n.Type != JobAvailable
		if got := away.Sees(tc.n); got != want {
			t.Errorf("away ann.Sees(%s) = %v, want %v", tc.name, got, want)
		}
	}
	if away.equal(ann) {
		t.Error("an away viewer equals the same viewer not away: the hub would not update it")
	}
}

func TestViewerSees(t *testing.T) {
	t.Parallel()
	for _, tc := range flows {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				v    Viewer
				want bool
			}{{ann, tc.ann}, {bob, tc.bob}, {carl, tc.carl}, {boss, bossSees(tc.n)}} {
				if got := c.v.Sees(tc.n); got != c.want {
					t.Errorf("%s.Sees(%s %s of %q) = %v, want %v", c.v.Name, tc.n.Type, tc.n.Queue, tc.n.Operator, got, c.want)
				}
			}
		})
	}
}

func TestHubFiltersNoticesFromTheBus(t *testing.T) {
	t.Parallel()
	rdb := taskstest.Redis(t).Client()
	bus, hub := NewBus(rdb, quiet()), NewHub()
	listen(t, bus, hub)
	eventually(t, "the instance to register", func() bool { return registered(rdb, bus.ID()) })
	clients := map[string]*Client{"ann": hub.Join(ann), "bob": hub.Join(bob), "carl": hub.Join(carl), "boss": hub.Join(boss)}
	want := map[string][]Notice{}
	var all []Notice
	for _, tc := range flows {
		all = append(all, tc.n)
		for name, sees := range map[string]bool{"ann": tc.ann, "bob": tc.bob, "carl": tc.carl, "boss": bossSees(tc.n)} {
			if sees {
				want[name] = append(want[name], tc.n)
			}
		}
	}
	if all[len(all)-1].Type != Resync {
		t.Fatal("the flows must end with the resync that everybody sees")
	}
	if err := NewBus(rdb, quiet()).Publish(context.Background(), all...); err != nil {
		t.Fatal(err)
	}
	// What a viewer sees alone comes in frames of its own, which may pass
	// those of its group: compare what came, not in which order.
	sorted := func(ns []Notice) string {
		parts := strings.Split(strings.Trim(describe(ns), "[]"), " ")
		slices.Sort(parts)
		return strings.Join(parts, " ")
	}
	for name, c := range clients {
		var got []Notice
		for len(got) < len(want[name]) {
			got = append(got, until(t, c, fmt.Sprintf("notice %d of %d for %s", len(got)+1, len(want[name]), name), func(Notice) bool { return true })...)
		}
		if sorted(got) != sorted(want[name]) {
			t.Errorf("%s got\n  %s\nwant\n  %s", name, describe(got), describe(want[name]))
		}
	}
}

// A client that does not take its frames is never dropped, nor does it
// hold more than maxFrames: what it missed is replaced by a resync, after
// which its page fetches afresh, and the frames after it.
func TestSlowClientIsResynced(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	slow, fast := hub.Join(boss), hub.Join(boss)
	// An operator who sees none of the notices is never behind.
	unconcerned := hub.Join(carl)
	// A queue's settings are urgent: a frame each, soon after the last.
	frame := func(i int) {
		t.Helper()
		hub.Deliver(Notice{Type: QueueSettings, Queue: "mail", JobID: strconv.Itoa(i)})
		select {
		case <-fast.Ready():
		case <-time.After(waitTimeout):
			t.Fatalf("frame %d never due", i)
		}
		if ns := took(fast); len(ns) != 1 || ns[0].JobID != strconv.Itoa(i) {
			t.Fatalf("the fast client took %s, want job %d", describe(deref(ns)), i)
		}
	}
	for i := range maxFrames {
		frame(i)
	}
	slow.mu.Lock()
	n := len(slow.out)
	slow.mu.Unlock()
	if n != maxFrames {
		t.Fatalf("the slow client holds %d frames, want %d", n, maxFrames)
	}
	frame(maxFrames)
	ns := took(slow)
	if len(ns) != 2 || ns[0].Type != Resync || ns[1].JobID != strconv.Itoa(maxFrames) {
		t.Fatalf("the slow client took %s, want a resync and the last job", describe(deref(ns)))
	}
	if closed(slow.Dropped()) || closed(fast.Dropped()) || hub.Clients() != 3 {
		t.Fatalf("a client was dropped (clients %d)", hub.Clients())
	}
	if len(unconcerned.Take()) != 0 {
		t.Error("a client that sees none of the notices was given some")
	}
}

// deref copies the notices, for describe.
func deref(ns []*Notice) []Notice {
	out := make([]Notice, len(ns))
	for i, n := range ns {
		out[i] = *n
	}
	return out
}

// Clients whose viewers see alike share each frame, encoded once; what one
// sees alone comes in a frame of its own.
func TestClientsShareAFrame(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	a, b := hub.Join(ann), hub.Join(ann)
	other := hub.Join(Viewer{Name: "alex", Queues: ann.Queues})
	hub.Deliver(Notice{Type: JobAvailable, Queue: "mail", JobID: "j1"})
	hub.Deliver(Notice{Type: ReservationCreated, Queue: "mail", JobID: "j0", Operator: "ann"})
	frames := func(c *Client) []*Frame {
		var fs []*Frame
		deadline := time.After(waitTimeout)
		for len(fs) < 2 {
			select {
			case <-c.Ready():
				fs = append(fs, c.Take()...)
			case <-deadline:
				t.Fatalf("%d frames within %v, want 2", len(fs), waitTimeout)
			}
			if c == other && len(fs) == 1 {
				return fs
			}
		}
		return fs
	}
	byJob := func(fs []*Frame, id string) *Frame {
		for _, f := range fs {
			if f.Notices()[0].JobID == id {
				return f
			}
		}
		t.Fatalf("no frame of job %s", id)
		return nil
	}
	fa, fb, fo := frames(a), frames(b), frames(other)
	shared := byJob(fa, "j1")
	if byJob(fb, "j1") != shared || byJob(fo, "j1") != shared {
		t.Fatal("viewers who see alike got the new job in frames of their own")
	}
	if byJob(fa, "j0") == shared || len(fo) != 1 {
		t.Fatal("ann's reservation went in the frame of all who see alike")
	}
	want, _ := json.Marshal(Notice{Type: JobAvailable, Queue: "mail", JobID: "j1"})
	msg, err := shared.Message()
	if err != nil || msg == nil || string(shared.data) != string(want) {
		t.Fatalf("the frame is %s (%v), want %s", shared.data, err, want)
	}
	if m2, _ := shared.Message(); m2 != msg {
		t.Fatal("the frame was prepared twice")
	}
}

func TestCloseDropsEveryClientAndDrainWaits(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	if err := hub.Drain(context.Background()); err != nil {
		t.Fatalf("Drain of an empty hub: %v", err)
	}
	a, b := hub.Join(boss), hub.Join(ann)
	hub.Close()
	for name, c := range map[string]*Client{"a": a, "b": b} {
		if !closed(c.Dropped()) || !errors.Is(c.Err(), ErrClosed) {
			t.Errorf("client %s after Close: dropped %v, Err %v; want true, %v", name, closed(c.Dropped()), c.Err(), ErrClosed)
		}
	}
	if n := hub.Clients(); n != 0 {
		t.Errorf("hub has %d clients after Close, want 0", n)
	}
	// A client joining during the shutdown is let go at once.
	late := hub.Join(boss)
	if !closed(late.Dropped()) || !errors.Is(late.Err(), ErrClosed) {
		t.Errorf("client joining after Close: dropped %v, Err %v; want true, %v", closed(late.Dropped()), late.Err(), ErrClosed)
	}
	hub.Deliver(Notice{Type: Resync}) // harmless: nobody to deliver to
	hub.Close()                       // twice: harmless

	// Drain waits for every client to leave, dropped or not.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := hub.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain with three clients still there: %v, want the deadline", err)
	}
	drained := make(chan error, 1)
	go func() { drained <- hub.Drain(context.Background()) }()
	hub.Leave(a)
	hub.Leave(late)
	hub.Leave(a) // twice: counted once
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v with a client still there", err)
	case <-time.After(50 * time.Millisecond):
	}
	hub.Leave(b)
	select {
	case err := <-drained:
		if err != nil {
			t.Fatalf("Drain: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Drain still waiting %v after every client left", waitTimeout)
	}
	if !errors.Is(a.Err(), ErrClosed) {
		t.Errorf("leaving after the drop changed Err to %v, want %v", a.Err(), ErrClosed)
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	first, stopFirst := hub.Wait("j1")
	second, stopSecond := hub.Wait("j1")
	other, stopOther := hub.Wait("j2")
	gaveUp, stopGaveUp := hub.Wait("j3")
	batch, stopBatch := hub.Wait("b1")
	defer stopBatch()
	defer stopFirst()
	defer stopSecond()
	defer stopOther()
	stopGaveUp()

	// Other notices about the job, and other jobs finishing, wake nobody.
	for _, n := range []Notice{
		{Type: JobAvailable, JobID: "j1"},
		{Type: ReservationCompleted, JobID: "j1", Operator: "ann"},
		{Type: JobFinished, JobID: "j9", State: "completed"},
		{Type: BatchChanged, BatchID: "b1"},
		{Type: BatchFinished, BatchID: "b9"},
		{Type: JobSLA, JobID: "j1", Action: "breached"},
		{Type: JobSLA, JobID: "j9", Action: "moved"},
	} {
		hub.Deliver(n)
		if closed(first) || closed(second) || closed(other) || closed(batch) {
			t.Fatalf("%s of %s woke a waiter", n.Type, n.JobID)
		}
	}
	hub.Deliver(Notice{Type: JobFinished, JobID: "j1", State: "completed"})
	if !closed(first) || !closed(second) {
		t.Fatal("job.finished for j1 did not wake both of its waiters")
	}
	if closed(other) {
		t.Fatal("job.finished for j1 woke the waiter of j2")
	}
	hub.Deliver(Notice{Type: BatchFinished, BatchID: "b1", State: "completed"})
	if !closed(batch) || closed(other) {
		t.Fatal("batch.finished for b1 did not wake its waiter alone")
	}
	hub.Deliver(Notice{Type: JobFinished, JobID: "j3", State: "dead"})
	if closed(gaveUp) {
		t.Fatal("a waiter that stopped waiting was woken")
	}
	// A resync may have lost any job.finished: every waiter looks again.
	hub.Deliver(Notice{Type: Resync})
	if !closed(other) {
		t.Fatal("resync did not wake the waiter of j2")
	}
	// Stopping after the wake-up, or twice, is harmless.
	stopFirst()
	stopFirst()
	// A job that moved to its queue's breach queue: its waiters wake to
	// follow it.
	moving, stopMoving := hub.Wait("j4")
	defer stopMoving()
	hub.Deliver(Notice{Type: JobSLA, JobID: "j4", Action: "moved", State: "ready"})
	if !closed(moving) {
		t.Fatal("job.sla of a move did not wake the job's waiter")
	}
}

func TestWaitThroughTheBus(t *testing.T) {
	t.Parallel()
	rdb := taskstest.Redis(t).Client()
	bus, hub := NewBus(rdb, quiet()), NewHub()
	listen(t, bus, hub)
	eventually(t, "the instance to register", func() bool { return registered(rdb, bus.ID()) })
	woken, stop := hub.Wait("j1")
	defer stop()
	// Sent by another instance, as when a holder completes a job there.
	other := NewBus(rdb, quiet())
	if err := other.Publish(context.Background(), Notice{Type: JobFinished, JobID: "j2"}); err != nil {
		t.Fatal(err)
	}
	// A client joined after the waiter tells when j2's notice has passed.
	c := hub.Join(boss)
	if err := other.Publish(context.Background(), Notice{Type: JobAvailable, JobID: "marker"}); err != nil {
		t.Fatal(err)
	}
	until(t, c, "the marker", isJob("marker"))
	if closed(woken) {
		t.Fatal("job.finished for j2 woke the waiter of j1")
	}
	if err := other.Publish(context.Background(), Notice{Type: JobFinished, JobID: "j1", State: "completed"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	case <-time.After(waitTimeout):
		t.Fatalf("job.finished for j1 did not wake its waiter within %v", waitTimeout)
	}
}

// An instance's own changes reach its own waiters and browsers from the
// moment it listens, even while its list of instances, read before it
// registered, does not name it yet.
func TestAnInstanceHearsItselfBeforeOthersSeeIt(t *testing.T) {
	t.Parallel()
	rdb := taskstest.Redis(t).Client()
	ctx := context.Background()
	bus, hub := NewBus(rdb, quiet()), NewHub()
	if ids, err := bus.live(ctx); err != nil || slices.Contains(ids, bus.ID()) {
		t.Fatalf("instances before listening: %v %v, want a list without %s", ids, err, bus.ID())
	}
	listen(t, bus, hub)
	eventually(t, "the listener to start", bus.listening.Load)
	woken, stop := hub.Wait("j1")
	defer stop()
	if err := bus.Publish(ctx, Notice{Type: JobFinished, JobID: "j1", State: "completed"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	case <-time.After(waitTimeout):
		t.Fatalf("the instance's own job.finished did not wake its waiter within %v", waitTimeout)
	}
}

func TestListenerSurvivesRedisRestart(t *testing.T) {
	t.Parallel()
	server := taskstest.Redis(t)
	rdb := server.Client()
	ctx := context.Background()
	bus, hub := NewBus(rdb, quiet()), NewHub()
	listen(t, bus, hub)
	eventually(t, "the instance to register", func() bool { return registered(rdb, bus.ID()) })
	c := hub.Join(boss)
	publisher := NewBus(server.Client(), quiet())
	if err := publisher.Publish(ctx, Notice{Type: JobAvailable, JobID: "before"}); err != nil {
		t.Fatal(err)
	}
	until(t, c, "the notice before the restart", isJob("before"))

	if err := server.Restart(); err != nil {
		t.Fatalf("restart Redis: %v", err)
	}
	// The restarted server is empty: the listener registers again, and as
	// notices may have been lost meanwhile, the browsers resync — even when
	// the client's retries hid the restart from the listener.
	eventually(t, "the instance to register again", func() bool { return registered(rdb, bus.ID()) })
	until(t, c, "a resync after the restart", isType(Resync))
	// Notices flow again. The publisher may still miss the instance for a
	// moment, so keep publishing until one arrives.
	deadline := time.Now().Add(waitTimeout)
	for i := 0; ; i++ {
		id := "after-" + strconv.Itoa(i)
		if err := publisher.Publish(ctx, Notice{Type: JobAvailable, JobID: id}); err != nil {
			t.Logf("publish after the restart: %v", err)
		}
		select {
		case <-c.Ready():
			for _, n := range took(c) {
				if n.Type == Resync {
					continue
				}
				if !strings.HasPrefix(n.JobID, "after-") {
					t.Fatalf("after the restart got %s, want only the published notices", describe([]Notice{*n}))
				}
				return
			}
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no notice arrived within %v of the restart", waitTimeout)
		}
	}
}

func TestPruneRemovesStaleInstances(t *testing.T) {
	t.Parallel()
	rdb := taskstest.Redis(t).Client()
	ctx := context.Background()
	live := NewBus(rdb, quiet())
	listen(t, live, NewHub())
	eventually(t, "the instance to register", func() bool { return registered(rdb, live.ID()) })
	// A crashed instance that stopped renewing long ago, and one that is
	// not listening but renewed a second ago.
	now := time.Now()
	fake := map[string]time.Time{"crashed": now.Add(-staleAfter - time.Minute), "recent": now.Add(-time.Second)}
	for id, beat := range fake {
		if err := rdb.ZAdd(ctx, keys.Instances, redis.Z{Score: float64(beat.UnixMilli()), Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.RPush(ctx, keys.Notices(id), `{"type":"resync"}`).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Publishers already skip the stale instance.
	if err := NewBus(rdb, quiet()).Publish(ctx, Notice{Type: JobAvailable, JobID: "x"}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int64{"crashed": 1, "recent": 2} {
		if n, err := rdb.LLen(ctx, keys.Notices(id)).Result(); err != nil || n != want {
			t.Errorf("list of %s instance holds %d notices (%v), want %d", id, n, err, want)
		}
	}

	pruned, err := live.Prune(ctx)
	if err != nil || pruned != 1 {
		t.Fatalf("Prune = %d, %v; want 1, nil", pruned, err)
	}
	if err := rdb.ZScore(ctx, keys.Instances, "crashed").Err(); err != redis.Nil {
		t.Errorf("stale instance still registered (ZSCORE error %v)", err)
	}
	if n, _ := rdb.Exists(ctx, keys.Notices("crashed")).Result(); n != 0 {
		t.Error("stale instance's notice list not deleted")
	}
	ids, err := rdb.ZRange(ctx, keys.Instances, 0, -1).Result()
	slices.Sort(ids)
	want := []string{live.ID(), "recent"}
	slices.Sort(want)
	if err != nil || !slices.Equal(ids, want) {
		t.Errorf("registry after Prune = %v (%v), want %v", ids, err, want)
	}
	if n, _ := rdb.Exists(ctx, keys.Notices("recent")).Result(); n != 1 {
		t.Error("a live instance's notice list was deleted")
	}
	if pruned, err := live.Prune(ctx); err != nil || pruned != 0 {
		t.Errorf("second Prune = %d, %v; want 0, nil", pruned, err)
	}
}

func TestListenerResyncsAfterOutage(t *testing.T) {
	t.Parallel()
	server := taskstest.Redis(t)
	proxy := newProxy(t, server.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: proxy.addr()})
	t.Cleanup(func() { rdb.Close() })
	failed := &commandFailed{ch: make(chan struct{})}
	rdb.AddHook(failed)
	ctx := context.Background()
	bus, hub := NewBus(rdb, quiet()), NewHub()
	listen(t, bus, hub)
	eventually(t, "the instance to register", func() bool { return registered(rdb, bus.ID()) })
	c := hub.Join(boss)
	// The publisher reaches Redis directly: only the listener loses it.
	publisher := NewBus(server.Client(), quiet())

	proxy.cut()
	select {
	case <-failed.ch:
	case <-time.After(waitTimeout):
		t.Fatalf("no command of the listener failed within %v of the outage", waitTimeout)
	}
	// Published while the listener cannot read: it may arrive or not.
	if err := publisher.Publish(ctx, Notice{Type: JobAvailable, JobID: "during"}); err != nil {
		t.Fatal(err)
	}
	proxy.heal()
	got := until(t, c, "a resync after the outage", isType(Resync))
	for _, n := range got[:len(got)-1] {
		if n.JobID != "during" {
			t.Errorf("before the resync came %s", describe(got))
		}
	}
	eventually(t, "the instance to register again", func() bool { return registered(rdb, bus.ID()) })
	if err := NewBus(server.Client(), quiet()).Publish(ctx, Notice{Type: JobAvailable, JobID: "after"}); err != nil {
		t.Fatal(err)
	}
	until(t, c, "the notice after the outage", isJob("after"))
}

// commandFailed is a go-redis hook that closes ch when one of the
// listener's own commands fails (after go-redis's own retries) with anything
// but "nothing to pop": the listener noticed the outage, whether it was
// waiting on its list (BLMPOP, or BLPOP) or renewing its registration (ZADD)
// when it came. (Connection set-up commands fail on the way too, inside
// retries the listener may never see fail.)
type commandFailed struct {
	ch   chan struct{}
	once sync.Once
}

func (h *commandFailed) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandFailed) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		switch cmd.Name() {
		case "blmpop", "blpop", "zadd":
			if err != nil && err != redis.Nil {
				h.once.Do(func() { close(h.ch) })
			}
		}
		return err
	}
}

func (h *commandFailed) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// proxy forwards TCP connections to a Redis server until cut: then it drops
// every connection and refuses new ones until healed.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.serve()
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		p.cut()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		go func() { io.Copy(in, out); in.Close() }()
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func TestUserChangedMarksTheUsersClientsStale(t *testing.T) {
	t.Parallel()
	rdb := taskstest.Redis(t).Client()
	bus, hub := NewBus(rdb, quiet()), NewHub()
	listen(t, bus, hub)
	eventually(t, "the instance to register", func() bool { return registered(rdb, bus.ID()) })
	annTab, annOtherTab, bobTab, bossTab := hub.Join(ann), hub.Join(ann), hub.Join(bob), hub.Join(boss)

	// Told by another process: ann's tabs look again; no browser is told.
	NewBus(rdb, quiet()).TellUserChanged(context.Background(), "ann")
	if err := NewBus(rdb, quiet()).Publish(context.Background(), Notice{Type: JobFinished, JobID: "after"}); err != nil {
		t.Fatal(err)
	}
	if got := until(t, bossTab, "the notice after", isJob("after")); len(got) != 1 {
		t.Errorf("the supervisor got %s, want only the notice after the user change", describe(got))
	}
	for name, c := range map[string]*Client{"ann's tab": annTab, "ann's other tab": annOtherTab} {
		if !closed(c.Stale()) {
			t.Errorf("%s is not stale after ann changed", name)
		}
	}
	if closed(bobTab.Stale()) || closed(bossTab.Stale()) {
		t.Error("the tab of someone else is stale after ann changed")
	}

	// Notices may have been lost, a user change among them: every tab
	// looks again.
	hub.Deliver(Notice{Type: Resync})
	for name, c := range map[string]*Client{"ann": annTab, "bob": bobTab, "boss": bossTab} {
		if !closed(c.Stale()) {
			t.Errorf("%s's tab is not stale after a resync", name)
		}
	}
}

func TestHubUpdateChangesWhatAClientSees(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	c := hub.Join(ann)
	// The same viewer again: nothing to tell.
	hub.Update(c, Viewer{Name: "ann", Queues: []string{"mail", "scans"}})
	// scans is no longer granted: a resync first, then nothing of scans.
	hub.Update(c, Viewer{Name: "ann", Queues: []string{"mail"}})
	for _, n := range []Notice{
		{Type: JobAvailable, Queue: "scans", JobID: "1"},
		{Type: QueueChanged, Queue: "scans"},
		{Type: JobAvailable, Queue: "mail", JobID: "2"},
	} {
		hub.Deliver(n)
	}
	if got := describe(until(t, c, "the job of mail", isJob("2"))); got != "[resync(,,) job.available(mail,2,)]" {
		t.Errorf("after the update the client got %s, want a resync and mail's job only", got)
	}
	// A client that left stays gone.
	hub.Leave(c)
	hub.Update(c, boss)
	if n := hub.Clients(); n != 0 {
		t.Errorf("hub has %d clients after an update of one that left", n)
	}
}

// A resync reaches a client after every notice it was given before, those
// it sees alone included, even when its group's frame is due before its
// own: whoever reads a client up to a resync has all that came before.
func TestResyncComesAfterTheClientsOwnNotices(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	c := hub.Join(ann)
	// holdOwn puts ann's next frame of her own off for an hour, as one
	// that just went puts it off for urgentInterval: her group's frames,
	// the resync's among them, are due before it.
	holdOwn := func() {
		hub.mu.Lock()
		c.pace.last = time.Now().Add(time.Hour)
		hub.mu.Unlock()
	}
	for _, tc := range []struct {
		name   string
		resync func()
	}{
		{"delivered", func() { hub.Deliver(Notice{Type: Resync}) }},
		{"on an update", func() { hub.Update(c, Viewer{Name: "ann", Queues: []string{"mail"}}) }},
	} {
		holdOwn()
		hub.Deliver(Notice{Type: ReservationExpiring, Queue: "mail", JobID: tc.name, Operator: "ann"})
		tc.resync()
		want := "[reservation.expiring(mail," + tc.name + ",ann) resync(,,)]"
		if got := describe(until(t, c, "a resync", isType(Resync))); got != want {
			t.Errorf("with a resync %s ann got %s, want %s", tc.name, got, want)
		}
	}
}

// Several notices make one message; a queue's later counts replace its
// earlier ones still waiting; Unframe reads either kind of message.
func TestFrames(t *testing.T) {
	ready := func(n int64) *int64 { return &n }
	pending := []*Notice{
		{Type: QueueChanged, Queue: "a", Ready: ready(1)},
		{Type: JobAvailable, Queue: "a", JobID: "j1"},
		{Type: QueueChanged, Queue: "b", Ready: ready(7)},
		{Type: QueueChanged, Queue: "a", Ready: ready(2)},
	}
	raw := newFrame(pending).data
	got, err := Unframe(raw)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, n := range got {
		line := n.Type + " " + n.Queue + " " + n.JobID
		if n.Ready != nil {
			line += fmt.Sprint(" ", *n.Ready)
		}
		lines = append(lines, line)
	}
	want := []string{"job.available a j1", "queue.changed b  7", "queue.changed a  2"}
	if !slices.Equal(lines, want) {
		t.Fatalf("frame %s carries %q, want %q", raw, lines, want)
	}
	one := newFrame(pending[1:2]).data
	if string(one) != `{"type":"job.available","queue":"a","job_id":"j1"}` {
		t.Fatalf("a frame of one notice is %s, %v; want the notice itself", one, err)
	}
	if got, err := Unframe(one); err != nil || len(got) != 1 || got[0].JobID != "j1" {
		t.Fatalf("Unframe of one notice: %+v, %v", got, err)
	}
}

// A list that its cap cut ends with a resync, so that its instance's pages
// fetch what the lost notices said; a list within its cap gets none.
func TestATrimmedListEndsWithAResync(t *testing.T) {
	t.Parallel()
	rdb := taskstest.Redis(t).Client()
	ctx := context.Background()
	behind := NewBus(rdb, quiet())
	if _, err := behind.register(ctx); err != nil {
		t.Fatal(err)
	}
	publisher := NewBus(rdb, quiet())
	notice := func(i int) Notice { return Notice{Type: JobAvailable, Queue: "mail", JobID: strconv.Itoa(i)} }
	if err := publisher.Publish(ctx, notice(0)); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		t.Helper()
		l, err := rdb.LRange(ctx, keys.Notices(behind.ID()), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := list(); len(l) != 1 || strings.Contains(l[0], Resync) {
		t.Fatalf("a list within its cap holds %q, want the one notice", l)
	}
	ns := make([]Notice, maxBacklog)
	for i := range ns {
		ns[i] = notice(i + 1)
	}
	if err := publisher.Publish(ctx, ns...); err != nil {
		t.Fatal(err)
	}
	l := list()
	if len(l) != maxBacklog+1 || !strings.Contains(l[0], `"job_id":"1"`) || l[maxBacklog] != `{"type":"resync"}` {
		t.Fatalf("a cut list holds %d notices from %.40s to %.40s, want %d from job 1, then a resync", len(l), l[0], l[len(l)-1], maxBacklog+1)
	}
	// Cut again while it holds that resync: no other.
	for i := range 3 {
		if err := publisher.Publish(ctx, notice(maxBacklog+1+i)); err != nil {
			t.Fatal(err)
		}
	}
	resyncs := 0
	for _, n := range list() {
		if n == `{"type":"resync"}` {
			resyncs++
		}
	}
	if resyncs != 1 {
		t.Fatalf("a list cut four times while behind holds %d resyncs, want one", resyncs)
	}
}
