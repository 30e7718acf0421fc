package cron

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// Each test gets Redis servers of its own: the cron locks and the instance
// registry are global keys, so tests sharing a server would skip each
// other's runs and receive each other's notices.

const waitTimeout = 10 * time.Second

// behind is how far the clock of env.past lags the Redis clock: a
// reservation it makes (lease 300s by default) expired long ago by Redis
// TIME, which is what the runner judges by.
const behind = time.Hour

type backend struct {
	name  string
	start func(t *testing.T) redis.UniversalClient
}

var backends = []backend{
	{"standalone", func(t *testing.T) redis.UniversalClient { return taskstest.Redis(t).Client() }},
	{"cluster", func(t *testing.T) redis.UniversalClient { return taskstest.RedisCluster(t, 3).Client() }},
}

// env is one test's Redis with stores over it.
type env struct {
	t   *testing.T
	ctx context.Context
	rdb redis.UniversalClient
	// store judges time by Redis TIME, as the runner does.
	store *tasks.Store
	// past judges time by a clock that is behind behind.
	past *tasks.Store
	// announcers are those of the test's runners.
	announcers []*notify.Announcer
}

// onEachBackend runs fn as a parallel subtest on a fresh standalone Redis
// and on a fresh 3-master cluster.
func onEachBackend(t *testing.T, fn func(e *env)) {
	t.Helper()
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(newEnv(t, b.start(t)))
		})
	}
}

func newEnv(t *testing.T, rdb redis.UniversalClient) *env {
	return &env{t: t, ctx: context.Background(), rdb: rdb, store: tasks.New(rdb), past: behindBy(rdb, behind)}
}

// behindBy returns a store whose clock is d behind the real one.
func behindBy(rdb redis.UniversalClient, d time.Duration) *tasks.Store {
	return tasks.New(rdb, tasks.WithClock(func() time.Time { return time.Now().Add(-d) }))
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runner returns a runner of its own instance (its own bus, store and
// announcer), as each web instance has.
func (e *env) runner(interval time.Duration) *Runner {
	bus := notify.NewBus(e.rdb, quiet())
	announce := notify.NewAnnouncer(bus, quiet())
	store := tasks.New(e.rdb)
	store.Observe(announce.Observe)
	e.t.Cleanup(func() {
		if err := announce.Close(context.Background()); err != nil {
			e.t.Error(err)
		}
	})
	e.announcers = append(e.announcers, announce)
	return New(Config{Redis: e.rdb, Tasks: store, Bus: bus, Log: quiet(), Interval: interval})
}

// run runs every task of r once, after removing the locks of earlier runs
// in the test.
func (e *env) run(r *Runner) {
	e.t.Helper()
	for _, t := range r.tasks {
		if err := e.rdb.Del(e.ctx, keys.CronLock(t.name)).Err(); err != nil {
			e.t.Fatal(err)
		}
	}
	r.RunOnce(e.ctx)
}

func (e *env) queue(q tasks.Queue) string {
	e.t.Helper()
	if _, err := e.store.PutQueue(e.ctx, q); err != nil {
		e.t.Fatalf("PutQueue(%s): %v", q.Name, err)
	}
	return q.Name
}

// enqueue adds n jobs like j through store, in batches, and returns their ids.
func (e *env) enqueue(store *tasks.Store, queue string, n int, j tasks.NewJob) []string {
	e.t.Helper()
	var ids []string
	for len(ids) < n {
		batch := make([]tasks.NewJob, min(n-len(ids), tasks.MaxBatch))
		for i := range batch {
			batch[i] = j
			batch[i].Title = fmt.Sprintf("%s %d", j.Title, len(ids)+i)
		}
		out, err := store.Enqueue(e.ctx, queue, "pat", batch)
		if err != nil {
			e.t.Fatalf("Enqueue into %s: %v", queue, err)
		}
		for _, o := range out {
			ids = append(ids, o.Job.ID)
		}
	}
	return ids
}

// claim makes n claims on the queue through store and returns the
// reservations.
func (e *env) claim(store *tasks.Store, queue, operator string, n int) []*tasks.Reservation {
	e.t.Helper()
	rs := make([]*tasks.Reservation, n)
	for i := range rs {
		r, err := store.Claim(e.ctx, queue, operator)
		if err != nil || r == nil {
			e.t.Fatalf("claim %d of %d in %s: %v, %v", i+1, n, queue, r, err)
		}
		rs[i] = r
	}
	return rs
}

// expired enqueues n jobs and has operator claim them with the past clock:
// their reservations have expired by the Redis clock.
func (e *env) expired(queue, operator string, n int) []string {
	e.t.Helper()
	ids := e.enqueue(e.past, queue, n, tasks.NewJob{Title: "expired"})
	e.claim(e.past, queue, operator, n)
	return ids
}

func (e *env) stats(queue string) tasks.Stats {
	e.t.Helper()
	s, err := e.store.Stats(e.ctx, queue)
	if err != nil {
		e.t.Fatalf("Stats(%s): %v", queue, err)
	}
	return s
}

func (e *env) get(id string) *tasks.Job {
	e.t.Helper()
	j, err := e.store.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return j
}

// wantCounts checks a queue's counts of ready, reserved, scheduled and dead
// jobs.
func (e *env) wantCounts(queue string, ready, reserved, scheduled, dead int64) {
	e.t.Helper()
	s := e.stats(queue)
	if s.Ready != ready || s.Reserved != reserved || s.Scheduled != scheduled || s.Dead != dead {
		e.t.Fatalf("%s: ready %d reserved %d scheduled %d dead %d; want %d %d %d %d",
			queue, s.Ready, s.Reserved, s.Scheduled, s.Dead, ready, reserved, scheduled, dead)
	}
}

func value(c prometheus.Counter) int {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return int(m.GetCounter().GetValue())
}

// moved is how many jobs the runner's task has moved so far.
func moved(r *Runner, task string) int { return value(r.moved.WithLabelValues(task)) }

// runs is how many runs of the task ended with the outcome.
func runs(r *Runner, task, outcome string) int { return value(r.runs.WithLabelValues(task, outcome)) }

// wantAllOK checks that each task of r ran ok the given number of times and
// never failed.
func wantAllOK(t *testing.T, r *Runner, times int) {
	t.Helper()
	for _, task := range r.tasks {
		if ok, bad := runs(r, task.name, "ok"), runs(r, task.name, "error"); ok != times || bad != 0 {
			t.Errorf("task %s: %d ok runs and %d failed, want %d and 0", task.name, ok, bad, times)
		}
	}
}

// watch starts an instance listening for notices, and returns its hub once
// the instance is registered, so that publishers reach it.
func (e *env) watch() *notify.Hub {
	e.t.Helper()
	bus, hub := notify.NewBus(e.rdb, quiet()), notify.NewHub()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		bus.Listen(ctx, hub.Deliver)
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(waitTimeout)
	for e.rdb.ZScore(e.ctx, keys.Instances, bus.ID()).Err() != nil {
		if time.Now().After(deadline) {
			e.t.Fatalf("notice listener not registered within %v", waitTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return hub
}

// received returns the notices each client got so far: once the runners'
// announcers have published what they were given, it publishes a resync,
// which every viewer sees, and reads up to it.
func (e *env) received(clients ...*notify.Client) [][]notify.Notice {
	e.t.Helper()
	for _, a := range e.announcers {
		ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
		err := a.Flush(ctx)
		cancel()
		if err != nil {
			e.t.Fatalf("announcer not flushed within %v: %v", waitTimeout, err)
		}
	}
	if err := notify.NewBus(e.rdb, quiet()).Publish(e.ctx, notify.Notice{Type: notify.Resync}); err != nil {
		e.t.Fatal(err)
	}
	out := make([][]notify.Notice, len(clients))
	for i, c := range clients {
		timeout := time.After(waitTimeout)
	read:
		for {
			select {
			case <-c.Ready():
				for _, f := range c.Take() {
					for _, n := range f.Notices() {
						if n.Type == notify.Resync {
							break read
						}
						out[i] = append(out[i], *n)
					}
				}
			case <-c.Dropped():
				e.t.Fatalf("client %d dropped; got %v", i, summary(out[i]))
			case <-timeout:
				e.t.Fatalf("client %d: no resync within %v; got %v", i, waitTimeout, summary(out[i]))
			}
		}
	}
	return out
}

// summary sorts notices as "type queue job operator" lines (with counts
// for queue.changed, state for job.finished), to compare regardless of order.
func summary(ns []notify.Notice) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		s := strings.TrimSpace(fmt.Sprintf("%s %s %s %s", n.Type, n.Queue, n.JobID, n.Operator))
		switch {
		case n.Type == notify.QueueChanged && n.Ready != nil && n.Reserved != nil && n.Scheduled != nil:
			s += fmt.Sprintf(" ready=%d reserved=%d scheduled=%d", *n.Ready, *n.Reserved, *n.Scheduled)
		case n.State != "":
			s += " " + n.State
		}
		out[i] = s
	}
	slices.Sort(out)
	return out
}

func wantNotices(t *testing.T, who string, got []notify.Notice, want ...string) {
	t.Helper()
	slices.Sort(want)
	if g := summary(got); !slices.Equal(g, want) {
		t.Errorf("%s got notices\n  %s\nwant\n  %s", who, strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestReclaimExpiredReservations(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		q := e.queue(tasks.Queue{Name: "reclaim", MaxAttempts: 2})
		hub := e.watch()
		ann, zed, boss := hub.Join(notify.Viewer{Name: "ann"}), hub.Join(notify.Viewer{Name: "zed", Queues: []string{q}}),
			hub.Join(notify.Viewer{Name: "boss", All: true})

		// Bob holds a reservation that is still good; ann holds three that
		// ran out, one of a job with a single attempt.
		live := e.enqueue(e.store, q, 1, tasks.NewJob{Title: "live", Priority: new(90)})[0]
		if r := e.claim(e.store, q, "bob", 1)[0]; r.Job.ID != live {
			t.Fatalf("bob claimed %s, want %s", r.Job.ID, live)
		}
		again := e.enqueue(e.past, q, 2, tasks.NewJob{Title: "again"})
		once := e.enqueue(e.past, q, 1, tasks.NewJob{Title: "once", MaxAttempts: 1})[0]
		e.claim(e.past, q, "ann", 3)
		e.wantCounts(q, 0, 4, 0, 0)

		r := e.runner(2 * time.Second)
		e.run(r)
		wantAllOK(t, r, 1)
		if got := moved(r, "reclaim"); got != 3 {
			t.Errorf("reclaim moved %d jobs, want 3", got)
		}
		e.wantCounts(q, 2, 1, 0, 1)
		for _, id := range again {
			j := e.get(id)
			if j.State != tasks.StateReady || j.Attempts != 1 || j.ReservedBy != "" || j.Deadline != nil ||
				!strings.Contains(j.LastError, "reservation expired (held by ann)") {
				t.Errorf("reclaimed job = state %s attempts %d reserved by %q deadline %v last error %q; want ready, 1 attempt, not held",
					j.State, j.Attempts, j.ReservedBy, j.Deadline, j.LastError)
			}
		}
		if j := e.get(once); j.State != tasks.StateDead || j.Attempts != 1 || j.FinishedAt == nil {
			t.Errorf("job with one attempt = state %s attempts %d finished %v; want dead, 1, set", j.State, j.Attempts, j.FinishedAt)
		}
		if j := e.get(live); j.State != tasks.StateReserved || j.ReservedBy != "bob" {
			t.Errorf("live reservation = %s by %q; want still reserved by bob", j.State, j.ReservedBy)
		}

		got := e.received(ann, zed, boss)
		expired := func(id, to string) string { return "reservation.expired " + q + " " + id + " ann " + to }
		available := func(id string) string { return "job.available " + q + " " + id }
		counts := "queue.changed " + q + " ready=2 reserved=1 scheduled=0"
		wantNotices(t, "the holder", got[0], expired(again[0], "ready"), expired(again[1], "ready"), expired(once, "dead"))
		wantNotices(t, "an operator of the queue", got[1], available(again[0]), available(again[1]), counts)
		wantNotices(t, "a supervisor", got[2], expired(again[0], "ready"), available(again[0]),
			expired(again[1], "ready"), available(again[1]), expired(once, "dead"), "job.finished "+q+" "+once+" dead", counts)

		// Claimed and abandoned again, the jobs have used up their attempts.
		e.claim(e.past, q, "ann", 2)
		e.run(r)
		wantAllOK(t, r, 2)
		e.wantCounts(q, 0, 1, 0, 3)
		for _, id := range again {
			if j := e.get(id); j.State != tasks.StateDead || j.Attempts != 2 {
				t.Errorf("job abandoned twice = %s with %d attempts, want dead with 2", j.State, j.Attempts)
			}
		}
		if got := moved(r, "reclaim"); got != 5 {
			t.Errorf("reclaim moved %d jobs in all, want 5", got)
		}
	})
}

func TestOneRunWorksInBatchesUntilDone(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		const reclaimed, promoted = 1200, 700 // more than cron.Batch (250) four times, and twice
		abandoned, later := e.queue(tasks.Queue{Name: "abandoned"}), e.queue(tasks.Queue{Name: "later"})
		e.expired(abandoned, "ann", reclaimed)
		runAt := time.Now().Add(-behind / 2) // after the past clock's now, before the real one
		e.enqueue(e.past, later, promoted, tasks.NewJob{Title: "due", RunAt: &runAt})
		e.wantCounts(abandoned, 0, reclaimed, 0, 0)
		e.wantCounts(later, 0, 0, promoted, 0)

		r := e.runner(2 * time.Second)
		e.run(r)
		wantAllOK(t, r, 1)
		if got := moved(r, "reclaim"); got != reclaimed {
			t.Errorf("one run reclaimed %d jobs, want %d", got, reclaimed)
		}
		if got := moved(r, "promote"); got != promoted {
			t.Errorf("one run promoted %d jobs, want %d", got, promoted)
		}
		e.wantCounts(abandoned, reclaimed, 0, 0, 0)
		e.wantCounts(later, promoted, 0, 0, 0)
	})
}

// One run handles every due time that came, more than a batch of them:
// the jobs made an hour ago, due a minute after, are at risk and breached
// (raised to the queue's breach priority); those due in an hour are not.
func TestBreachesWithinOneRun(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		const late = 600 // more than cron.Batch twice
		q := e.queue(tasks.Queue{Name: "promised", BreachPriority: 90})
		ids := e.enqueue(e.past, q, late, tasks.NewJob{Title: "late", DueInSeconds: 60})
		onTime := e.enqueue(e.store, q, 1, tasks.NewJob{Title: "on time", DueInSeconds: 3600})

		r := e.runner(2 * time.Second)
		e.run(r)
		wantAllOK(t, r, 1)
		if got := moved(r, "sla"); got != late {
			t.Errorf("one run handled %d moments, want %d", got, late)
		}
		if st := e.stats(q); st.Breached != late || st.AtRisk != 0 {
			t.Errorf("breached %d, at risk %d; want %d, 0", st.Breached, st.AtRisk, late)
		}
		if j := e.get(ids[late-1]); j.SLA != tasks.SLABreached || j.Priority != 90 {
			t.Errorf("a late job is %q at priority %d", j.SLA, j.Priority)
		}
		if j := e.get(onTime[0]); j.SLA != tasks.SLAOnTime || j.Priority != tasks.DefaultPriority {
			t.Errorf("the job on time is %q at priority %d", j.SLA, j.Priority)
		}
	})
}

// One run moves every job that missed its due time while it waited to its
// queue's breach queue, however many: each once, in line there.
func TestMovesWithinOneRun(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		const late = 300 // more than cron.Batch twice
		leads := e.queue(tasks.Queue{Name: "leads"})
		q := e.queue(tasks.Queue{Name: "promised", BreachQueue: leads})
		ids := e.enqueue(e.past, q, late, tasks.NewJob{Title: "late", DueInSeconds: 60})
		r := e.runner(2 * time.Second)
		e.run(r)
		wantAllOK(t, r, 1)
		if got := moved(r, "sla"); got != 2*late {
			t.Errorf("one run handled %d, want %d breaches and as many moves", got, 2*late)
		}
		if st := e.stats(q); st.Ready != 0 || st.Breached != 0 {
			t.Errorf("left in %s: %+v", q, st)
		}
		if st := e.stats(leads); st.Ready != late || st.Breached != late {
			t.Errorf("in %s: %+v, want %d ready and breached", leads, st, late)
		}
		if j := e.get(strings.TrimSuffix(ids[0], q) + leads); j.MovedFrom != q || j.State != tasks.StateReady {
			t.Errorf("moved job %+v", j)
		}
	})
}

func TestPromoteDueJobs(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		q := e.queue(tasks.Queue{Name: "later"})
		hub := e.watch()
		zed := hub.Join(notify.Viewer{Name: "zed", Queues: []string{q}})
		runAt := time.Now().Add(-behind / 2)
		due := e.enqueue(e.past, q, 3, tasks.NewJob{Title: "due", RunAt: &runAt})
		notYet := e.enqueue(e.store, q, 1, tasks.NewJob{Title: "tomorrow", DelaySeconds: 24 * 60 * 60})[0]
		if s := e.stats(q); s.Scheduled != 4 || s.Due != 3 {
			t.Fatalf("before the run: scheduled %d due %d, want 4 and 3", s.Scheduled, s.Due)
		}

		r := e.runner(2 * time.Second)
		e.run(r)
		wantAllOK(t, r, 1)
		e.wantCounts(q, 3, 0, 1, 0)
		for _, id := range due {
			if j := e.get(id); j.State != tasks.StateReady {
				t.Errorf("due job is %s, want ready", j.State)
			}
		}
		if j := e.get(notYet); j.State != tasks.StateScheduled {
			t.Errorf("job due tomorrow is %s, want scheduled", j.State)
		}
		var want []string
		for _, id := range due {
			want = append(want, "job.available "+q+" "+id)
		}
		want = append(want, "queue.changed "+q+" ready=3 reserved=0 scheduled=1")
		wantNotices(t, "an operator of the queue", e.received(zed)[0], want...)
	})
}

// Every run samples each queue's numbers of the minute.
func TestRunsSampleTheNumbers(t *testing.T) {
	onEachBackend(t, func(e *env) {
		q := e.queue(tasks.Queue{Name: "counted"})
		e.enqueue(e.store, q, 2, tasks.NewJob{Title: "waiting"})
		r := e.runner(2 * time.Second)
		e.run(r)
		wantAllOK(t, r, 1)
		ms, err := e.store.Numbers(e.ctx, q)
		if err != nil || len(ms) != 1 || ms[0].Ready != 2 {
			t.Fatalf("numbers after a run = %+v, %v", ms, err)
		}
	})
}

func TestRetentionDeletesOldFinishedJobs(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		// Completed and canceled jobs are kept a minute, dead ones two hours.
		q := e.queue(tasks.Queue{Name: "old", RetentionSeconds: 60, DeadRetentionSeconds: 2 * 60 * 60})
		finish := func(store *tasks.Store, title, how string) string {
			t.Helper()
			j := tasks.NewJob{Title: title, IdempotencyKey: "key-" + title, MaxAttempts: 1}
			id := e.enqueue(store, q, 1, j)[0]
			var err error
			switch how {
			case "cancel":
				_, _, err = store.Cancel(e.ctx, id, "sam", false)
			case "complete", "fail":
				r := e.claim(store, q, "ann", 1)[0]
				if r.Job.ID != id {
					t.Fatalf("claimed %s, want %s", r.Job.ID, id)
				}
				if how == "complete" {
					_, err = store.Complete(e.ctx, id, r.Hold(), nil)
				} else {
					_, err = store.Fail(e.ctx, id, r.Hold(), "unreadable")
				}
			}
			if err != nil {
				t.Fatalf("%s %s: %v", how, title, err)
			}
			return id
		}
		hourAgo, threeHoursAgo := behindBy(e.rdb, time.Hour), behindBy(e.rdb, 3*time.Hour)
		gone := []string{
			finish(hourAgo, "completed-an-hour-ago", "complete"),
			finish(hourAgo, "canceled-an-hour-ago", "cancel"),
			finish(threeHoursAgo, "dead-three-hours-ago", "fail"),
		}
		kept := []string{
			finish(hourAgo, "dead-an-hour-ago", "fail"),
			finish(e.store, "completed-now", "complete"),
			finish(e.store, "canceled-now", "cancel"),
			e.enqueue(hourAgo, q, 1, tasks.NewJob{Title: "waiting"})[0],
		}

		r := e.runner(2 * time.Second)
		e.run(r)
		wantAllOK(t, r, 1)
		if got := moved(r, "retention"); got != len(gone) {
			t.Errorf("retention deleted %d jobs, want %d", got, len(gone))
		}
		for _, id := range gone {
			if _, err := e.store.Get(e.ctx, id); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("Get(%s) after retention: %v, want ErrNotFound", id, err)
			}
		}
		for _, id := range kept {
			if _, err := e.store.Get(e.ctx, id); err != nil {
				t.Errorf("Get(%s) of a job within retention: %v", id, err)
			}
		}
		s := e.stats(q)
		if s.Completed != 1 || s.Canceled != 1 || s.Dead != 1 || s.Ready != 1 {
			t.Errorf("after retention: completed %d canceled %d dead %d ready %d, want 1 each", s.Completed, s.Canceled, s.Dead, s.Ready)
		}
		// A deleted job's idempotency key is free again; a kept one's is not.
		for key, created := range map[string]bool{"key-completed-an-hour-ago": true, "key-completed-now": false} {
			out, err := e.store.Enqueue(e.ctx, q, "pat", []tasks.NewJob{{Title: "reuse", IdempotencyKey: key}})
			if err != nil || out[0].Created != created {
				t.Errorf("enqueue with %s after retention: created %v (%v), want %v", key, out != nil && out[0].Created, err, created)
			}
		}
	})
}

func TestTwoInstancesReclaimEachJobOnce(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		// At most 63 notices, so a client that reads only at the end is not
		// dropped.
		const n = 60
		q := e.queue(tasks.Queue{Name: "shared"})
		hub := e.watch()
		ann := hub.Join(notify.Viewer{Name: "ann"})
		ids := e.expired(q, "ann", n)

		// Both instances' schedules fire at once: the lock lets one do each
		// task and the other skip it.
		a, b := e.runner(2*time.Second), e.runner(2*time.Second)
		var wg sync.WaitGroup
		for _, r := range []*Runner{a, b} {
			wg.Go(func() { r.RunOnce(e.ctx) })
		}
		wg.Wait()
		for _, task := range a.tasks {
			ok := runs(a, task.name, "ok") + runs(b, task.name, "ok")
			skipped := runs(a, task.name, "skipped") + runs(b, task.name, "skipped")
			failed := runs(a, task.name, "error") + runs(b, task.name, "error")
			if ok != 1 || skipped != 1 || failed != 0 {
				t.Errorf("task %s: %d ok, %d skipped, %d failed; want 1, 1, 0", task.name, ok, skipped, failed)
			}
		}
		if got := moved(a, "reclaim") + moved(b, "reclaim"); got != n {
			t.Errorf("the instances reclaimed %d jobs, want %d", got, n)
		}
		e.wantCounts(q, n, 0, 0, 0)
		var want []string
		for _, id := range ids {
			want = append(want, "reservation.expired "+q+" "+id+" ann ready")
		}
		wantNotices(t, "the holder", e.received(ann)[0], want...)
	})
}

func TestConcurrentReclaimsMoveEachJobOnce(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		// Without the lock (it expired, or a run outlasted it), concurrent
		// runs still move each job once: the scripts are atomic.
		const n = 1100
		q := e.queue(tasks.Queue{Name: "contended"})
		e.expired(q, "ann", n)
		runners := []*Runner{e.runner(2 * time.Second), e.runner(2 * time.Second), e.runner(2 * time.Second)}
		total := make([]int, len(runners))
		errs := make([]error, len(runners))
		var wg sync.WaitGroup
		for i, r := range runners {
			wg.Go(func() { total[i], errs[i] = r.reclaimOnce(e.ctx) })
		}
		wg.Wait()
		sum := 0
		for i := range runners {
			if errs[i] != nil {
				t.Errorf("runner %d: %v", i, errs[i])
			}
			sum += total[i]
		}
		if sum != n {
			t.Errorf("runners reclaimed %v jobs, %d in all; want %d in all", total, sum, n)
		}
		e.wantCounts(q, n, 0, 0, 0)
	})
}

func TestHoldersAreWarnedBeforeTheirDeadline(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		q := e.queue(tasks.Queue{Name: "warn"})
		hub := e.watch()
		ann, bob, zed := hub.Join(notify.Viewer{Name: "ann"}), hub.Join(notify.Viewer{Name: "bob"}),
			hub.Join(notify.Viewer{Name: "zed", Queues: []string{q}})
		// With a 10s interval a run warns of deadlines 60 to 70 seconds
		// away. Claims with a clock behind by lease-65s end 65s from now.
		lease := 300 * time.Second
		e.enqueue(e.store, q, 3, tasks.NewJob{Title: "job"})
		soon := e.claim(behindBy(e.rdb, lease-65*time.Second), q, "ann", 1)[0]
		e.claim(behindBy(e.rdb, lease-59*time.Second), q, "bob", 1) // already in its last minute
		e.claim(e.store, q, "bob", 1)                               // far off

		r := e.runner(10 * time.Second)
		e.run(r)
		wantAllOK(t, r, 1)
		if got := moved(r, "expiring"); got != 1 {
			t.Errorf("warned %d holders, want 1", got)
		}
		got := e.received(ann, bob, zed)
		wantNotices(t, "the holder", got[0], "reservation.expiring "+q+" "+soon.Job.ID+" ann")
		wantNotices(t, "another holder", got[1])
		wantNotices(t, "an operator of the queue", got[2])
		if len(got[0]) == 1 && (got[0][0].Deadline == nil || !got[0][0].Deadline.Equal(soon.Deadline)) {
			t.Errorf("warning names deadline %v, want %v", got[0][0].Deadline, soon.Deadline)
		}
	})
}

func TestStartRunsOnSchedule(t *testing.T) {
	onEachBackend(t, func(e *env) {
		q := e.queue(tasks.Queue{Name: "scheduled"})
		e.expired(q, "ann", 5)
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		stop := e.runner(time.Second).Start(ctx)
		defer stop()
		deadline := time.Now().Add(waitTimeout)
		for s := e.stats(q); s.Ready != 5 || s.Reserved != 0; s = e.stats(q) {
			if time.Now().After(deadline) {
				e.t.Fatalf("scheduled runs did not reclaim within %v: ready %d reserved %d", waitTimeout, s.Ready, s.Reserved)
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func TestRunOnceWithoutRedis(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	e := &env{t: t, ctx: context.Background(), rdb: rdb, store: tasks.New(rdb)}
	r := e.runner(2 * time.Second)
	r.RunOnce(e.ctx) // fails, logs, and returns
	for _, task := range r.tasks {
		if got := runs(r, task.name, "error"); got != 1 {
			t.Errorf("task %s: %d failed runs, want 1", task.name, got)
		}
	}
}
