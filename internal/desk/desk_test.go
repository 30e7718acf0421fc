package desk_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/internal/desk"
	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"

	"github.com/redis/go-redis/v9"
)

// The desk's tests: one file per file of the desk (work, jobs, batches,
// queues, people, recent work), and at least one test per action, which
// checks who may do it and who may not, what it changes (read back from
// the engine or the people), the audit entry it writes and the hooks it
// fires. This file holds what they share.

// rdb is the package's Redis, shared by its tests: each test has queues
// and people of its own names.
var rdb redis.UniversalClient

func TestMain(m *testing.M) {
	srv, err := taskstest.NewServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "desk tests:", err)
		os.Exit(1)
	}
	rdb = srv.Client()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var seq atomic.Int64

// discard is a logger that keeps nothing.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixture is a desk over the shared Redis, on a clock of the test's own,
// with a queue and people of the test's own.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	desk  *desk.Desk
	tasks *tasks.Store
	users *users.Store
	queue string

	mu sync.Mutex
	// at is the Store's clock: the test moves it (tick).
	at time.Time
	// changed lists the queues whose settings the desk said changed
	// (desk.Config.SettingsChanged), in order.
	changed []string

	// The people who act, not stored (store adds one to the people):
	// other is an operator not granted the queue, peer another operator
	// of it, stranger a producer of another queue.
	super, producer, op, peer, other, stranger users.User
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	t.Parallel()
	n := seq.Add(1)
	f := &fixture{t: t, ctx: context.Background(), users: users.New(rdb), queue: fmt.Sprintf("d%d", n), at: time.Now()}
	f.tasks = tasks.New(rdb, tasks.WithClock(f.now))
	f.desk = desk.New(desk.Config{Redis: rdb, Tasks: f.tasks, Users: f.users, Bus: notify.NewBus(rdb, discard), Log: discard,
		SettingsChanged: func(q string) { f.mu.Lock(); f.changed = append(f.changed, q); f.mu.Unlock() }})
	if _, err := f.tasks.PutQueue(f.ctx, tasks.Queue{Name: f.queue}); err != nil {
		t.Fatal(err)
	}
	f.super = f.person(users.Supervisor)
	f.producer = f.person(users.Producer, f.queue)
	f.op = f.person(users.Operator, f.queue)
	f.peer = f.person(users.Operator, f.queue)
	f.other = f.person(users.Operator, "elsewhere")
	f.stranger = f.person(users.Producer, "elsewhere")
	return f
}

// now is the Store's clock.
func (f *fixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}

// tick moves the Store's clock on by d.
func (f *fixture) tick(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = f.at.Add(d)
}

// person is a user of the role, granted the queues, of a name of the
// test's own; not stored.
func (f *fixture) person(role users.Role, queues ...string) users.User {
	return users.User{Name: fmt.Sprintf("%s%d", role, seq.Add(1)), Role: role, Queues: queues}
}

// store adds u to the people, with the password "password-" and their
// name.
func (f *fixture) store(u users.User) users.User {
	f.t.Helper()
	if err := f.users.Put(f.ctx, u, "password-"+u.Name); err != nil {
		f.t.Fatal(err)
	}
	return u
}

// enqueue adds a job to the fixture's queue, as its producer.
func (f *fixture) enqueue(title string) *tasks.Job {
	f.t.Helper()
	return f.enqueueJob(tasks.NewJob{Title: title})
}

// enqueueJob adds the job to the fixture's queue, as its producer.
func (f *fixture) enqueueJob(j tasks.NewJob) *tasks.Job {
	f.t.Helper()
	out, err := f.desk.Enqueue(f.ctx, desk.Person(f.producer), f.queue, []tasks.NewJob{j})
	if err != nil {
		f.t.Fatal(err)
	}
	return out[0].Job
}

// claim claims the next job of the queue as u.
func (f *fixture) claim(u users.User) *tasks.Reservation {
	f.t.Helper()
	r, err := f.desk.Claim(f.ctx, desk.Person(u), f.queue, "")
	if err != nil || r == nil {
		f.t.Fatalf("claim as %s: %v, %v", u.Name, r, err)
	}
	return r
}

// held enqueues a job and claims it as the operator: the job must be the
// next in line.
func (f *fixture) held(title string) *tasks.Reservation {
	f.t.Helper()
	j := f.enqueue(title)
	r := f.claim(f.op)
	if r.Job.ID != j.ID {
		f.t.Fatalf("claimed %s, want the job just enqueued, %s", r.Job.ID, j.ID)
	}
	return r
}

// get reads the job from the engine.
func (f *fixture) get(id string) *tasks.Job {
	f.t.Helper()
	j, err := f.tasks.Get(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

// stats reads the fixture's queue's counts.
func (f *fixture) stats() tasks.Stats {
	f.t.Helper()
	s, err := f.tasks.Stats(f.ctx, f.queue)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// audits returns the audit entries about target, newest first.
func (f *fixture) audits(target string) []audit.Entry {
	f.t.Helper()
	entries, _, err := audit.New(rdb).List(f.ctx, "", audit.Keep, audit.Filter{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []audit.Entry
	for _, e := range entries {
		if e.Target == target {
			out = append(out, e)
		}
	}
	return out
}

// audited fails the test unless the newest audit entry about target is
// the action by the actor, with the detail.
func (f *fixture) audited(target, action, actor, detail string) {
	f.t.Helper()
	es := f.audits(target)
	if len(es) == 0 {
		f.t.Errorf("no audit entry about %s, want %s by %s", target, action, actor)
		return
	}
	if e := es[0]; e.Action != action || e.Actor != actor || e.Detail != detail {
		f.t.Errorf("audit entry about %s: %s by %s, %q; want %s by %s, %q", target, e.Action, e.Actor, e.Detail, action, actor, detail)
	}
}

// unaudited fails the test if any audit entry is about target.
func (f *fixture) unaudited(target string) {
	f.t.Helper()
	if es := f.audits(target); len(es) > 0 {
		f.t.Errorf("audit entries about %s: %+v, want none", target, es)
	}
}

// recent returns the person's recent work, newest first, each as "title
// action by actor → state".
func (f *fixture) recent(name string) []string {
	f.t.Helper()
	ws, err := notify.RecentWork(f.ctx, rdb, name)
	if err != nil {
		f.t.Fatal(err)
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = fmt.Sprintf("%s %s by %s → %s", w.Title, w.Action, w.Actor, w.State)
	}
	return out
}

// wantRecent fails the test unless the person's newest recent work is
// want ("title action by actor → state"), at the Store's time now.
func (f *fixture) wantRecent(name, want string) {
	f.t.Helper()
	ws, err := notify.RecentWork(f.ctx, rdb, name)
	if err != nil {
		f.t.Fatal(err)
	}
	if got := f.recent(name); len(got) == 0 || got[0] != want || ws[0].At.UnixMilli() != f.now().UnixMilli() {
		f.t.Errorf("%s's recent work, newest first: %q; want %q first, at %v", name, got, want, f.now())
	}
}

// lastAction returns when the person last acted, as the Team page reads
// it; zero if never.
func (f *fixture) lastAction(name string) time.Time {
	f.t.Helper()
	ms, err := rdb.HGet(f.ctx, keys.LastAction, name).Int64()
	if errors.Is(err, redis.Nil) {
		return time.Time{}
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return time.UnixMilli(ms)
}

// actedNow fails the test unless the person's last action is the Store's
// time now.
func (f *fixture) actedNow(name string) {
	f.t.Helper()
	if at, now := f.lastAction(name), f.now(); at.UnixMilli() != now.UnixMilli() {
		f.t.Errorf("%s's last action at %v, want now, %v", name, at, now)
	}
}

// told returns the queues the desk told its caches had new settings.
func (f *fixture) told() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.changed...)
}

// listen starts another instance listening on the bus, and returns the
// notices of settings it hears of the fixture's queue and of those whose
// names begin with it and a dash. Call it before any change of settings:
// the desk's bus reads which instances are live at its first notice.
func (f *fixture) listen() <-chan notify.Notice {
	f.t.Helper()
	bus := notify.NewBus(rdb, discard)
	heard := make(chan notify.Notice, 100)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		bus.Listen(ctx, func(n notify.Notice) {
			if n.Type == notify.QueueSettings && (n.Queue == f.queue || strings.HasPrefix(n.Queue, f.queue+"-")) {
				heard <- n
			}
		})
	}()
	f.t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for rdb.ZScore(f.ctx, keys.Instances, bus.ID()).Err() != nil {
		if time.Now().After(deadline) {
			f.t.Fatal("the listener did not register within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return heard
}

// heard returns the next notice of the listener, failing the test if none
// comes within 5 s.
func (f *fixture) heard(notices <-chan notify.Notice) notify.Notice {
	f.t.Helper()
	select {
	case n := <-notices:
		return n
	case <-time.After(5 * time.Second):
		f.t.Fatal("no notice of settings within 5 s")
		return notify.Notice{}
	}
}

// wantSettingsNotice fails the test unless the next notice the listener
// heard is of the queue's settings, paused or not.
func (f *fixture) wantSettingsNotice(notices <-chan notify.Notice, queue string, paused bool) {
	f.t.Helper()
	if n := f.heard(notices); n.Queue != queue || n.Paused == nil || *n.Paused != paused {
		f.t.Errorf("notice %+v, want the settings of %s, paused %v", n, queue, paused)
	}
}

// refused fails the test unless err is the refusal want.
func refused(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// The actor's name is who the audit log and the jobs' histories say
// acted: a person's name, or "command line".
func TestActorNames(t *testing.T) {
	u := users.User{Name: "ann", Role: users.Operator}
	if got := desk.Person(u).Name(); got != "ann" {
		t.Errorf("a person's name: %q, want ann", got)
	}
	if got := desk.CommandLine.Name(); got != audit.CommandLine {
		t.Errorf("the command line's name: %q, want %q", got, audit.CommandLine)
	}
}

// A refusal of the desk's matches its kind, and no other, and says why in
// words for the person refused.
func TestRefusalsMatchTheirKindAndSayWhy(t *testing.T) {
	f := newFixture(t)
	_, err := f.desk.Claim(f.ctx, desk.Person(f.other), f.queue, "")
	if !errors.Is(err, desk.ErrForbidden) || errors.Is(err, desk.ErrInvalid) || err.Error() != "queue "+f.queue+" is not granted to "+f.other.Name {
		t.Errorf("a claim of a queue not granted: %v", err)
	}
	_, err = f.desk.ClaimAny(f.ctx, desk.Person(f.op), []string{}, "")
	if !errors.Is(err, desk.ErrInvalid) || errors.Is(err, desk.ErrForbidden) || err.Error() != "queues must name at least one queue, or be left out" {
		t.Errorf("a claim of no queue: %v", err)
	}
}

// What the desk writes after a change (its audit entry, what it keeps of
// people) and cannot write is logged, and the change stands: each audit
// entry as an error, the store's passing troubles with what is kept of
// people once per burst.
func TestWhatIsNotWrittenAfterAChangeIsLogged(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), nil))
	gone := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { gone.Close() })
	d := desk.New(desk.Config{Redis: gone, Tasks: tasks.New(rdb), Users: f.users, Bus: notify.NewBus(rdb, discard), Log: log})
	for _, paused := range []bool{true, false} {
		change := d.PauseQueue
		if !paused {
			change = d.ResumeQueue
		}
		if q, err := change(f.ctx, desk.Person(f.super), f.queue); err != nil || q.Paused != paused {
			t.Fatalf("paused %v without the audit log: %+v, %v", paused, q, err)
		}
		if q, err := f.tasks.Queue(f.ctx, f.queue); err != nil || q.Paused != paused {
			t.Fatalf("the queue after it was paused %v: %+v, %v", paused, q, err)
		}
	}
	for _, title := range []string{"one", "two"} {
		j := f.enqueue(title)
		if _, _, err := d.Cancel(f.ctx, desk.Person(f.producer), j.ID, false); err != nil {
			t.Fatalf("cancel without the audit log: %v", err)
		}
		if got := f.get(j.ID); got.State != tasks.StateCanceled {
			t.Fatalf("the job canceled without the audit log: %s", got.State)
		}
		f.unaudited(j.ID)
	}
	f.unaudited(f.queue)
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logged.String(), `level=ERROR msg="action not recorded in the audit log"`); n != 4 {
		t.Errorf("%d errors logged for four actions not audited, want 4:\n%s", n, logged.String())
	}
	if n := strings.Count(logged.String(), `level=WARN msg="recent work and last action not recorded"`); n != 1 {
		t.Errorf("%d warnings logged for two changes not kept of people, want 1, for the burst:\n%s", n, logged.String())
	}
}

// writerFunc is a function that is an io.Writer.
type writerFunc func(p []byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }
