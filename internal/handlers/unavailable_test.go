package handlers_test

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"claimdesk/internal/handlers"
	"claimdesk/internal/tasks/taskstest"
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
