package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// ceilingScript is the cheapest script there is: what Redis, this client and
// this machine can do per second, the ceiling for any one-script operation.
var ceilingScript = redis.NewScript("return 1")

// runEngine enqueues, claims and completes jobs straight against the Store,
// with c.concurrency simulated operators, one phase per operation so that
// each is a pure stream of one script; then, with the same client and
// concurrency, EVALSHA of "return 1". It checks that every job was
// completed exactly once and none is left.
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
	// Per phase: the microseconds Redis spent per script call inside the
	// script (INFO commandstats), apart from the client, the network and
	// the noise; and how busy redis-server and this process were, which
	// says who held the pace.
	var inRedis []float64
	var busy [][]float64
	phase := func(command string, run func() error) error {
		before, err := redisCalls(ctx, rdb)
		if err != nil {
			return err
		}
		cpu := startCPU(pid, os.Getpid())
		if err := run(); err != nil {
			return err
		}
		busy = append(busy, cpu.cores())
		after, err := redisCalls(ctx, rdb)
		if err != nil {
			return err
		}
		_, _, per := callsSince(before, after)
		d := per[command]
		inRedis = append(inRedis, float64(d[1])/float64(max(d[0], 1)))
		return nil
	}
	err = phase("fcall", func() error {
		return parallel(c.concurrency, c.jobs, func(_, i int) error {
			return enqueue.time(func() error {
				_, err := store.Enqueue(ctx, "bench", []tasks.NewJob{{Title: fmt.Sprint("job ", i)}})
				return err
			})
		})
	})
	if err != nil {
		return r, err
	}
	var mu sync.Mutex
	held := make([]*tasks.Reservation, 0, c.jobs)
	err = phase("fcall", func() error {
		return parallel(c.concurrency, c.jobs, func(w, _ int) error {
			var res *tasks.Reservation
			err := claim.time(func() error {
				var err error
				res, err = store.Claim(ctx, "bench", fmt.Sprint("op", w))
				return err
			})
			if err != nil {
				return err
			}
			if res == nil {
				return errors.New("a claim found nothing while jobs were ready")
			}
			mu.Lock()
			held = append(held, res)
			mu.Unlock()
			return nil
		})
	})
	if err != nil {
		return r, err
	}
	completions := map[string]int{}
	err = phase("fcall", func() error {
		return parallel(c.concurrency, len(held), func(_, i int) error {
			h := held[i]
			err := complete.time(func() error {
				_, err := store.Complete(ctx, h.Job.ID, h.Token, nil)
				return err
			})
			if err == nil {
				mu.Lock()
				completions[h.Job.ID]++
				mu.Unlock()
			}
			return err
		})
	})
	if err != nil {
		return r, err
	}
	err = phase("evalsha", func() error {
		return parallel(c.concurrency, c.jobs, func(_, _ int) error {
			return ceiling.time(func() error { return ceilingScript.Run(ctx, rdb, nil).Err() })
		})
	})
	if err != nil {
		return r, err
	}

	r.Ops = []summary{enqueue.summary(), claim.summary(), complete.summary(), ceiling.summary()}
	st, err := store.Stats(ctx, "bench")
	if err != nil {
		return r, err
	}
	twice := 0
	for _, n := range completions {
		if n != 1 {
			twice++
		}
	}
	r.check("every job completed exactly once", len(completions) == c.jobs && twice == 0 && st.Completed == int64(c.jobs),
		"%d jobs, %d completed once, %d more than once; store counts %d completed", c.jobs, len(completions)-twice, twice, st.Completed)
	r.check("nothing left ready or reserved", st.Ready == 0 && st.Reserved == 0, "ready %d, reserved %d", st.Ready, st.Reserved)
	top := r.Ops[3].PerSecond
	r.fig("concurrent callers", float64(c.concurrency), "")
	for i, op := range r.Ops {
		r.fig(op.Op+": µs inside Redis per call", inRedis[i], "µs")
		r.fig(op.Op+": redis-server CPU", busy[i][0], "cores")
		r.fig(op.Op+": bench (client) CPU", busy[i][1], "cores")
	}
	r.atLeast("claim calls/s as a fraction of the ceiling", r.Ops[1].PerSecond/top, 0.6, "")
	r.atLeast("complete calls/s as a fraction of the ceiling", r.Ops[2].PerSecond/top, 0.6, "")
	return r, nil
}
