package taskstest

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := s.Client()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("get = %q, %v; want v", got, err)
	}

	addr := s.Addr()
	if err := s.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if s.Addr() != addr {
		t.Fatalf("addr after restart = %s, want %s", s.Addr(), addr)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Fatal("server still accepts connections after Close")
	}
}

func TestServerExtraArgsOverride(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := NewServer("--appendonly", "yes")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := s.Client()
	if err := c.Set(ctx, "k", "kept", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "kept" {
		t.Fatalf("get after restart with appendonly = %q, %v; want kept", got, err)
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := RedisCluster(t, 3)
	if n := len(cl.Addrs()); n != 3 {
		t.Fatalf("len(Addrs()) = %d, want 3", n)
	}
	for _, node := range cl.nodes {
		info, err := node.Client().ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatalf("cluster info on %s: %v", node.Addr(), err)
		}
		for _, want := range []string{"cluster_state:ok\r\n", "cluster_known_nodes:3\r\n"} {
			if !strings.Contains(info, want) {
				t.Errorf("cluster info on %s lacks %q:\n%s", node.Addr(), want, info)
			}
		}
	}
	client := cl.Client()

	var masters []string
	for _, key := range []string{"{a}x", "{b}x", "{c}x"} {
		m, err := client.MasterForKey(ctx, key)
		if err != nil {
			t.Fatalf("master for %s: %v", key, err)
		}
		if !slices.Contains(masters, m.Options().Addr) {
			masters = append(masters, m.Options().Addr)
		}
	}
	if len(masters) < 2 {
		t.Fatalf("keys with different hash tags all live on %v", masters)
	}

	got, err := client.Eval(ctx, `
		redis.call('SET', KEYS[1], ARGV[1])
		redis.call('SET', KEYS[2], ARGV[1])
		return redis.call('MGET', KEYS[1], KEYS[2])`,
		[]string{"{t}1", "{t}2"}, "v").StringSlice()
	if err != nil || !slices.Equal(got, []string{"v", "v"}) {
		t.Fatalf("eval = %q, %v; want [v v]", got, err)
	}
}

func TestRedis(t *testing.T) {
	t.Parallel()
	if err := Redis(t).Client().Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

func TestClusterFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := mustStart(t, func() (*Cluster, error) {
		return StartCluster(ClusterConfig{Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	})
	if n := len(cl.Nodes()); n != 6 {
		t.Fatalf("len(Nodes()) = %d, want 6", n)
	}
	client := cl.Client()
	if err := client.Set(ctx, "{q}x", "kept", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	old, err := cl.MasterOf(ctx, "{q}x")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := old.Client().Wait(ctx, 1, time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("wait = %d, %v; want 1 replica", n, err)
	}
	old.Kill()
	err = waitFor(clusterTimeout, func() error {
		m, err := cl.MasterOf(ctx, "{q}x")
		if err != nil {
			return err
		}
		if m == old {
			return errors.New("the killed master still owns the slot")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("no replica took over: %v", err)
	}
	// The client learns of the new master when it reads the slot map again
	// (in the background).
	var got string
	err = waitFor(clusterTimeout, func() error {
		client.ReloadState(ctx)
		got, err = client.Get(ctx, "{q}x").Result()
		return err
	})
	if err != nil || got != "kept" {
		t.Fatalf("get after failover = %q, %v; want kept", got, err)
	}
	if err := old.Restart(); err != nil {
		t.Fatalf("restart the old master: %v", err)
	}
}
