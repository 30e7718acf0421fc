package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"claimdesk/internal/cron"
	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// ceilingScript is the cheapest script there is: what Redis, this client and
// this machine can do per second, the ceiling for any one-script operation.
var ceilingScript = redis.NewScript("return 1")

// bareLibrary is a reference for the engine's ratios: the Redis commands of
// a claim's, a complete's and a Complete & next's common path (nothing
// expired, nothing due, no skips, no batch, no idempotency key), with the
// same keys (keys.Queue.All) and the same arguments, and nothing else: no
// decisions, no metadata to decode or encode, no history, no checks. Each
// ends as the engine's scripts do, with the queue's counts after the change
// (five ZCARDs) and the payloads it answers. What they reach of the ceiling
// bounds what any script making those commands could on this machine, so
// the report tells the cost of claimdesk's own logic from the cost of the
// commands that atomicity requires.
const bareLibrary = `#!lua name=claimdesk_bench
local function take(KEYS, now, op)
  redis.call('HGET', KEYS[1], 'max_hold_seconds')
  redis.call('ZCOUNT', KEYS[4], '-inf', now)
  redis.call('ZCOUNT', KEYS[3], '-inf', now)
  redis.call('HGET', KEYS[13], op)
  local id = redis.call('ZRANGE', KEYS[2], '0', '0')[1]
  if not id then return nil end
  local raw = redis.call('HGET', KEYS[8], id)
  redis.call('ZADD', KEYS[20], '0', op .. '\n' .. id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('HSET', KEYS[8], id, raw)
  redis.call('HINCRBY', KEYS[1], 'claims', 1)
  return id, raw
end
local function finish(KEYS, now, id, op)
  local raw = redis.call('HGET', KEYS[8], id)
  redis.call('ZREM', KEYS[20], op .. '\n' .. id)
  redis.call('ZREM', KEYS[4], id)
  redis.call('ZADD', KEYS[5], now, id)
  redis.call('HSET', KEYS[8], id, raw)
  return raw
end
local function counts(KEYS)
  for _, k in ipairs({KEYS[17], KEYS[2], KEYS[3], KEYS[4], KEYS[6]}) do redis.call('ZCARD', k) end
end
-- (now, operator, token, budget, most skips)
redis.register_function('bare_claim', function(KEYS, ARGV)
  redis.call('TIME')
  local id, raw = take(KEYS, ARGV[1], ARGV[2])
  counts(KEYS)
  if not id then return {'ok', ''} end
  return {'ok', id, raw, redis.call('HGET', KEYS[9], id)}
end)
-- (now, id, token, operator, result)
redis.register_function('bare_complete', function(KEYS, ARGV)
  redis.call('TIME')
  local raw = finish(KEYS, ARGV[1], ARGV[2], ARGV[4])
  counts(KEYS)
  return {'ok', ARGV[2], raw, redis.call('HGET', KEYS[9], ARGV[2])}
end)
-- (now, id, token, operator, result, fresh token, budget, most skips)
redis.register_function('bare_cycle', function(KEYS, ARGV)
  redis.call('TIME')
  local raw = finish(KEYS, ARGV[1], ARGV[2], ARGV[4])
  local id, next_raw = take(KEYS, ARGV[1], ARGV[4])
  counts(KEYS)
  local payload = redis.call('HGET', KEYS[9], ARGV[2])
  if not id then return {'ok', ARGV[2], raw, payload, '', '', ''} end
  return {'ok', ARGV[2], raw, payload, id, next_raw, redis.call('HGET', KEYS[9], id)}
end)`

// fillBare gives bare_claim n jobs to take, numbered from first, shaped
// like the engine's: ids, metadata and payloads of the same sizes. It
// returns the keys.
func fillBare(ctx context.Context, rdb *redis.Client, first, n int) ([]string, error) {
	if err := rdb.FunctionLoadReplace(ctx, bareLibrary).Err(); err != nil {
		return nil, err
	}
	q := keys.ForQueue("bare")
	if err := rdb.HSet(ctx, q.Conf(), "max_hold_seconds", 3600).Err(); err != nil {
		return nil, err
	}
	meta := strings.Repeat("m", 52)
	for start := first; start < first+n; start += 1000 {
		p := rdb.Pipeline()
		for i := start; i < min(start+1000, first+n); i++ {
			id := fmt.Sprintf("01KAQ3Z7M8R2C4V6X9B1%06d", i)
			p.ZAdd(ctx, q.Ready(), redis.Z{Score: float64(i), Member: id})
			p.HSet(ctx, q.Meta(), id, meta)
			p.HSet(ctx, q.Payload(), id, "{}")
		}
		if _, err := p.Exec(ctx); err != nil {
			return nil, err
		}
	}
	return q.All(), nil
}

// runEngine enqueues, claims and completes jobs straight against the Store,
// with c.concurrency simulated operators, one phase per operation so that
// each is a pure stream of one script; then, with the same client and
// concurrency, EVALSHA of "return 1". Last come the operations the other
// phases leave out: enqueues of 100 jobs, releases, and cron's reclaims of
// expired reservations. For each of claimdesk's operations it reports
// where the time inside Redis goes (INFO commandstats). It checks that
// every job was completed exactly once and none is left.
func runEngine(ctx context.Context, c config) (result, error) {
	r := result{Scenario: "engine (straight against the Store) vs ceiling (EVALSHA \"return 1\")"}
	srv, err := taskstest.NewServer()
	if err != nil {
		return r, err
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: c.concurrency})
	defer rdb.Close()
	store := tasks.New(rdb)
	if _, err := store.PutQueue(ctx, tasks.Queue{Name: "bench"}); err != nil {
		return r, err
	}
	// Warm up: load the scripts and the connections.
	if err := ceilingScript.Load(ctx, rdb).Err(); err != nil {
		return r, err
	}

	enqueue, claim, complete, ceiling := newRecorder("enqueue (1 job)"), newRecorder("claim"), newRecorder("complete"), newRecorder("ceiling: EVALSHA return 1")
	pid, err := redisPID(ctx, rdb)
	if err != nil {
		return r, err
	}
	// Per phase: the microseconds Redis spent inside the scripts per
	// operation (INFO commandstats), apart from the client, the network and
	// the noise; and how busy redis-server and this process were, which
	// says who held the pace.
	// Each phase's commands, by name, for the breakdown.
	var inRedis []float64
	var busy [][]float64
	phase := func(command string, run func() error) (map[string][2]int64, error) {
		before, err := redisCalls(ctx, rdb)
		if err != nil {
			return nil, err
		}
		cpu := startCPU(pid, os.Getpid())
		if err := run(); err != nil {
			return nil, err
		}
		busy = append(busy, cpu.cores())
		after, err := redisCalls(ctx, rdb)
		if err != nil {
			return nil, err
		}
		_, _, per := callsSince(before, after)
		d := per[command]
		inRedis = append(inRedis, float64(d[1]))
		return per, nil
	}
	per, err := phase("fcall", func() error { return enqueueBatches(ctx, store, "bench", c.jobs, 1, c.concurrency, nil, enqueue) })
	if err != nil {
		return r, err
	}
	enqueueCost := breakdownOf(enqueue.op, c.jobs, per)
	var held []*tasks.Reservation
	per, err = phase("fcall", func() error {
		var err error
		held, err = claimAll(ctx, store, "bench", c.jobs, c.concurrency, claim)
		return err
	})
	if err != nil {
		return r, err
	}
	claimCost := breakdownOf(claim.op, c.jobs, per)
	counted := countCompletions(store)
	per, err = phase("fcall", func() error { return completeAll(ctx, store, held, c.concurrency, complete) })
	if err != nil {
		return r, err
	}
	completeCost := breakdownOf(complete.op, len(held), per)
	// Every complete again, as a client whose answer was lost would: each
	// is answered as before, and none completes a job a second time.
	err = parallel(c.concurrency, len(held), func(_, i int) error {
		_, err := store.Complete(ctx, held[i].Job.ID, held[i].Hold(), nil)
		return err
	})
	if err != nil {
		return r, fmt.Errorf("a retried complete: %w", err)
	}
	_, err = phase("evalsha", func() error {
		return parallel(c.concurrency, c.jobs, func(_, _ int) error {
			return ceiling.time(func() error { return ceilingScript.Run(ctx, rdb, nil).Err() })
		})
	})
	if err != nil {
		return r, err
	}
	bareKeys, err := fillBare(ctx, rdb, 0, c.jobs)
	if err != nil {
		return r, err
	}
	bareClaim, bareComplete := newRecorder("reference: bare claim"), newRecorder("reference: bare complete")
	// The arguments of a claim (now, operator, token, budgets) and of a
	// complete (now, id, token, result).
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	const token = "1b9c456ccab6656a00e30e2289323baa"
	var mu sync.Mutex
	type bareHold struct{ id, op string }
	bareHeld := make([]bareHold, 0, c.jobs)
	_, err = phase("fcall", func() error {
		return parallel(c.concurrency, c.jobs, func(w, _ int) error {
			var id string
			err := bareClaim.time(func() error {
				res, err := rdb.FCall(ctx, "bare_claim", bareKeys, now, "op"+strconv.Itoa(w), token, 100, 1000).Slice()
				if err == nil {
					id, _ = res[1].(string)
				}
				return err
			})
			mu.Lock()
			bareHeld = append(bareHeld, bareHold{id, "op" + strconv.Itoa(w)})
			mu.Unlock()
			return err
		})
	})
	if err != nil {
		return r, err
	}
	_, err = phase("fcall", func() error {
		return parallel(c.concurrency, len(bareHeld), func(_, i int) error {
			return bareComplete.time(func() error {
				return rdb.FCall(ctx, "bare_complete", bareKeys, now, bareHeld[i].id, token, bareHeld[i].op, "").Err()
			})
		})
	})
	if err != nil {
		return r, err
	}

	// The loop of a person working a queue, one call per job. The
	// callers' first claims, one each, are in the breakdown's commands.
	cycle := newRecorder("cycle: complete and claim next")
	if err := fill(ctx, store, "cycle", c.jobs); err != nil {
		return r, err
	}
	per, err = phase("fcall", func() error { return workLoop(ctx, store, "cycle", c.concurrency, cycle) })
	if err != nil {
		return r, err
	}
	cycleCost := breakdownOf("complete & next", cycle.summary().Calls, per)

	// The same loop, bare.
	bareCycle := newRecorder("reference: bare cycle")
	if _, err := fillBare(ctx, rdb, c.jobs, c.jobs); err != nil {
		return r, err
	}
	_, err = phase("fcall", func() error {
		return parallel(c.concurrency, c.concurrency, func(w, _ int) error {
			op := "op" + strconv.Itoa(w)
			res, err := rdb.FCall(ctx, "bare_claim", bareKeys, now, op, token, 100, 1000).Slice()
			for err == nil && res[1] != "" {
				err = bareCycle.time(func() error {
					var err error
					res, err = rdb.FCall(ctx, "bare_cycle", bareKeys, now, res[1], token, op, "", token, 100, 1000).Slice()
					if err == nil {
						res = res[3:] // the next job's id at [1]
					}
					return err
				})
			}
			return err
		})
	})
	if err != nil {
		return r, err
	}

	// The same loop in a queue whose jobs three people each answer: its
	// cost per answer, the last of each job's (which agrees them, a
	// second call) included.
	answer := newRecorder(fmt.Sprintf("answer: complete and claim next, overlap %d", engineOverlap))
	if err := fill(ctx, store, "answers", c.jobs/engineOverlap); err != nil {
		return r, err
	}
	overlap := engineOverlap
	if _, _, err := store.PatchQueue(ctx, "answers", tasks.QueuePatch{Overlap: &overlap}); err != nil {
		return r, err
	}
	per, err = phase("fcall", func() error { return workLoop(ctx, store, "answers", c.concurrency, answer) })
	if err != nil {
		return r, err
	}
	answerCost := breakdownOf("complete & next, one answer of "+strconv.Itoa(engineOverlap), answer.summary().Calls, per)

	// And in a queue whose three answer at once (overlap_at_once): a claim
	// takes a seat of a job others hold, as it would a job in line.
	atOnce := newRecorder(fmt.Sprintf("answer at once: complete and claim next, overlap %d", engineOverlap))
	if err := fill(ctx, store, "seats", c.jobs/engineOverlap); err != nil {
		return r, err
	}
	on := true
	if _, _, err := store.PatchQueue(ctx, "seats", tasks.QueuePatch{Overlap: &overlap, OverlapAtOnce: &on}); err != nil {
		return r, err
	}
	per, err = phase("fcall", func() error { return workLoop(ctx, store, "seats", c.concurrency, atOnce) })
	if err != nil {
		return r, err
	}
	atOnceCost := breakdownOf("complete & next, one answer of "+strconv.Itoa(engineOverlap)+" at once", atOnce.summary().Calls, per)
	// A worker stops once nothing is left that it has not held: others
	// answer what remains, untimed.
	for _, q := range []string{"answers", "seats"} {
		for more := true; more; {
			st, err := store.Stats(ctx, q)
			if err != nil {
				return r, err
			}
			if more = st.Ready > 0; more {
				if err := workLoop(ctx, store, q, engineOverlap, nil); err != nil {
					return r, err
				}
			}
		}
	}

	enqueue100, release, reclaim := newRecorder(fmt.Sprintf("enqueue (%d jobs)", engineBatch)), newRecorder("release (give back)"), newRecorder(fmt.Sprintf("reclaim (%d per call)", cron.Batch))
	more, err := moreOps(ctx, c, rdb, store, phase, enqueue100, release, reclaim, &r)
	if err != nil {
		return r, err
	}
	r.Breakdown = slices.Concat([]breakdown{enqueueCost}, more[:2], []breakdown{claimCost, completeCost, cycleCost, answerCost, atOnceCost}, more[2:])

	r.Ops = []summary{enqueue.summary(), claim.summary(), complete.summary(), ceiling.summary(), bareClaim.summary(), bareComplete.summary(), cycle.summary(), bareCycle.summary(),
		answer.summary(), atOnce.summary(), enqueue100.summary(), release.summary(), reclaim.summary()}
	completed, twice := counted.tally()
	var inStore int64
	for _, q := range []string{"bench", "cycle", "answers", "seats"} {
		st, err := store.Stats(ctx, q)
		if err != nil {
			return r, err
		}
		inStore += st.Completed
		r.check("nothing left ready or reserved in "+q, st.Ready == 0 && st.Reserved == 0, "ready %d, reserved %d", st.Ready, st.Reserved)
	}
	jobs := 2*c.jobs + 2*(c.jobs/engineOverlap)
	r.check("every job completed exactly once", completed == jobs && twice == 0 && inStore == int64(jobs),
		"%d jobs, %d completed once, %d more than once; store counts %d completed", jobs, completed-twice, twice, inStore)
	top := r.Ops[3].PerSecond
	r.fig("concurrent callers", float64(c.concurrency), "")
	for i, op := range r.Ops {
		// Per operation: calls that came together may have gone as one
		// script call.
		r.fig(op.Op+": µs inside Redis per call", inRedis[i]/float64(max(op.Calls, 1)), "µs")
		r.fig(op.Op+": redis-server CPU", busy[i][0], "cores")
		r.fig(op.Op+": bench (client) CPU", busy[i][1], "cores")
	}
	r.fig("bare claim calls/s as a fraction of the ceiling", r.Ops[4].PerSecond/top, "")
	r.fig("bare complete calls/s as a fraction of the ceiling", r.Ops[5].PerSecond/top, "")
	r.fig("bare cycle calls/s as a fraction of the ceiling", r.Ops[7].PerSecond/top, "")
	r.fig("claim calls/s as a fraction of the ceiling", r.Ops[1].PerSecond/top, "")
	r.fig("complete calls/s as a fraction of the ceiling", r.Ops[2].PerSecond/top, "")
	r.fig("cycle calls/s as a fraction of the ceiling", r.Ops[6].PerSecond/top, "")
	return r, nil
}

// engineBatch is how many jobs the engine's batch enqueues carry, and
// engineOverlap how many people answer each job of its queue with overlap.
const (
	engineBatch   = 100
	engineOverlap = 3
)

// enginePhase runs one phase of the engine scenario and returns its Redis
// commands, by name (callsSince's per command); command is the script
// call whose time per call the scenario reports.
type enginePhase func(command string, run func() error) (map[string][2]int64, error)

// moreOps runs the engine's phases of the operations the others leave
// out, each timed by its recorder: c.jobs jobs enqueued engineBatch per
// call, then claimed and released; and c.jobs jobs claimed by one Store,
// then reclaimed cron.Batch per call by one whose clock is past their
// deadline. It returns their breakdowns (the enqueue's per call and per
// job, the release's, the reclaim's) and checks in r that every released
// and reclaimed job is ready again.
func moreOps(ctx context.Context, c config, rdb *redis.Client, store *tasks.Store, phase enginePhase, enqueue, release, reclaim *recorder, r *result) ([]breakdown, error) {
	const toRelease, toReclaim = "release", "reclaim"
	if _, err := store.PutQueue(ctx, tasks.Queue{Name: toRelease}); err != nil {
		return nil, err
	}
	per, err := phase("fcall", func() error {
		return enqueueBatches(ctx, store, toRelease, c.jobs, engineBatch, c.concurrency, nil, enqueue)
	})
	if err != nil {
		return nil, err
	}
	batch := breakdownOf(enqueue.op, enqueue.summary().Calls, per)

	held, err := claimAll(ctx, store, toRelease, c.jobs, c.concurrency, nil)
	if err != nil {
		return nil, err
	}
	per, err = phase("fcall", func() error {
		return parallel(c.concurrency, len(held), func(_, i int) error {
			return release.time(func() error {
				_, err := store.Release(ctx, held[i].Job.ID, held[i].Hold())
				return err
			})
		})
	})
	if err != nil {
		return nil, err
	}
	released := breakdownOf(release.op, len(held), per)

	// Every lease of fill's queue (60 s) has run out by the later clock.
	later := tasks.New(rdb, tasks.WithClock(func() time.Time { return time.Now().Add(2 * time.Minute) }))
	if err := fill(ctx, store, toReclaim, c.jobs); err != nil {
		return nil, err
	}
	if _, err := claimAll(ctx, store, toReclaim, c.jobs, c.concurrency, nil); err != nil {
		return nil, err
	}
	per, err = phase("fcall", func() error {
		for more := true; more; {
			err := reclaim.time(func() error {
				var err error
				_, more, err = later.ReclaimExpired(ctx, toReclaim, cron.Batch)
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	costs := []breakdown{batch, batch.perJob(c.jobs), released, breakdownOf(reclaim.op, reclaim.summary().Calls, per)}

	for _, q := range []string{toRelease, toReclaim} {
		st, err := store.Stats(ctx, q)
		if err != nil {
			return nil, err
		}
		r.check("every job of "+q+" ready again", st.Ready == int64(c.jobs) && st.Reserved == 0, "ready %d of %d, reserved %d", st.Ready, c.jobs, st.Reserved)
	}
	return costs, nil
}

// workLoop has c operators work the queue as people do, one call per job:
// each claims once, then completes and claims the next (Complete & next,
// timed by rec) until none is left.
func workLoop(ctx context.Context, store *tasks.Store, queue string, c int, rec *recorder) error {
	return parallel(c, c, func(w, _ int) error {
		held, err := store.Claim(ctx, queue, fmt.Sprint("op", w))
		for err == nil && held != nil {
			err = rec.time(func() error {
				var err error
				_, held, _, err = store.CompleteNext(ctx, held.Job.ID, held.Hold(), nil)
				return err
			})
		}
		return err
	})
}
