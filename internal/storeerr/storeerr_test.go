package storeerr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// reply makes a real Redis server answer the error reply msg.
func reply(t *testing.T, c *redis.Client, msg string) error {
	t.Helper()
	err := c.Eval(context.Background(), "return redis.error_reply(ARGV[1])", nil, msg).Err()
	if err == nil {
		t.Fatalf("no error for reply %q", msg)
	}
	return err
}

func TestTransient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := taskstest.Redis(t)
	c := srv.Client()

	// Genuine conditions of real servers.
	host, port, _ := net.SplitHostPort(srv.Addr())
	replica, err := taskstest.NewServer("--replicaof", host, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Close() })
	lone, err := taskstest.NewServer("--cluster-enabled", "yes")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lone.Close() })
	busy, err := taskstest.NewServer("--busy-reply-threshold", "50")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	gone, err := taskstest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := gone.Addr()
	gone.Close()
	closed := srv.Client()
	closed.Close()

	c.RPush(ctx, "list", "x")
	genuine := map[string]struct {
		err  error
		want bool
	}{
		"write to a replica (READONLY)":       {replica.Client().Set(ctx, "k", "v", 0).Err(), true},
		"cluster without slots (CLUSTERDOWN)": {lone.Client().Get(ctx, "k").Err(), true},
		"connection refused":                  {redis.NewClient(&redis.Options{Addr: goneAddr, MaxRetries: -1}).Ping(ctx).Err(), true},
		"closed client":                       {closed.Ping(ctx).Err(), true},
		"read timeout":                        {pausedRead(t, srv), true},
		"long script (BUSY)":                  {busyReply(t, busy), true},
		"WRONGTYPE":                           {c.Get(ctx, "list").Err(), false},
		"unknown command":                     {c.Do(ctx, "nosuchcommand").Err(), false},
		"script error":                        {c.Eval(ctx, "error('boom')", nil).Err(), false},
		"no such key":                         {c.Get(ctx, "missing").Err(), false},
	}
	for name, g := range genuine {
		if got := Transient(g.err); got != g.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", name, g.err, got, g.want)
		}
		if got := Transient(fmt.Errorf("redis: %w", g.err)); got != g.want {
			t.Errorf("%s, wrapped: Transient = %v, want %v", name, got, g.want)
		}
	}

	// Replies real servers give in states a test cannot cheaply reach
	// (loading a big file, a failover under way), sent as such by a script.
	for msg, want := range map[string]bool{
		"LOADING Redis is loading the dataset in memory":                   true,
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data": true,
		"NOREPLICAS Not enough good replicas to write.":                    true,
		"MISCONF Redis is configured to save RDB snapshots":                true,
		"TRYAGAIN Multiple keys request during rehashing of slot":          true,
		"MOVED 3999 127.0.0.1:6381":                                        true,
		"ASK 3999 127.0.0.1:6381":                                          true,
		"UNBLOCKED force unblock from blocking operation":                  true,
		"ERR max number of clients reached":                                true,
		"LOADINGX not a word we know":                                      false,
		"ERR LOADING is not the first word":                                false,
		"ERR wrong number of arguments":                                    false,
		"OOM command not allowed when used memory > 'maxmemory'":           false,
	} {
		if got := Transient(reply(t, c, msg)); got != want {
			t.Errorf("reply %q: Transient = %v, want %v", msg, got, want)
		}
	}

	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"nil":                {nil, false},
		"plain":              {errors.New("connection refused, said the message"), false},
		"client went away":   {fmt.Errorf("redis: %w", context.Canceled), false},
		"out of time":        {fmt.Errorf("redis: %w", context.DeadlineExceeded), true},
		"not replicated":     {fmt.Errorf("redis: %w: 0 of 1", ErrNotReplicated), true},
		"pool timeout":       {redis.ErrPoolTimeout, true},
		"redis.Nil (a miss)": {redis.Nil, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", name, c.err, got, c.want)
		}
	}
}

// pausedRead returns the error of a read from a server that stops
// answering for longer than the client waits.
func pausedRead(t *testing.T, srv *taskstest.Server) error {
	t.Helper()
	ctx := context.Background()
	if err := srv.Client().Do(ctx, "client", "pause", 500, "all").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 50 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	err := c.Get(ctx, "k").Err()
	if err == nil {
		t.Fatal("a read from a paused server answered")
	}
	srv.Client().Do(ctx, "client", "unpause")
	return err
}

// busyReply returns what a server running a long script answers others.
func busyReply(t *testing.T, srv *taskstest.Server) error {
	t.Helper()
	ctx := context.Background()
	spin := make(chan error, 1)
	go func() { spin <- srv.Client().Eval(ctx, "while true do end", nil).Err() }()
	c := srv.Client()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := c.Ping(ctx).Err()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			c.Do(ctx, "script", "kill")
			<-spin
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("no BUSY reply while a script spins: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBurst(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	b := NewBurst(log, "requests answered 503")
	b.now = func() time.Time { return now }
	lines := func() []string { return strings.Split(strings.TrimSpace(buf.String()), "\n") }

	for range 50 {
		b.Add("store unavailable", errors.New("LOADING"), "path", "/api/v1/claim")
		now = now.Add(100 * time.Millisecond)
	}
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], "level=WARN") || !strings.Contains(l[0], "path=/api/v1/claim") {
		t.Fatalf("a burst of 50 logged %q, want one warning", l)
	}
	b.check() // the burst has not been quiet yet
	if l := lines(); len(l) != 1 {
		t.Fatalf("a burst still going logged its end: %q", l)
	}
	now = now.Add(quiet)
	b.check()
	l := lines()
	if len(l) != 2 || !strings.Contains(l[1], "count=50") || !strings.Contains(l[1], "lasted=4.9s") {
		t.Fatalf("the end of the burst logged %q, want count=50 over 4.9s", l)
	}
	b.Add("store unavailable", errors.New("LOADING"))
	if l := lines(); len(l) != 3 || !strings.Contains(l[2], "err=LOADING") {
		t.Fatalf("a new burst logged %q", l)
	}
	now = now.Add(2 * quiet)
	b.Add("store unavailable", errors.New("LOADING")) // a burst of one ends unremarked
	if l := lines(); len(l) != 4 || strings.Contains(buf.String(), "count=1 ") {
		t.Fatalf("after two bursts of one: %q", l)
	}
}
