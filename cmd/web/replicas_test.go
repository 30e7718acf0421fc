package main

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

func TestMinReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := taskstest.Redis(t)
	for _, c := range []struct {
		setting string
		want    int
		bad     bool
	}{{"", 0, false}, {"0", 0, false}, {"2", 2, false}, {"-1", 0, true}, {"x", 0, true}, {"17", 0, true}} {
		setting, err := parseMinReplicas(c.setting)
		var u usageError
		if (err != nil) != c.bad || (err != nil && !errors.As(err, &u)) {
			t.Errorf("setting %q: %v; want a usage error: %v", c.setting, err, c.bad)
		}
		if err != nil {
			continue
		}
		n, have, err := minReplicas(ctx, master.Client(), setting)
		if err != nil || n != c.want || have != 0 {
			t.Errorf("without replicas, setting %q: %d (have %d), %v; want %d", c.setting, n, have, err, c.want)
		}
	}

	host, port, _ := net.SplitHostPort(master.Addr())
	replica, err := taskstest.NewServer("--replicaof", host, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, have, err := minReplicas(ctx, master.Client(), -1)
		if err == nil && n == 1 && have == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with a replica: %d (have %d), %v; want 1 by default", n, have, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	cl := taskstest.RedisCluster(t, 3)
	if n, have, err := minReplicas(ctx, cl.Client(), -1); err != nil || n != 0 || have != 0 {
		t.Errorf("cluster without replicas: %d (have %d), %v; want 0", n, have, err)
	}
	replicated, err := taskstest.StartCluster(taskstest.ClusterConfig{Masters: 2, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replicated.Close() })
	if n, have, err := minReplicas(ctx, replicated.Client(), -1); err != nil || n != 1 || have != 1 {
		t.Errorf("cluster with a replica per master: %d (have %d), %v; want 1", n, have, err)
	}
}
