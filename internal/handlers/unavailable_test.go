package handlers_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/handlers"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// While the store cannot be reached, every request answers 503 with
// Retry-After, the API in JSON and pages in words, and a burst of them is
// one warning in the log, never an internal error.
func TestStoreTroubleAnswers503(t *testing.T) {
	a := newApp(t)
	store := taskstest.Redis(t)
	logs := &logBuffer{}
	srv := a.serverWith(store.Client(), func(cfg *handlers.Config, _ *http.Server) {
		cfg.Log = slog.New(slog.NewTextHandler(logs, nil))
	})
	store.Kill()

	get := func(path string, cookie bool) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if cookie {
			req.AddCookie(&http.Cookie{Name: "claimdesk_session", Value: "some-session-token"})
		} else {
			req.Header.Set("Authorization", "Bearer cdt_whatever-token-value-000000")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(body)
	}
	for range 50 {
		res, body := get("/api/v1/queues", false)
		if res.StatusCode != 503 || res.Header.Get("Retry-After") != "1" || !strings.Contains(body, `"code":"unavailable"`) {
			t.Fatalf("API while the store is down: %d, Retry-After %q, %s", res.StatusCode, res.Header.Get("Retry-After"), body)
		}
	}
	res, page := get("/", true)
	if res.StatusCode != 503 || res.Header.Get("Retry-After") != "1" || !strings.Contains(page, "cannot reach its store for a moment") {
		t.Fatalf("page while the store is down: %d, Retry-After %q, %s", res.StatusCode, res.Header.Get("Retry-After"), page)
	}
	log := logs.String()
	if n := strings.Count(log, "store unavailable"); n != 1 || strings.Contains(log, "level=ERROR") {
		t.Fatalf("51 requests answered 503 logged %d warnings about it; the log:\n%s", n, log)
	}
}

// A request whose client went away while it waited for the store is not a
// failure of the server: it is logged at debug, never as an error.
func TestAbandonedRequestIsNoError(t *testing.T) {
	a := newApp(t)
	// A store client with one connection, which the test holds: the
	// server's next command waits for it until the request ends.
	one := redis.NewClient(&redis.Options{Addr: rdb.(*redis.Client).Options().Addr, PoolSize: 1, PoolTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = one.Close() })
	logs := &logBuffer{}
	srv := a.serverWith(one, func(cfg *handlers.Config, _ *http.Server) {
		cfg.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	// A Conn keeps the connection its first command took until it is
	// closed: once the ping is answered, the pool has none to give.
	held := one.Conn()
	if err := held.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/queues/"+a.queue+"/claim", nil)
	req.Header.Set("Authorization", "Bearer "+a.operator)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("the claim was answered %d while the store's one connection was held", res.StatusCode)
	}
	eventually(t, 5*time.Second, "the server to give up on the abandoned request", func() bool {

		return strings.Contains(logs.String(), "abandoned")
	})
	if log := logs.String(); strings.Contains(log, "level=ERROR") || strings.Contains(log, "level=WARN") {
		t.Fatalf("an abandoned request was logged as a failure:\n%s", log)
	}
}
