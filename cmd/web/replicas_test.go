package main

import (
	"context"
	"net"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

func TestMinReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master := taskstest.Redis(t)
	for setting, want := range map[int]int{autoReplicas: 0, 0: 0, 2: 2} {
		n, have, err := minReplicas(ctx, master.Client(), setting)
		if err != nil || n != want || have != 0 {
			t.Errorf("without replicas, setting %d: %d (have %d), %v; want %d", setting, n, have, err, want)
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
		n, have, err := minReplicas(ctx, master.Client(), autoReplicas)
		if err == nil && n == 1 && have == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with a replica: %d (have %d), %v; want 1 by default", n, have, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	cl := taskstest.RedisCluster(t, 3)
	if n, have, err := minReplicas(ctx, cl.Client(), autoReplicas); err != nil || n != 0 || have != 0 {
		t.Errorf("cluster without replicas: %d (have %d), %v; want 0", n, have, err)
	}
	replicated, err := taskstest.StartCluster(taskstest.ClusterConfig{Masters: 2, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replicated.Close() })
	if n, have, err := minReplicas(ctx, replicated.Client(), autoReplicas); err != nil || n != 1 || have != 1 {
		t.Errorf("cluster with a replica per master: %d (have %d), %v; want 1", n, have, err)
	}
}
