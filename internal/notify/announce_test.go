package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// gate is a go-redis hook that holds the first command (or pipeline) sent
// through its client until released: it keeps an announcer busy with one
// publish while the test queues more.
type gate struct {
	held, open chan struct{}
	once       sync.Once
}

func newGate() *gate { return &gate{held: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) pass() {
	first := false
	g.once.Do(func() { first = true; close(g.held) })
	if first {
		<-g.open
	}
}

// waitHeld waits until a command is held.
func (g *gate) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-g.held:
	case <-time.After(waitTimeout):
		t.Fatalf("no Redis call within %v", waitTimeout)
	}
}

func (g *gate) release() { close(g.open) }

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.pass()
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		g.pass()
		return next(ctx, cmds)
	}
}

// gatedAnnouncer returns an announcer whose Redis calls go through a gate,
// with the given queue size and wait for room, closed when the test ends.
func gatedAnnouncer(t *testing.T, server *taskstest.Server, log *slog.Logger, size int, wait time.Duration) (*Announcer, *gate) {
	t.Helper()
	g := newGate()
	rdb := server.Client()
	rdb.AddHook(g)
	a := newAnnouncer(NewBus(rdb, quiet()), log, size, wait)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a, g
}

// watcher is an instance listening with a supervisor's page open on it.
func watcher(t *testing.T, rdb redis.UniversalClient) *Client {
	t.Helper()
	bus, hub := NewBus(rdb, quiet()), NewHub()
	listen(t, bus, hub)
	eventually(t, "the instance to register", func() bool { return registered(rdb, bus.ID()) })
	return hub.Join(boss)
}

// lines shows notices as "type queue job operator", with the counts of a
// queue.changed.
func lines(ns []Notice) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		s := strings.TrimSpace(fmt.Sprintf("%s %s %s %s", n.Type, n.Queue, n.JobID, n.Operator))
		if n.Type == QueueChanged && n.Ready != nil && n.Reserved != nil {
			s += fmt.Sprintf(" ready=%d reserved=%d", *n.Ready, *n.Reserved)
		}
		out[i] = strings.Join(strings.Fields(s), " ")
	}
	return out
}

func wantLines(t *testing.T, got []Notice, want ...string) {
	t.Helper()
	if g := lines(got); !slices.Equal(g, want) {
		t.Errorf("got notices\n  %s\nwant\n  %s", strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

// The announcer publishes what the store's scripts did, as it is told:
// the notices of each transition in order, then each queue's latest counts
// once.
func TestAnnouncerCoalescesCounts(t *testing.T) {
	t.Parallel()
	server := taskstest.Redis(t)
	rdb := server.Client()
	ctx := context.Background()
	c := watcher(t, rdb)
	a, g := gatedAnnouncer(t, server, quiet(), queueSize, fullWait)
	store := tasks.New(rdb)
	store.Observe(a.Observe)
	for _, q := range []string{"mail", "scans"} {
		if _, err := store.PutQueue(ctx, tasks.Queue{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue := func(q string, n int) []*tasks.Job {
		t.Helper()
		batch := make([]tasks.NewJob, n)
		for i := range batch {
			batch[i].Title = fmt.Sprintf("%s %d", q, i)
		}
		out, err := store.Enqueue(ctx, q, "pat", batch)
		if err != nil {
			t.Fatal(err)
		}
		jobs := make([]*tasks.Job, n)
		for i, e := range out {
			jobs[i] = e.Job
		}
		return jobs
	}

	// The first announcement holds the publisher in its first Redis call,
	// while the changes of both queues pile up behind it.
	a.Publish(ctx, Notice{Type: JobAvailable, JobID: "first"})
	g.waitHeld(t)
	mail := enqueue("mail", 3)
	scans := enqueue("scans", 2)
	r, err := store.Claim(ctx, "mail", "ann")
	if err != nil || r == nil || r.Job.ID != mail[0].ID {
		t.Fatalf("Claim = %v, %v; want %s", r, err, mail[0].ID)
	}
	a.Publish(ctx, Notice{Type: JobAvailable, JobID: "last"})
	g.release()

	got := until(t, c, "the last notice", isJob("last"))
	// Once more to see what followed it: the counts, once per queue.
	a.Publish(ctx, Notice{Type: Resync})
	got = append(got, until(t, c, "the resync", isType(Resync))...)
	wantLines(t, got,
		"job.available first",
		"job.available mail "+mail[0].ID,
		"job.available mail "+mail[1].ID,
		"job.available mail "+mail[2].ID,
		"job.available scans "+scans[0].ID,
		"job.available scans "+scans[1].ID,
		"reservation.created mail "+mail[0].ID+" ann",
		"job.available last",
		"queue.changed scans ready=2 reserved=0",
		"queue.changed mail ready=2 reserved=1",
		"resync",
	)
}

func TestAnnouncerKeepsOrder(t *testing.T) {
	t.Parallel()
	server := taskstest.Redis(t)
	c := watcher(t, server.Client())
	a, g := gatedAnnouncer(t, server, quiet(), queueSize, fullWait)
	g.release()
	// Fewer than a client's buffer holds, in as many publishes as the
	// publisher happens to make.
	const n = 60
	var want []string
	for i := range n {
		id := strconv.Itoa(i)
		a.Publish(context.Background(), Notice{Type: JobAvailable, JobID: id})
		want = append(want, "job.available "+id)
	}
	wantLines(t, until(t, c, "the last notice", isJob(strconv.Itoa(n-1))), want...)
}

// fakeInstance registers an instance that does not listen, so that what
// is published to it stays in its list.
func fakeInstance(t *testing.T, rdb redis.UniversalClient, id string) {
	t.Helper()
	err := rdb.ZAdd(context.Background(), keys.Instances, redis.Z{Score: float64(time.Now().UnixMilli()), Member: id}).Err()
	if err != nil {
		t.Fatal(err)
	}
}

// listed returns the job ids of the notices in an instance's list.
func listed(t *testing.T, rdb redis.UniversalClient, id string) []string {
	t.Helper()
	raw, err := rdb.LRange(context.Background(), keys.Notices(id), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(raw))
	for i, r := range raw {
		var n Notice
		if err := json.Unmarshal([]byte(r), &n); err != nil {
			t.Fatal(err)
		}
		ids[i] = n.JobID
	}
	return ids
}

func TestAnnouncerCloseFlushes(t *testing.T) {
	t.Parallel()
	server := taskstest.Redis(t)
	rdb := server.Client()
	fakeInstance(t, rdb, "idle")
	a, g := gatedAnnouncer(t, server, quiet(), queueSize, fullWait)
	ctx := context.Background()

	// A backlog: one publish held, fifty notices queued behind it.
	var want []string
	for i := range 51 {
		id := strconv.Itoa(i)
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: id})
		want = append(want, id)
		if i == 0 {
			g.waitHeld(t)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Close(ctx) }()
	g.release()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Close did not return within %v", waitTimeout)
	}
	if got := listed(t, rdb, "idle"); !slices.Equal(got, want) {
		t.Fatalf("after Close the list holds %v, want %v", got, want)
	}

	// After Close, a notice goes out before Publish returns, and Flush
	// and Close have nothing to wait for.
	a.Publish(ctx, Notice{Type: JobAvailable, JobID: "late"})
	if got := listed(t, rdb, "idle"); !slices.Equal(got, append(want, "late")) {
		t.Fatalf("a Publish after Close left the list as %v, want %v and late", got, want)
	}
	if err := a.Flush(ctx); err != nil {
		t.Errorf("Flush after Close: %v", err)
	}
	if err := a.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// syncBuffer is a log destination that tests read while the announcer
// writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestAnnouncerFullQueue(t *testing.T) {
	t.Parallel()
	t.Run("waits for room", func(t *testing.T) {
		t.Parallel()
		server := taskstest.Redis(t)
		c := watcher(t, server.Client())
		// Room for one announcement, and a long wait for more.
		a, g := gatedAnnouncer(t, server, quiet(), 1, waitTimeout)
		ctx := context.Background()
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: "held"})
		g.waitHeld(t)
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: "queued"})
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.Publish(ctx, Notice{Type: JobAvailable, JobID: "waiting"})
		}()
		g.release()
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Fatal("Publish on a full queue did not return once there was room")
		}
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: "after"})
		wantLines(t, until(t, c, "the last notice", isJob("after")),
			"job.available held", "job.available queued", "job.available waiting", "job.available after")
	})
	t.Run("drops for a resync", func(t *testing.T) {
		t.Parallel()
		server := taskstest.Redis(t)
		c := watcher(t, server.Client())
		var log syncBuffer
		const wait = 50 * time.Millisecond
		a, g := gatedAnnouncer(t, server, slog.New(slog.NewTextHandler(&log, nil)), 1, wait)
		ctx := context.Background()
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: "held"})
		g.waitHeld(t)
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: "queued"})
		start := time.Now()
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: "dropped"})
		if waited := time.Since(start); waited < wait {
			t.Errorf("Publish on a full queue returned after %v, want a wait of %v", waited, wait)
		}
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: "dropped too"})
		if got := strings.Count(log.String(), "notices dropped"); got != 1 {
			t.Errorf("logged %d warnings of dropped notices, want 1:\n%s", got, log.String())
		}
		g.release()
		// The resync follows what was queued: pages and waiters look again.
		wantLines(t, until(t, c, "a resync", isType(Resync)), "job.available held", "job.available queued", "resync")
		// Once it went out, notices flow as before, without another.
		a.Publish(ctx, Notice{Type: JobAvailable, JobID: "after"})
		wantLines(t, until(t, c, "the notice after", isJob("after")), "job.available after")
	})
}

func TestAnnouncerFlushWaitsForEarlierNotices(t *testing.T) {
	t.Parallel()
	server := taskstest.Redis(t)
	rdb := server.Client()
	fakeInstance(t, rdb, "idle")
	a, g := gatedAnnouncer(t, server, quiet(), queueSize, fullWait)
	ctx := context.Background()
	a.Publish(ctx, Notice{Type: JobAvailable, JobID: "1"})
	g.waitHeld(t)
	a.Publish(ctx, Notice{Type: JobAvailable, JobID: "2"})
	// While the publisher is held, Flush waits; its context may end the wait.
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := a.Flush(short); err == nil {
		t.Error("Flush with an ended context returned nil while notices were pending")
	}
	flushed := make(chan error, 1)
	go func() { flushed <- a.Flush(ctx) }()
	g.release()
	select {
	case err := <-flushed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Flush did not return within %v", waitTimeout)
	}
	if got := listed(t, rdb, "idle"); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("after Flush the list holds %v, want [1 2]", got)
	}
}

// The notices of a reservation say its deadline: the new one when it
// begins or is extended, the one it had when it ends.
func TestReservationNoticesSayTheDeadline(t *testing.T) {
	until := time.Date(2026, 11, 23, 9, 30, 0, 0, time.UTC)
	for _, tr := range []tasks.Transition{
		{Action: tasks.ActionClaimed, From: tasks.StateReady, To: tasks.StateReserved, Actor: "ann"},
		{Action: tasks.ActionExtended, From: tasks.StateReserved, To: tasks.StateReserved, Actor: "ann", Holder: "ann"},
		{Action: tasks.ActionCompleted, From: tasks.StateReserved, To: tasks.StateCompleted, Actor: "ann", Holder: "ann"},
		{Action: tasks.ActionReleased, From: tasks.StateReserved, To: tasks.StateReady, Actor: "ann", Holder: "ann"},
		{Action: tasks.ActionExpired, From: tasks.StateReserved, To: tasks.StateReady, Actor: tasks.System, Holder: "ann"},
		{Action: tasks.ActionForceReleased, From: tasks.StateReserved, To: tasks.StateReady, Actor: "sam", Holder: "ann"},
	} {
		tr.Queue, tr.JobID, tr.Deadline = "mail", "1", &until
		var found bool
		for _, n := range noticesOf(tr) {
			if strings.HasPrefix(n.Type, "reservation.") {
				found = true
				if n.Operator != "ann" || n.Deadline == nil || !n.Deadline.Equal(until) {
					t.Errorf("%s: %s for %q until %v, want ann's until %v", tr.Action, n.Type, n.Operator, n.Deadline, until)
				}
			}
		}
		if !found {
			t.Errorf("%s: no reservation notice", tr.Action)
		}
	}
}

// The notice of a reservation that a supervisor ended says their reason,
// for its holder's page; one ended without a reason says none.
func TestTakeBackNoticeSaysWhy(t *testing.T) {
	for _, c := range []struct {
		tr   tasks.Transition
		want string
	}{
		{tasks.Transition{Action: tasks.ActionForceReleased, From: tasks.StateReserved, To: tasks.StateReady, Actor: "sam", Holder: "ann", Reason: "customer called"}, "customer called"},
		{tasks.Transition{Action: tasks.ActionCanceled, From: tasks.StateReserved, To: tasks.StateCanceled, Actor: "sam", Holder: "ann", Reason: "sent twice"}, "sent twice"},
		{tasks.Transition{Action: tasks.ActionForceReleased, From: tasks.StateReserved, To: tasks.StateReady, Actor: "sam", Holder: "ann"}, ""},
	} {
		c.tr.Queue, c.tr.JobID = "mail", "1"
		var said []string
		for _, n := range noticesOf(c.tr) {
			if n.Type == ReservationReleased {
				said = append(said, n.Reason)
			}
		}
		if len(said) != 1 || said[0] != c.want {
			t.Errorf("%s: the holder's notices say %q, want %q", c.tr.Action, said, c.want)
		}
	}
}
