package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"claimdesk/internal/handlers"
	"claimdesk/internal/keys"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// sessionWrites counts writes of web sessions (note, as a Redis hook).
type sessionWrites struct{ n atomic.Int64 }

// note counts the command if it writes a session.
func (h *sessionWrites) note(cmd redis.Cmder) {
	if key, ok := cmd.Args()[min(1, len(cmd.Args())-1)].(string); ok && cmd.Name() == "set" && strings.HasPrefix(key, keys.Session("")) {
		h.n.Add(1)
	}
}

// countingSessionWrites starts a server whose Redis client counts the
// writes of sessions.
func (a *app) countingSessionWrites() (*httptest.Server, *sessionWrites) {
	writes := &sessionWrites{}
	srv := a.serverWith(a.rdb, func(cfg *handlers.Config, _ *http.Server) {
		r := redis.NewClient(&redis.Options{Addr: a.rdb.(*redis.Client).Options().Addr})
		a.t.Cleanup(func() { r.Close() })
		r.AddHook(taskstest.Hook(writes.note))
		cfg.Redis = r
	})
	return srv, writes
}

// Reading pages and their live fragments leaves the session as it is, so
// that a refresh running beside a form post cannot undo what the post
// saved (the flash that says what happened).
func TestReadingPagesDoesNotRewriteTheSession(t *testing.T) {
	a := newApp(t)
	srv, writes := a.countingSessionWrites()
	b := a.browser()
	b.base = srv.URL
	b.login(a.opName, "password-"+a.opName)
	b.do("GET", "/", nil) // the home page pops the login's flash, if any
	before := writes.n.Load()
	for _, path := range []string{"/", "/fragments/home", "/fragments/home", "/"} {
		if b.do("GET", path, nil); b.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, b.status)
		}
	}
	if n := writes.n.Load() - before; n != 0 {
		t.Fatalf("reading pages wrote the session %d times, want none", n)
	}
}

// A visitor who is not logged in costs Redis nothing: the login page and
// an error page store no session (anyone could otherwise fill Redis with
// them), and the login form's CSRF token rides in a cookie of its own,
// which the form must repeat.
func TestVisitorsStoreNoSession(t *testing.T) {
	a := newApp(t)
	srv, writes := a.countingSessionWrites()
	for range 5 {
		visitor := a.browser()
		visitor.base = srv.URL
		for _, path := range []string{"/login", "/no-such-page", "/login?next=/supervisor"} {
			visitor.do("GET", path, nil)
		}
		if visitor.csrf == "" {
			t.Fatal("the login page has no CSRF token")
		}
	}
	if n := writes.n.Load(); n != 0 {
		t.Fatalf("anonymous page views stored %d sessions, want none", n)
	}

	// The form's token without its cookie, or another visitor's, is refused.
	b, other := a.browser(), a.browser()
	b.base, other.base = srv.URL, srv.URL
	b.do("GET", "/login", nil)
	other.do("GET", "/login", nil)
	if b.csrf == other.csrf {
		t.Fatal("two visitors were given the same CSRF token")
	}
	form := url.Values{"name": {a.opName}, "password": {"password-" + a.opName}, "_csrf": {other.csrf}}
	if b.do("POST", "/login", form); b.status != http.StatusForbidden {
		t.Fatalf("login with another visitor's CSRF token: %d, want 403", b.status)
	}
	bare := a.browser()
	bare.base = srv.URL
	form.Set("_csrf", b.csrf)
	if bare.do("POST", "/login", form); bare.status != http.StatusForbidden {
		t.Fatalf("login with a CSRF token but not its cookie: %d, want 403", bare.status)
	}
	if b.login(a.opName, "password-"+a.opName); b.status != http.StatusSeeOther || b.body != "/" {
		t.Fatalf("login: %d %s", b.status, b.body)
	}
	if writes.n.Load() == 0 {
		t.Fatal("the login stored no session")
	}
	// Logged in, the session holds the token, and the visitor's cookie is gone.
	u, _ := url.Parse(srv.URL)
	for _, ck := range b.c.Jar.Cookies(u) {
		if ck.Name == "claimdesk_csrf" {
			t.Fatalf("the visitor's CSRF cookie outlived the login: %v", ck)
		}
	}
	visitorToken := b.csrf
	b.do("GET", "/", nil)
	if b.csrf == visitorToken {
		t.Fatal("the session kept the visitor's CSRF token")
	}
	if b.do("POST", "/away", url.Values{"_csrf": {visitorToken}, "away": {"1"}}); b.status != http.StatusForbidden {
		t.Fatalf("a form post after the login with the visitor's token: %d, want 403", b.status)
	}
	if b.do("POST", "/away", url.Values{"_csrf": {b.csrf}, "away": {"1"}}); b.status >= 400 {
		t.Fatalf("a form post after the login, with the session's token: %d", b.status)
	}
}
