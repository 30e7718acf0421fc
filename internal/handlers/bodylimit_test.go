package handlers_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"claimdesk/internal/handlers"
	"claimdesk/internal/tasks"
)

// logBuffer collects what a server logs, from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// A page sent a body over the limit answers 413 with the error page, as
// the API does, and nothing panics or changes.
func TestOversizedPageBodyAnswers413(t *testing.T) {
	a := newApp(t)
	logs := &logBuffer{}
	srv := a.serverWith(a.rdb, func(cfg *handlers.Config, hs *http.Server) {
		cfg.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		hs.ErrorLog = log.New(logs, "", 0)
	})
	id := a.enqueue("held")
	_, token := a.claim()
	op := a.browser()
	op.base = srv.URL
	op.login(a.opName, "password-"+a.opName)
	anonymous := a.browser()
	anonymous.base = srv.URL

	huge := "notes=" + strings.Repeat("a", 17<<20)
	for _, tc := range []struct {
		name string
		b    *browser
		path string
	}{
		{"anonymous", anonymous, "/jobs/" + id + "/complete"},
		{"the holder", op, "/jobs/" + id + "/complete"},
		{"the login", anonymous, "/login"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sent := range []struct {
				how  string
				body io.Reader
			}{
				{"with its length", strings.NewReader(huge + "&_csrf=" + tc.b.csrf + "&token=" + token)},
				// A reader of no known length: sent chunked.
				{"chunked", io.MultiReader(strings.NewReader("_csrf="+tc.b.csrf+"&token="+token+"&notes="), strings.NewReader(strings.Repeat("a", 2<<20)))},
			} {
				req, _ := http.NewRequest("POST", srv.URL+tc.path, sent.body)
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				res, err := tc.b.c.Do(req)
				if err != nil {
					t.Fatalf("%s: no answer: %v\n%s", sent.how, err, logs)
				}
				var page bytes.Buffer
				_, _ = page.ReadFrom(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(page.String(), `data-testid="error-message"`) ||
					!strings.Contains(page.String(), "more than claimdesk takes") {
					t.Errorf("%s: %d %.300s, want 413 and the error page", sent.how, res.StatusCode, page.String())
				}
			}
		})
	}
	if l := logs.String(); strings.Contains(l, "panic") || strings.Contains(l, "goroutine ") {
		t.Errorf("the log has a panic:\n%.2000s", l)
	}
	if j, err := a.tasks.Get(context.Background(), id); err != nil || j.State != tasks.StateReserved {
		t.Errorf("the job after the refused posts: %+v, %v", j, err)
	}
	// The holder's session still works.
	if op.do("GET", "/jobs/"+id, nil); op.status != http.StatusOK {
		t.Errorf("the holder's work page after the refused post: %d", op.status)
	}
}
