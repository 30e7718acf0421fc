package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

// Two instances on one Redis with an append-only file: each instance, and
// then Redis, is killed mid-load and started again. Redis writes its
// append-only file before it answers, so a kill loses nothing it answered.
func TestKillWebAndRedisUnderLoad(t *testing.T) {
	t.Parallel()
	redis := aofRedis(t)
	d := deploy(t, "redis://"+redis.Addr(), 10)
	run(t, d, plan{loadFor: 30 * time.Second, faults: kills(t, d, redis)})
}

// aofRedis starts a Redis that writes every change to its append-only
// file before it answers, syncing it to disk every second.
func aofRedis(t *testing.T) *taskstest.Server {
	t.Helper()
	redis, err := taskstest.NewServer("--appendonly", "yes", "--appendfsync", "everysec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redis.Close() })
	return redis
}

// kills are the faults of a deployment on one Redis: kill -9 of each
// instance in turn, started again 2 s later, then of Redis, started again
// 1 s later.
func kills(t *testing.T, d *deployment, redis *taskstest.Server) []fault {
	restartWeb := func(i int) func() time.Time {
		return func() time.Time {
			d.webs[i].kill()
			time.Sleep(2 * time.Second)
			d.webs[i].start()
			return time.Now()
		}
	}
	return []fault{
		{5 * time.Second, "kill -9 of instance 1", restartWeb(0)},
		{12 * time.Second, "kill -9 of instance 2", restartWeb(1)},
		{19 * time.Second, "kill -9 of Redis", func() time.Time {
			redis.Kill()
			time.Sleep(time.Second)
			if err := redis.Restart(); err != nil {
				t.Fatalf("restart Redis: %v", err)
			}
			return time.Now()
		}},
	}
}

// Two instances on a cluster of three masters with two replicas each,
// waiting for one replica to confirm every change: the master of the
// queue's slot is killed mid-load, a replica takes over, and no answered
// claim or completion is forgotten.
func TestClusterFailoverUnderLoad(t *testing.T) {
	t.Parallel()
	cl, err := taskstest.StartCluster(taskstest.ClusterConfig{Masters: 3, Replicas: 2, NodeTimeout: time.Second,
		Args: []string{"--appendonly", "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	d := deploy(t, strings.Join(cl.Addrs(), ","), 10, "CLAIMDESK_MIN_REPLICAS=1")
	ctx := context.Background()
	run(t, d, plan{loadFor: 30 * time.Second, checkAnswered: true, faults: []fault{
		{10 * time.Second, "kill -9 of the queue's master", func() time.Time {
			old, err := cl.MasterOf(ctx, "{"+queue+"}")
			if err != nil {
				t.Fatal(err)
			}
			old.Kill()
			killed := time.Now()
			for {
				m, err := cl.MasterOf(ctx, "{"+queue+"}")
				if err == nil && m != old {
					t.Logf("a replica took over %v after the master died", time.Since(killed).Round(10*time.Millisecond))
					return time.Now()
				}
				if time.Since(killed) > 30*time.Second {
					t.Fatalf("no replica took over within 30s: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}},
	}})
}
