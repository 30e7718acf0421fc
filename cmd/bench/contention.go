package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// postScript is the Lua path of the contention experiment: rank the
// message by a shared counter and store it, in one atomic step.
var postScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], n, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
return n`)

// runContention repeats the Zaqar team's experiment: many concurrent
// producers post messages that must be ranked by a shared counter, once
// with one Lua script per message (claimdesk's way) and once with an
// optimistic WATCH/MULTI transaction that retries when another producer
// moved the counter first (the way Zaqar used before it moved to Lua).
func runContention(ctx context.Context, c config) (result, error) {
	r := result{Scenario: fmt.Sprintf("contention (%d producers ranking messages by one shared counter)", c.producers)}
	srv, err := taskstest.NewServer()
	if err != nil {
		return r, err
	}
	defer srv.Close()
	// One connection per producer: WATCH holds its connection.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: c.producers})
	defer rdb.Close()
	body := `{"event":"invoice.received","amount":4812.0}`

	lua := newRecorder("post via Lua script")
	keys := []string{"{c}:lua:counter", "{c}:lua:ranked", "{c}:lua:bodies"}
	if err := postScript.Load(ctx, rdb).Err(); err != nil {
		return r, err
	}
	err = parallel(c.producers, c.messages, func(_, i int) error {
		return lua.time(func() error {
			return postScript.Run(ctx, rdb, keys, "m"+strconv.Itoa(i), body).Err()
		})
	})
	if err != nil {
		return r, err
	}

	watch := newRecorder("post via WATCH/MULTI")
	wkeys := []string{"{c}:watch:counter", "{c}:watch:ranked", "{c}:watch:bodies"}
	var retries atomic.Int64
	err = parallel(c.producers, c.messages, func(_, i int) error {
		id := "m" + strconv.Itoa(i)
		return watch.time(func() error {
			for {
				err := rdb.Watch(ctx, func(tx *redis.Tx) error {
					n, err := tx.Get(ctx, wkeys[0]).Int64()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, wkeys[0], n+1, 0)
						p.ZAdd(ctx, wkeys[1], redis.Z{Score: float64(n + 1), Member: id})
						p.HSet(ctx, wkeys[2], id, body)
						return nil
					})
					return err
				}, wkeys[0])
				if !errors.Is(err, redis.TxFailedErr) {
					return err
				}
				retries.Add(1) // another producer moved the counter first
			}
		})
	})
	if err != nil {
		return r, err
	}

	r.Ops = []summary{lua.summary(), watch.summary()}
	for _, k := range [][]string{keys, wkeys} {
		n, _ := rdb.Get(ctx, k[0]).Int()
		ranked, _ := rdb.ZCard(ctx, k[1]).Result()
		top, _ := rdb.ZRangeWithScores(ctx, k[1], -1, -1).Result()
		ok := n == c.messages && ranked == int64(c.messages) && len(top) == 1 && top[0].Score == float64(c.messages)
		r.check("every message ranked once, ranks 1.."+strconv.Itoa(c.messages)+" ("+k[0]+")", ok,
			"counter %d, %d ranked", n, ranked)
	}
	r.fig("WATCH/MULTI retries", float64(retries.Load()), "")
	l, w := r.Ops[0], r.Ops[1]
	r.atLeast("Lua throughput ÷ WATCH/MULTI throughput", l.PerSecond/w.PerSecond, 1.6, "×")
	r.atMost("Lua p99 ÷ WATCH/MULTI p99", float64(l.P99/w.P99), 1.0/3, "×")
	return r, nil
}
