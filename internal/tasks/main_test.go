package tasks

import (
	"context"
	"errors"
	cmdline "flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// The package's tests share one standalone Redis and one 3-master Redis
// Cluster; each test works in queues of its own, so they run in parallel.
var backends []backend

type backend struct {
	name string
	rdb  redis.UniversalClient
}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	server, err := taskstest.NewServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tasks tests:", err)
		return 1
	}
	defer server.Close()
	cluster, err := taskstest.NewCluster(3)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tasks tests:", err)
		return 1
	}
	defer cluster.Close()
	standalone, clustered := server.Client(), cluster.Client()
	defer standalone.Close()
	defer clustered.Close()
	backends = []backend{{"standalone", standalone}, {"cluster", clustered}}
	// Every script runs checked: a call of one that touches a key it was
	// not handed fails (checkedLibrary). Every test runs on the standalone
	// server, whose client sees which scripts ran.
	library = checkedLibrary(library)
	var ran scriptsRan
	standalone.AddHook(taskstest.Hook(func(c redis.Cmder) { ran.note(c) }))
	code := m.Run()
	if code == 0 && cmdline.Lookup("test.run").Value.String() == "" {
		if missing := ran.missing(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "tasks tests: no test ran the scripts %v, so nothing checked their keys\n", missing)
			return 1
		}
	}
	return code
}

// clock is a test clock that moves only when told to.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock {
	return &clock{now: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is what one test gets on one backend: a store on a test clock and a
// fresh queue.
type env struct {
	t     testing.TB
	ctx   context.Context
	rdb   redis.UniversalClient
	store *Store
	clock *clock
	queue string

	mu   sync.Mutex
	seen []Transition // what the store did, as its observer was told
}

var queueSeq atomic.Int64

// onEachBackend runs fn as a parallel subtest against the standalone Redis
// and against the cluster.
func onEachBackend(t *testing.T, fn func(e *env)) {
	t.Helper()
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(newEnv(t, b.rdb, Queue{}))
		})
	}
}

// newEnv makes a store with a test clock and a new queue with settings q
// (its name is made unique).
func newEnv(t *testing.T, rdb redis.UniversalClient, q Queue) *env {
	t.Helper()
	c := newClock()
	e := &env{t: t, ctx: context.Background(), rdb: rdb, store: New(rdb, WithClock(c.Now)), clock: c}
	e.store.Observe(func(_ context.Context, fx Effects) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.seen = append(e.seen, fx.Transitions...)
	})
	e.queue = e.newQueue(q)
	return e
}

// changes returns the transitions the env's store made since the last
// call, oldest first, and forgets them.
func (e *env) changes() []Transition {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := e.seen
	e.seen = nil
	return ts
}

// did returns the transitions that fn made that match (concurrent calls
// of the same store may add theirs). It leaves them to changes.
func (e *env) did(match func(Transition) bool, fn func()) []Transition {
	e.mu.Lock()
	before := len(e.seen)
	e.mu.Unlock()
	fn()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Transition
	for _, t := range e.seen[before:] {
		if match(t) {
			out = append(out, t)
		}
	}
	return out
}

// during returns the transitions of action a that fn made.
func (e *env) during(a Action, fn func()) []Transition {
	return e.did(func(t Transition) bool { return t.Action == a }, fn)
}

// jobIDs lists the jobs of the transitions.
func jobIDs(ts []Transition) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.JobID
	}
	return ids
}

// cancelBatch cancels the batch as "sam" and returns the jobs it canceled.
func (e *env) cancelBatch(id string) (b *Batch, canceled []string, err error) {
	ts := e.during(ActionCanceled, func() { b, err = e.store.CancelBatch(e.ctx, id, "sam") })
	for _, t := range ts {
		if t.Actor == "sam" {
			canceled = append(canceled, t.JobID)
		}
	}
	return b, canceled, err
}

// reclaim takes back at most limit expired reservations and returns their
// transitions (canceled, in a canceled batch).
func (e *env) reclaim(limit int) (moved []Transition, more bool, err error) {
	moved = e.did(func(t Transition) bool { return t.From == StateReserved && t.Actor == System },
		func() { _, more, err = e.store.ReclaimExpired(e.ctx, e.queue, limit) })
	return moved, more, err
}

// promote promotes at most limit due jobs and returns their ids (jobs of a
// canceled batch are canceled instead).
func (e *env) promote(limit int) (ids []string, more bool, err error) {
	ts := e.did(func(t Transition) bool {
		return t.From == StateScheduled && t.Actor == System && t.Action != ActionFellBack
	},
		func() { _, more, err = e.store.PromoteDue(e.ctx, e.queue, limit) })
	return jobIDs(ts), more, err
}

// newQueue creates a queue with a unique name and settings q.
func (e *env) newQueue(q Queue) string {
	e.t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(e.t.Name()))
	if len(name) > 50 {
		name = name[len(name)-50:]
	}
	q.Name = fmt.Sprintf("t%d-%s", queueSeq.Add(1), strings.Trim(name, "-"))
	if _, err := e.store.PutQueue(e.ctx, q); err != nil {
		e.t.Fatalf("PutQueue(%q): %v", q.Name, err)
	}
	return q.Name
}

// add enqueues one job with the given title and priority into the env's queue.
func (e *env) add(title string, priority int) *Job {
	e.t.Helper()
	return e.addJob(e.queue, NewJob{Title: title, Priority: &priority})
}

func (e *env) addJob(queue string, j NewJob) *Job {
	e.t.Helper()
	out, err := e.store.Enqueue(e.ctx, queue, "pat", []NewJob{j})
	if err != nil {
		e.t.Fatalf("Enqueue(%q): %v", j.Title, err)
	}
	return out[0].Job
}

// claim claims from the env's queue and fails the test if nothing is ready.
func (e *env) claim(operator string) *Reservation {
	e.t.Helper()
	r, err := e.store.Claim(e.ctx, e.queue, operator)
	if err != nil {
		e.t.Fatalf("Claim(%s): %v", operator, err)
	}
	if r == nil {
		e.t.Fatalf("Claim(%s): nothing ready", operator)
	}
	return r
}

// claimNone checks that the operator gets nothing from the env's queue.
func (e *env) claimNone(operator string) {
	e.t.Helper()
	r, err := e.store.Claim(e.ctx, e.queue, operator)
	if err != nil {
		e.t.Fatalf("Claim(%s): %v", operator, err)
	}
	if r != nil {
		e.t.Fatalf("Claim(%s) = %q, want nothing ready", operator, r.Job.Title)
	}
}

// get returns the job, failing the test on error.
func (e *env) get(id string) *Job {
	e.t.Helper()
	j, err := e.store.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return j
}

// stats returns the env queue's counts, failing the test on error.
func (e *env) stats() Stats {
	e.t.Helper()
	s, err := e.store.Stats(e.ctx, e.queue)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	return s
}

func wantErr(t testing.TB, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}
