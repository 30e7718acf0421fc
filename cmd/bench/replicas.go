package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// runReplicas measures what waiting for a replica costs: on a cluster of
// three masters with one replica each, claims and completes through a
// Store that answers once the master has a change, and through one that
// answers once a replica confirmed it too (WAIT after each script, as
// CLAIMDESK_MIN_REPLICAS=1 does). The two take turns, twice each (A B A
// B), so the machine's noise falls on both alike; the better round of
// each counts. Each round works c.jobs/2 jobs of a fresh queue.
func runReplicas(ctx context.Context, c config) (result, error) {
	r := result{Scenario: "replicas: claim and complete on a cluster with a replica per master, without and with WAIT"}
	cl, err := taskstest.StartCluster(taskstest.ClusterConfig{Masters: 3, Replicas: 1})
	if err != nil {
		return r, err
	}
	defer cl.Close()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), PoolSize: c.concurrency})
	defer client.Close()
	stores := []struct {
		name  string
		store *tasks.Store
	}{
		{"without WAIT", tasks.New(client)},
		{"with WAIT for 1 replica", tasks.New(client, tasks.WithMinReplicas(1, time.Second))},
	}
	counted := countCompletions(stores[0].store, stores[1].store)
	jobs := max(c.jobs/2, 1)
	best := map[string]summary{}
	keep := func(s summary) {
		if s.PerSecond > best[s.Op].PerSecond {
			best[s.Op] = s
		}
	}
	waits, durable := int64(0), int64(0) // WAIT calls the masters saw, and the calls that should have sent one
	for round := range 2 {
		for i, s := range stores {
			queue := fmt.Sprintf("replicas-%d-%d", i, round)
			claim, complete := newRecorder(s.name+": claim"), newRecorder(s.name+": complete")
			master, err := client.MasterForKey(ctx, keys.ForQueue(queue).Conf())
			if err != nil {
				return r, err
			}
			before, err := redisCalls(ctx, master)
			if err != nil {
				return r, err
			}
			if err := claimAndComplete(ctx, s.store, queue, jobs, c.concurrency, claim, complete); err != nil {
				return r, fmt.Errorf("%s: %w", s.name, err)
			}
			after, err := redisCalls(ctx, master)
			if err != nil {
				return r, err
			}
			if i == 1 {
				_, _, per := callsSince(before, after)
				waits += per["wait"][0]
				durable += int64(2 * jobs)
			}
			keep(claim.summary())
			keep(complete.summary())
		}
	}
	for _, s := range stores {
		r.Ops = append(r.Ops, best[s.name+": claim"], best[s.name+": complete"])
	}
	completed, twice := counted.tally()
	want := 2 * len(stores) * jobs
	r.check("every job completed exactly once", completed == want && twice == 0,
		"%d jobs, %d completed, %d more than once", want, completed, twice)
	r.check("every claim and complete with WAIT waited for a replica", waits >= durable,
		"%d WAIT calls for %d claims and completes, none answered without a replica", waits, durable)
	r.fig("concurrent callers", float64(c.concurrency), "")
	r.fig("claim calls/s with WAIT as a fraction of without", r.Ops[2].PerSecond/r.Ops[0].PerSecond, "")
	r.fig("complete calls/s with WAIT as a fraction of without", r.Ops[3].PerSecond/r.Ops[1].PerSecond, "")
	return r, nil
}

// claimAndComplete fills a fresh queue with n jobs, then claims them all
// and completes them all, with c concurrent callers, timing each call.
func claimAndComplete(ctx context.Context, store *tasks.Store, queue string, n, c int, claim, complete *recorder) error {
	if err := fill(ctx, store, queue, n); err != nil {
		return err
	}
	held, err := claimAll(ctx, store, queue, n, c, claim)
	if err != nil {
		return err
	}
	return completeAll(ctx, store, held, c, complete)
}

// claimAll claims n jobs of the queue with c concurrent callers, each call
// timed by rec, and returns the reservations.
func claimAll(ctx context.Context, store *tasks.Store, queue string, n, c int, rec *recorder) ([]*tasks.Reservation, error) {
	var mu sync.Mutex
	held := make([]*tasks.Reservation, 0, n)
	err := parallel(c, n, func(w, _ int) error {
		var res *tasks.Reservation
		err := rec.time(func() error {
			var err error
			res, err = store.Claim(ctx, queue, fmt.Sprint("op", w))
			return err
		})
		if err == nil && res == nil {
			err = fmt.Errorf("a claim of %s found nothing while jobs were ready", queue)
		}
		if err != nil {
			return err
		}
		mu.Lock()
		held = append(held, res)
		mu.Unlock()
		return nil
	})
	return held, err
}

// completeAll completes the reservations with c concurrent callers, each
// call timed by rec.
func completeAll(ctx context.Context, store *tasks.Store, held []*tasks.Reservation, c int, rec *recorder) error {
	return parallel(c, len(held), func(_, i int) error {
		return rec.time(func() error {
			_, err := store.Complete(ctx, held[i].Job.ID, held[i].Hold(), nil)
			return err
		})
	})
}
