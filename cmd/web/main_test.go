package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

func TestCommands(t *testing.T) {
	srv := taskstest.Redis(t)
	env := func(k string) string {
		if k == "CLAIMDESK_REDIS_URL" {
			return "redis://" + srv.Addr()
		}
		return ""
	}
	ctx := context.Background()
	cmd := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, args, env, strings.NewReader(stdin), &out)
		return out.String(), err
	}

	out, err := cmd("", "seed")
	if err != nil || !strings.Contains(out, "4 queues") || !strings.Contains(out, "alice-demo-pass") {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	out, err = cmd("", "seed")
	if err != nil || !strings.Contains(out, "0 jobs added") {
		t.Fatalf("second seed is not idempotent: %v\n%s", err, out)
	}
	if out, err = cmd("", "seed", "--if-empty"); err != nil || !strings.Contains(out, "already has data") {
		t.Fatalf("seed --if-empty: %v\n%s", err, out)
	}
	if _, err := cmd("", "queue", "add", "triage", "--lease-seconds", "60", "--aging-seconds", "30"); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd("s3cret-password\n", "user", "add", "dora", "--role", "operator", "--queues", "triage", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	token, err := cmd("", "token", "add", "dora")
	if err != nil || !strings.HasPrefix(token, "cdt_") || strings.Count(token, "\n") != 1 {
		t.Fatalf("token add printed %q, %v", token, err)
	}
	if _, err := cmd("", "seed", "--reset"); err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client()
	if n, _ := rdb.Exists(ctx, "cd:{triage}:conf").Result(); n != 0 {
		t.Fatal("seed --reset kept a queue that is not in the demo data")
	}

	for _, args := range [][]string{
		{"bogus"}, {"queue"}, {"queue", "add"}, {"user", "list"}, {"serve", "--nope"},
		{"queue", "add", "a", "b"}, {"serve", "--log-level", "loud"},
	} {
		_, err := cmd("", args...)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("%q: error %v, want a usage error", args, err)
		}
	}
	for _, args := range [][]string{{"user", "add", "eve", "--role", "wizard"}, {"queue", "add", "q", "--lease-seconds", "-5"}} {
		_, err := cmd("", args...)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("%q: error %v, want a usage error", args, err)
		}
	}
}

func TestClientFor(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string
	}{
		{"redis://127.0.0.1:6379/0", "*redis.Client"},
		{"127.0.0.1:7000,127.0.0.1:7001", "*redis.ClusterClient"},
		{"redis://127.0.0.1:26379?master_name=main&addr=127.0.0.1:26380", "*redis.Client"},
	} {
		c, err := clientFor(tc.url)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if got := typeName(c); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.url, got, tc.want)
		}
		c.Close()
	}
	if _, err := clientFor("localhost"); err == nil {
		t.Error("a bare host name was accepted")
	}
}

func typeName(c redis.UniversalClient) string {
	switch c.(type) {
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	case *redis.Client:
		return "*redis.Client"
	}
	return "other"
}
