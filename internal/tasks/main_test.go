package tasks

import (
	"context"
	"errors"
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
	return m.Run()
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
	e.queue = e.newQueue(q)
	return e
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
	out, err := e.store.Enqueue(e.ctx, queue, []NewJob{j})
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

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}
