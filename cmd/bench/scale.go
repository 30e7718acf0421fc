package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"claimdesk/internal/cron"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// runScale measures how claims and reclaims behave as a queue grows: claim
// latency with 1k, 100k and 1M ready jobs; the time to reclaim 100k expired
// reservations and the longest single script meanwhile; and Redis memory
// per queued job.
func runScale(ctx context.Context, c config) (result, error) {
	r := result{Scenario: "scale"}
	srv, err := taskstest.NewServer()
	if err != nil {
		return r, err
	}
	defer srv.Close()
	// A FLUSHALL of a million jobs, or an enqueue of a thousand, may take
	// seconds on a busy machine: longer than go-redis's default 3 s.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 8, ReadTimeout: time.Minute})
	defer rdb.Close()
	// The reclaim part jumps ahead in time: every script takes "now" from
	// this clock instead of Redis TIME.
	var offset atomic.Int64
	store := tasks.New(rdb, tasks.WithClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }))

	var medians []float64
	for _, size := range c.sizes {
		q := fmt.Sprintf("ready-%d", size)
		if err := fill(ctx, store, q, size); err != nil {
			return r, fmt.Errorf("fill %s: %w", q, err)
		}
		s, err := timeClaims(ctx, store, q, fmt.Sprintf("claim with %d ready", size), size)
		if err != nil {
			return r, err
		}
		r.Ops = append(r.Ops, s)
		medians = append(medians, float64(s.P50))
		// Free the memory before the next size.
		if err := rdb.FlushAll(ctx).Err(); err != nil {
			return r, fmt.Errorf("flush after %s: %w", q, err)
		}
	}
	if len(medians) > 1 {
		r.atMost(fmt.Sprintf("median claim at %d ready ÷ at %d", c.sizes[len(c.sizes)-1], c.sizes[0]),
			medians[len(medians)-1]/medians[0], 1.5, "×")
	}

	if err := measureReclaim(ctx, &r, rdb, store, &offset, c.reclaim); err != nil {
		return r, fmt.Errorf("reclaim: %w", err)
	}
	rank := 0.0 // the median claim by rank at dueJobs ready, if timed above
	if i := slices.Index(c.sizes, c.dueJobs); i >= 0 {
		rank = medians[i]
	}
	if err := measureDue(ctx, &r, rdb, store, &offset, c.dueJobs, rank); err != nil {
		return r, fmt.Errorf("due times: %w", err)
	}
	if err := measureRouting(ctx, &r, rdb, store, c.dueJobs, rank); err != nil {
		return r, fmt.Errorf("routing: %w", err)
	}
	if err := measureMoves(ctx, &r, rdb, store, &offset, min(c.dueJobs, maxMoves)); err != nil {
		return r, fmt.Errorf("moves: %w", err)
	}
	if err := measureMemory(ctx, &r, rdb, store, c.memJobs); err != nil {
		return r, fmt.Errorf("memory: %w", err)
	}
	return r, nil
}

// timeClaims times min(1000, ready) claims of the queue, by 8 operators
// in turn, as op.
func timeClaims(ctx context.Context, store *tasks.Store, queue, op string, ready int) (summary, error) {
	claims := newRecorder(op)
	for i := range min(1000, ready) {
		if err := claims.time(func() error {
			res, err := store.Claim(ctx, queue, "op"+strconv.Itoa(i%8))
			if err == nil && res == nil {
				err = errors.New("a claim found nothing while jobs were ready")
			}
			return err
		}); err != nil {
			return summary{}, err
		}
	}
	return claims.summary(), nil
}

// fill enqueues n ready jobs into a new queue.
func fill(ctx context.Context, store *tasks.Store, queue string, n int) error {
	if _, err := store.PutQueue(ctx, tasks.Queue{Name: queue, LeaseSeconds: 60, MaxAttempts: 1000}); err != nil {
		return err
	}
	return enqueueMany(ctx, store, queue, n, 4)
}

// enqueueMany enqueues n jobs, 1000 per call, c calls at a time.
func enqueueMany(ctx context.Context, store *tasks.Store, queue string, n, c int) error {
	return enqueueBatches(ctx, store, queue, n, tasks.MaxBatch, c, nil, nil)
}

// enqueueBatches enqueues n jobs titled "job <i>" with the payload (nil:
// none), per jobs per call, c calls at a time, each call timed by rec.
func enqueueBatches(ctx context.Context, store *tasks.Store, queue string, n, per, c int, payload json.RawMessage, rec *recorder) error {
	return parallel(c, (n+per-1)/per, func(_, i int) error {
		jobs := make([]tasks.NewJob, min(per, n-i*per))
		for k := range jobs {
			jobs[k] = tasks.NewJob{Title: "job " + strconv.Itoa(i*per+k), Payload: payload}
		}
		return rec.time(func() error {
			_, err := store.Enqueue(ctx, queue, "bench", jobs)
			return err
		})
	})
}

// measureReclaim reserves n jobs, moves the clock past their deadline, and
// reclaims them all in cron-sized calls, timing each call and reading the
// longest script call from SLOWLOG.
func measureReclaim(ctx context.Context, r *result, rdb *redis.Client, store *tasks.Store, offset *atomic.Int64, n int) error {
	const q = "reclaim"
	if err := fill(ctx, store, q, n); err != nil {
		return err
	}
	if err := parallel(8, n, func(w, _ int) error {
		res, err := store.Claim(ctx, q, "op"+strconv.Itoa(w))
		if err == nil && res == nil {
			err = errors.New("a claim found nothing while jobs were ready")
		}
		return err
	}); err != nil {
		return err
	}
	offset.Add(int64(2 * time.Minute)) // every lease (60 s) has run out
	calls := newRecorder(fmt.Sprintf("reclaim call (%d per call)", cron.Batch))
	total, elapsed, longest, err := inCronCalls(ctx, rdb, n, calls, func() (int, bool, error) {
		return store.ReclaimExpired(ctx, q, cron.Batch)
	})
	if err != nil {
		return err
	}
	st, err := store.Stats(ctx, q)
	if err != nil {
		return err
	}
	r.Ops = append(r.Ops, calls.summary())
	r.check("every expired reservation reclaimed", total == n && st.Reserved == 0 && st.Ready == int64(n),
		"%d reclaimed of %d; %d still reserved, %d ready", total, n, st.Reserved, st.Ready)
	r.fig(fmt.Sprintf("time to reclaim %d expired reservations", n), elapsed.Seconds(), "s")
	r.atMost("longest script call during the reclaim (SLOWLOG)", float64(toMS(longest)), 10, "ms")
	return rdb.FlushAll(ctx).Err()
}

// inCronCalls calls step, as a cron task does, until it reports no more,
// each call timed by calls, and returns what the calls moved, how long
// they took and the longest script call among them, from SLOWLOG (which
// logs every command meanwhile, up to n).
func inCronCalls(ctx context.Context, rdb *redis.Client, n int, calls *recorder, step func() (int, bool, error)) (total int, elapsed, longest time.Duration, err error) {
	for _, kv := range [][2]string{{"slowlog-log-slower-than", "0"}, {"slowlog-max-len", strconv.Itoa(n)}} {
		if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return 0, 0, 0, err
		}
	}
	if err := rdb.SlowLogReset(ctx).Err(); err != nil {
		return 0, 0, 0, err
	}
	t0 := time.Now()
	for more := true; more; {
		var moved int
		if err := calls.time(func() error {
			var err error
			moved, more, err = step()
			return err
		}); err != nil {
			return total, 0, 0, err
		}
		total += moved
	}
	elapsed = time.Since(t0)
	log, err := rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return total, elapsed, 0, err
	}
	for _, e := range log {
		if len(e.Args) > 0 && strings.EqualFold(e.Args[0], "fcall") {
			longest = max(longest, e.Duration)
		}
	}
	return total, elapsed, longest, rdb.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err()
}

// measureDue fills a queue that claims earliest due first with n jobs due
// in an hour, then times the cron job's look for due times when none came
// (an index read, whatever n), claims by due time (against claims by rank,
// the median rank, at as many ready jobs; 0 when not timed), and the cron
// runs that mark all n at risk once their warn point comes, with the
// longest script call among them (SLOWLOG).
func measureDue(ctx context.Context, r *result, rdb *redis.Client, store *tasks.Store, offset *atomic.Int64, n int, rank float64) error {
	const q = "due"
	per, _, err := memoryPerJob(ctx, rdb, store, tasks.Queue{Name: q, LeaseSeconds: 60, MaxAttempts: 1000, SLASeconds: 3600, Order: tasks.OrderDue}, n, 4)
	if err != nil {
		return err
	}
	r.fig("Redis memory per waiting job with a due time, beyond its payload", per, "bytes")
	look := func() (int, bool, error) { return store.WatchDue(ctx, q, cron.Batch) }
	idle := newRecorder(fmt.Sprintf("cron's look for due times with none come, %d waiting", n))
	for range 200 {
		if err := idle.time(func() error {
			moved, _, err := look()
			if err == nil && moved > 0 {
				err = errors.New("a due time came an hour early")
			}
			return err
		}); err != nil {
			return err
		}
	}
	claimSum, err := timeClaims(ctx, store, q, fmt.Sprintf("claim, earliest due first, with %d ready", n), n)
	if err != nil {
		return err
	}
	idleSum := idle.summary()
	r.Ops = append(r.Ops, idleSum, claimSum)
	r.atMost(fmt.Sprintf("median look for due times with none come ÷ median claim, at %d waiting", n),
		float64(idleSum.P50)/float64(claimSum.P50), 1, "×")
	if rank > 0 {
		r.atMost(fmt.Sprintf("median claim earliest due first ÷ by rank, at %d ready", n), float64(claimSum.P50)/rank, 1.5, "×")
	}

	// Past every warn point (48 minutes), before the due times.
	offset.Add(int64(50 * time.Minute))
	defer offset.Add(-int64(50 * time.Minute))
	calls := newRecorder(fmt.Sprintf("cron's call marking jobs at risk (%d per call)", cron.Batch))
	total, elapsed, longest, err := inCronCalls(ctx, rdb, n+1, calls, look)
	if err != nil {
		return err
	}
	st, err := store.Stats(ctx, q)
	if err != nil {
		return err
	}
	r.Ops = append(r.Ops, calls.summary())
	// The first job too, and each claimed one (reserved still).
	r.check("every job at risk after one cron run", total == n+1 && st.AtRisk == int64(n+1),
		"%d marked of %d; %d at risk", total, n+1, st.AtRisk)
	r.fig(fmt.Sprintf("time to mark %d jobs at risk", n), elapsed.Seconds(), "s")
	r.atMost("longest script call marking jobs at risk (SLOWLOG)", float64(toMS(longest)), 10, "ms")
	return rdb.FlushAll(ctx).Err()
}

// maxMoves bounds the jobs measureMoves moves: each move is a few calls
// of its own, so their number says what one costs.
const maxMoves = 2000

// measureMoves fills a queue whose overdue jobs move to another with n
// jobs, lets their due time pass, has the cron job breach them, then
// times its runs that move them all, with the longest script call among
// them (SLOWLOG).
func measureMoves(ctx context.Context, r *result, rdb *redis.Client, store *tasks.Store, offset *atomic.Int64, n int) error {
	const from, to = "escalate", "leads"
	for _, q := range []tasks.Queue{{Name: to}, {Name: from, SLASeconds: 60, BreachQueue: to}} {
		if _, err := store.PutQueue(ctx, q); err != nil {
			return err
		}
	}
	if err := enqueueMany(ctx, store, from, n, 4); err != nil {
		return err
	}
	offset.Add(int64(2 * time.Minute))
	defer offset.Add(-int64(2 * time.Minute))
	for more := true; more; {
		var err error
		if _, more, err = store.WatchDue(ctx, from, cron.Batch); err != nil {
			return err
		}
	}
	calls := newRecorder(fmt.Sprintf("cron's call moving overdue jobs to the breach queue (%d per call)", cron.Batch))
	moved, elapsed, longest, err := inCronCalls(ctx, rdb, 6*n+100, calls, func() (int, bool, error) {
		return store.MoveBreached(ctx, from, cron.Batch)
	})
	if err != nil {
		return err
	}
	st, err := store.Stats(ctx, to)
	if err != nil {
		return err
	}
	r.Ops = append(r.Ops, calls.summary())
	r.check("every overdue job moved in one cron run", moved == n && st.Ready == int64(n) && st.Breached == int64(n),
		"%d moved of %d; %d ready and %d breached in the breach queue", moved, n, st.Ready, st.Breached)
	r.fig(fmt.Sprintf("time to move one overdue job, of %d", n), float64(elapsed.Microseconds())/float64(n)/1000, "ms")
	r.atMost("longest script call moving jobs (SLOWLOG)", float64(toMS(longest)), 10, "ms")
	return rdb.FlushAll(ctx).Err()
}

// memoryPerJob makes the queue, and a first job (which makes its hashes
// and sets), then enqueues n jobs with an empty payload, c calls at a
// time: it returns the growth of Redis's used memory per job beyond the
// payload, and the used memory it counted from.
func memoryPerJob(ctx context.Context, rdb *redis.Client, store *tasks.Store, q tasks.Queue, n, c int) (per float64, before int64, err error) {
	if _, err := store.PutQueue(ctx, q); err != nil {
		return 0, 0, err
	}
	if _, err := store.Enqueue(ctx, q.Name, "bench", []tasks.NewJob{{Title: "first"}}); err != nil {
		return 0, 0, err
	}
	if before, err = usedMemory(ctx, rdb); err != nil {
		return 0, 0, err
	}
	if err := enqueueMany(ctx, store, q.Name, n, c); err != nil {
		return 0, 0, err
	}
	after, err := usedMemory(ctx, rdb)
	return float64(after-before)/float64(n) - float64(len("{}")), before, err
}

// measureMemory enqueues n jobs with an empty payload into an empty store
// and divides the growth of Redis's used memory by n, minus the payload.
func measureMemory(ctx context.Context, r *result, rdb *redis.Client, store *tasks.Store, n int) error {
	const q = "memory"
	per, before, err := memoryPerJob(ctx, rdb, store, tasks.Queue{Name: q}, n, 1)
	if err != nil {
		return err
	}
	const payload = float64(len("{}"))
	r.fig(fmt.Sprintf("Redis memory growth for %d jobs", n), (per+payload)*float64(n)/(1<<20), "MiB")
	r.atMost("Redis memory per queued job beyond its payload", per, 400, "bytes")

	// The same jobs claimed and completed: each now holds a history of
	// three entries (enqueued, claimed, completed) and its last holder.
	if err := parallel(8, n, func(w, _ int) error {
		res, err := store.Claim(ctx, q, "op"+strconv.Itoa(w))
		if err == nil && res == nil {
			err = errors.New("a claim found nothing while jobs were ready")
		}
		if err != nil {
			return err
		}
		_, err = store.Complete(ctx, res.Job.ID, res.Hold(), nil)
		return err
	}); err != nil {
		return err
	}
	done, err := usedMemory(ctx, rdb)
	if err != nil {
		return err
	}
	perDone := float64(done-before)/float64(n) - payload
	// 346 B per job before jobs kept a history; the history may add 150 B.
	r.atMost("Redis memory per completed job with its history, beyond its payload", perDone, 346+150, "bytes")
	return nil
}
