// Package cron runs claimdesk's periodic work on robfig/cron: it takes back
// reservations whose deadline passed, promotes scheduled jobs that are due,
// warns holders whose deadline is near, deletes finished jobs past their
// retention, prunes web instances that stopped, samples each queue's
// numbers of the minute, and indexes the waiting jobs of queues made by an
// earlier version. Every task is a runOnce
// that tests call directly; each works in bounded batches until done, within
// a per-run timeout. Several instances may run it at once: the scripts are
// atomic, and a short Redis lock per task keeps them from duplicating work.
package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/storeerr"
	"claimdesk/internal/tasks"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	robfig "github.com/robfig/cron/v3"
)

// Batch is how many jobs one maintenance script call moves at most: small
// enough that no call holds Redis for long (a reclaim of 200, each job's
// history written in the same call, takes about 8 ms; see the scale
// scenario of cmd/bench).
const Batch = 200

// Config is what the cron runner needs.
type Config struct {
	Redis redis.UniversalClient
	Tasks *tasks.Store
	Bus   *notify.Bus
	Log   *slog.Logger
	// Interval is how often the tasks run. Default 2 seconds.
	Interval time.Duration
	// Registry receives the runner's metrics; nil registers none.
	Registry prometheus.Registerer
}

// Runner runs the periodic tasks.
type Runner struct {
	cfg   Config
	tasks []task
	// unavailable logs the store's passing troubles, once per burst.
	unavailable *storeerr.Burst
	runs        *prometheus.CounterVec
	moved       *prometheus.CounterVec
	took        *prometheus.HistogramVec
}

// task is one periodic task.
type task struct {
	name string
	run  func(ctx context.Context) (int, error)
}

// New returns a runner; Start schedules it.
func New(cfg Config) *Runner {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	r := &Runner{
		cfg:         cfg,
		unavailable: storeerr.NewBurst(cfg.Log, "cron runs failed"),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimdesk_cron_runs_total", Help: "Cron task runs by task and outcome.",
		}, []string{"task", "outcome"}),
		moved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimdesk_cron_jobs_total", Help: "Jobs moved by cron tasks, by task.",
		}, []string{"task"}),
		took: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "claimdesk_cron_run_seconds", Help: "Cron task run time by task.",
		}, []string{"task"}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(r.runs, r.moved, r.took)
	}
	r.tasks = []task{
		{"reclaim", r.reclaimOnce},
		{"promote", r.promoteOnce},
		{"expiring", r.expiringOnce},
		{"retention", r.purgeOnce},
		{"prune", r.pruneOnce},
		{"numbers", r.numbersOnce},
		{"waiting", r.indexWaitingOnce},
		{"sla", r.watchDueOnce},
	}
	return r
}

// Start schedules the tasks every interval (seconds precision) and returns
// a function that stops them and waits for a running one to finish.
func (r *Runner) Start(ctx context.Context) (stop func()) {
	c := robfig.New(robfig.WithSeconds(), robfig.WithChain(robfig.SkipIfStillRunning(robfig.DiscardLogger)))
	spec := fmt.Sprintf("@every %s", r.cfg.Interval)
	for _, t := range r.tasks {
		if _, err := c.AddFunc(spec, func() { r.run(ctx, t) }); err != nil {
			panic(err) // the spec is built here; it cannot be wrong
		}
	}
	c.Start()
	return func() { <-c.Stop().Done() }
}

// RunOnce runs every task once, as the schedule does.
func (r *Runner) RunOnce(ctx context.Context) {
	for _, t := range r.tasks {
		r.run(ctx, t)
	}
}

// run runs one task under its lock and timeout, and records the outcome.
func (r *Runner) run(ctx context.Context, t task) {
	ctx, cancel := context.WithTimeout(ctx, max(r.cfg.Interval, 10*time.Second))
	defer cancel()
	// The lock lasts most of an interval: another instance that runs the
	// same task in the same tick skips it.
	ok, err := r.cfg.Redis.SetNX(ctx, keys.CronLock(t.name), r.cfg.Bus.ID(), r.cfg.Interval*9/10).Result()
	if err != nil || !ok {
		outcome := "skipped"
		if err != nil {
			outcome = "error"
			r.failed(t, "cron lock not taken", err)
		}
		r.runs.WithLabelValues(t.name, outcome).Inc()
		return
	}
	start := time.Now()
	n, err := t.run(ctx)
	r.took.WithLabelValues(t.name).Observe(time.Since(start).Seconds())
	r.moved.WithLabelValues(t.name).Add(float64(n))
	if err != nil {
		r.runs.WithLabelValues(t.name, "error").Inc()
		r.failed(t, "cron task failed", err, "moved", n)
		return
	}
	r.runs.WithLabelValues(t.name, "ok").Inc()
	if n > 0 {
		r.cfg.Log.Info("cron task", "task", t.name, "moved", n, "ms", time.Since(start).Milliseconds())
	}
}

// eachQueue calls fn for every queue, and adds up what it moved.
func (r *Runner) eachQueue(ctx context.Context, fn func(q string) (int, error)) (int, error) {
	names, err := r.cfg.Tasks.QueueNames(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	var errs []error
	for _, q := range names {
		n, err := fn(q)
		total += n
		if err != nil && !errors.Is(err, tasks.ErrQueueNotFound) {
			errs = append(errs, fmt.Errorf("queue %s: %w", q, err))
		}
	}
	return total, errors.Join(errs...)
}

// reclaimOnce takes back every expired reservation, in batches. The Store
// tells its observers (notices, metrics) of each.
func (r *Runner) reclaimOnce(ctx context.Context) (int, error) {
	return r.inBatches(ctx, r.cfg.Tasks.ReclaimExpired)
}

// promoteOnce moves every due scheduled job to ready, in batches.
func (r *Runner) promoteOnce(ctx context.Context) (int, error) {
	return r.inBatches(ctx, r.cfg.Tasks.PromoteDue)
}

// purgeOnce deletes finished jobs past their retention, in batches.
func (r *Runner) purgeOnce(ctx context.Context) (int, error) {
	return r.inBatches(ctx, r.cfg.Tasks.Purge)
}

// numbersOnce samples every queue's numbers of the minute under way.
func (r *Runner) numbersOnce(ctx context.Context) (int, error) {
	return r.eachQueue(ctx, func(q string) (int, error) { return 0, r.cfg.Tasks.SampleNumbers(ctx, q) })
}

// indexWaitingOnce indexes the waiting jobs of queues made by an earlier
// version, or that stopped being plain with many jobs waiting
// (tasks.Store.IndexWaiting), in batches, so their oldest waiting job is
// known; for every other queue it is one call that does nothing.
func (r *Runner) indexWaitingOnce(ctx context.Context) (int, error) {
	return r.inBatches(ctx, r.cfg.Tasks.IndexWaiting)
}

// watchDueOnce handles every moment of a due time that came: jobs at
// risk, and jobs breached (escalated by their queue's policy), in batches,
// from each queue's index of those moments (tasks.Store.WatchDue); then
// moves the breached jobs of queues with a breach queue there
// (tasks.Store.MoveBreached), and tells batches how their jobs that moved
// away ended (tasks.Store.ReturnToBatches).
func (r *Runner) watchDueOnce(ctx context.Context) (int, error) {
	return r.eachQueue(ctx, func(q string) (int, error) {
		// Each step on its own: one that fails holds up neither other.
		total, errs := 0, []error{}
		for _, st := range []step{r.cfg.Tasks.WatchDue, r.cfg.Tasks.MoveBreached, r.cfg.Tasks.ReturnToBatches} {
			n, err := r.batches(ctx, q, st)
			total += n
			errs = append(errs, err)
		}
		return total, errors.Join(errs...)
	})
}

// step is one bounded call of a periodic task on one queue: how many it
// moved, and whether more are left.
type step func(ctx context.Context, queue string, limit int) (int, bool, error)

// inBatches calls step on every queue until it reports no more, and adds
// up what it moved.
func (r *Runner) inBatches(ctx context.Context, st step) (int, error) {
	return r.eachQueue(ctx, func(q string) (int, error) { return r.batches(ctx, q, st) })
}

// batches calls step on queue q until it reports no more, and adds up
// what it moved.
func (r *Runner) batches(ctx context.Context, q string, st step) (int, error) {
	total := 0
	for {
		n, more, err := st(ctx, q, Batch)
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

// warnBefore is how long before its deadline a holder is warned.
const warnBefore = time.Minute

// expiringOnce warns the holders whose deadline falls within a minute from
// the next interval on: each reservation is warned about once, in the run
// before its last minute begins.
func (r *Runner) expiringOnce(ctx context.Context) (int, error) {
	now, err := r.cfg.Redis.Time(ctx).Result() // deadlines are judged by the Redis clock
	if err != nil {
		return 0, err
	}
	from, to := now.Add(warnBefore), now.Add(warnBefore+r.cfg.Interval)
	return r.eachQueue(ctx, func(q string) (int, error) {
		jobs, err := r.cfg.Tasks.ReservationsDue(ctx, q, from, to, Batch)
		if err != nil {
			return 0, err
		}
		ns := make([]notify.Notice, len(jobs))
		for i, j := range jobs {
			ns[i] = notify.Notice{Type: notify.ReservationExpiring, Queue: q, JobID: j.ID, Operator: j.ReservedBy, Deadline: j.Deadline}
		}
		if err := r.cfg.Bus.Publish(ctx, ns...); err != nil {
			return 0, err
		}
		return len(jobs), nil
	})
}

// pruneOnce forgets web instances that stopped renewing.
func (r *Runner) pruneOnce(ctx context.Context) (int, error) {
	return r.cfg.Bus.Prune(ctx)
}

// failed logs a task that failed: while the store is out of reach or busy
// for a moment, as a warning once per burst (the next run tries again);
// otherwise as an error.
func (r *Runner) failed(t task, msg string, err error, args ...any) {
	args = append([]any{"task", t.name}, args...)
	if storeerr.Transient(err) {
		r.unavailable.Add(msg, err, args...)
		return
	}
	r.cfg.Log.Error(msg, append([]any{"err", err}, args...)...)
}
