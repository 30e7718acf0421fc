package handlers_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/handlers"
	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"
)

// closeSessionEnded is the close code of a websocket whose session ended.
const closeSessionEnded = 4001

// atOnce bounds how long a change to a user may take to reach the open
// websockets and sessions.
const atOnce = 2 * time.Second

// withinCache bounds how long a change takes to reach requests with an
// API token, which a server trusts for users.CacheTTL.
const withinCache = users.CacheTTL + 500*time.Millisecond

// eventually polls cond every 20 ms until it holds, failing the test after
// the time given.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// closedWithin reads the socket until the server closes it, and fails the
// test unless it did so within d with the code given.
func (s *socket) closedWithin(d time.Duration, code int) {
	s.t.Helper()
	start := time.Now()
	if got := s.closed(); got != code {
		s.t.Fatalf("%s: closed with %d, want %d", s.who, got, code)
	}
	if took := time.Since(start); took > d {
		s.t.Fatalf("%s: closed after %v, want within %v", s.who, took, d)
	}
}

// secondSession logs the user created by person in once more, as from
// another browser.
func (a *app) secondSession(name string) *browser {
	a.t.Helper()
	b := a.browser()
	if b.login(name, "password-"+name); b.status != http.StatusSeeOther {
		a.t.Fatalf("second login of %s: %d", name, b.status)
	}
	return b
}

// loggedOut checks that the browser's session is over: its home page
// sends it to the login page.
func (b *browser) loggedOut(who string) {
	b.t.Helper()
	if b.do("GET", "/", nil); b.status != http.StatusSeeOther || b.body != "/login" {
		b.t.Fatalf("%s: home page answered %d %q, want a redirect to /login", who, b.status, b.body)
	}
}

func TestDisabledUserIsShutOut(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	name, b := a.person(users.Operator, a.queue)
	// A second tab's session, left alone until the user is enabled again.
	idle := a.secondSession(name)
	token, err := a.users.NewToken(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	a.expect("GET", "/api/v1/queues", token, "", 200, "") // the server now trusts the token for a while
	page, _ := a.live("operator", b)

	if err := a.users.Disable(ctx, name); err != nil {
		t.Fatal(err)
	}
	page.closedWithin(atOnce, closeSessionEnded)
	b.loggedOut("disabled operator")
	eventually(t, withinCache, "the disabled user's token refused", func() bool {
		code, _ := a.call("GET", "/api/v1/queues", token, "")
		return code == http.StatusUnauthorized
	})
	a.expect("GET", "/api/v1/queues", token, "", 401, "unauthenticated")
	if b.login(name, "password-"+name); b.status != http.StatusForbidden || !strings.Contains(b.body, "disabled") {
		t.Fatalf("login of a disabled user: %d, want 403 saying the account is disabled", b.status)
	}
	if _, _, err := a.dial(b, a.srv.URL, nil); err == nil {
		t.Fatal("a disabled user opened a websocket")
	}

	// Enabled again: the token works again; the sessions stay over.
	if err := a.users.Enable(ctx, name); err != nil {
		t.Fatal(err)
	}
	eventually(t, withinCache, "the enabled user's token accepted", func() bool {
		code, _ := a.call("GET", "/api/v1/queues", token, "")
		return code == http.StatusOK
	})
	idle.loggedOut("a session of the user begun before they were disabled")
	if b.login(name, "password-"+name); b.status != http.StatusSeeOther {
		t.Fatalf("login after enable: %d", b.status)
	}
	if b.do("GET", "/", nil); b.status != http.StatusOK {
		t.Fatalf("home page after a new login: %d", b.status)
	}
}

func TestNewPasswordEndsSessions(t *testing.T) {
	a := newApp(t)
	name, b := a.person(users.Operator, a.queue)
	other := a.secondSession(name)
	page, _ := a.live("operator", b)

	if err := a.users.Put(context.Background(), users.User{Name: name, Role: users.Operator, Queues: []string{a.queue}}, "a-new-password"); err != nil {
		t.Fatal(err)
	}
	page.closedWithin(atOnce, closeSessionEnded)
	b.loggedOut("the first session")
	other.loggedOut("the second session")
	if b.login(name, "password-"+name); b.status != http.StatusUnauthorized {
		t.Fatalf("login with the old password: %d, want 401", b.status)
	}
	if b.login(name, "a-new-password"); b.status != http.StatusSeeOther {
		t.Fatalf("login with the new password: %d", b.status)
	}
}

func TestRevokedTokenIsRefused(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	kept, err := a.users.NewToken(ctx, a.opName)
	if err != nil {
		t.Fatal(err)
	}
	before, err := a.users.Tokens(ctx, a.opName)
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := a.users.NewToken(ctx, a.opName)
	if err != nil {
		t.Fatal(err)
	}
	a.expect("GET", "/api/v1/queues", revoked, "", 200, "") // trusted for a while
	after, err := a.users.Tokens(ctx, a.opName)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+1 {
		t.Fatalf("Tokens lists %d, then %d after a new one", len(before), len(after))
	}
	id := ""
	for _, tok := range after {
		if !contains(before, tok.ID) {
			id = tok.ID
			if tok.LastUsed.IsZero() {
				t.Errorf("token %s was used, and lists no last use", id)
			}
		}
	}
	if err := a.users.RevokeToken(ctx, id); err != nil {
		t.Fatal(err)
	}
	eventually(t, withinCache, "the revoked token refused", func() bool {
		code, _ := a.call("GET", "/api/v1/queues", revoked, "")
		return code == http.StatusUnauthorized
	})
	a.expect("GET", "/api/v1/queues", revoked, "", 401, "unauthenticated")
	a.expect("GET", "/api/v1/queues", kept, "", 200, "")
}

// contains reports whether a token of the list has the id.
func contains(list []users.Token, id string) bool {
	for _, tok := range list {
		if tok.ID == id {
			return true
		}
	}
	return false
}

func TestRemovedGrantTakesEffectOnOpenSockets(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	kept, removed := a.queue, a.queue+"-gone"
	if _, err := a.tasks.PutQueue(ctx, tasks.Queue{Name: removed}); err != nil {
		t.Fatal(err)
	}
	name, b := a.person(users.Operator, kept, removed)
	page, _ := a.live("operator", b)
	if b.do("GET", "/", nil); !strings.Contains(b.body, `data-queue="`+removed+`"`) {
		t.Fatalf("the home page lacks the granted queue %s", removed)
	}

	if err := a.users.Put(ctx, users.User{Name: name, Role: users.Operator, Queues: []string{kept}}, ""); err != nil {
		t.Fatal(err)
	}
	// The page is told to fetch afresh, and from then on hears nothing of
	// the queue.
	resync := func(n notify.Notice) bool { return n.Type == notify.Resync }
	page.until(resync, func(notify.Notice) bool { return false })
	a.expect("POST", "/api/v1/queues/"+removed+"/jobs", a.super, `{"title":"not for them any more"}`, 201, "")
	a.published()
	out := a.expect("POST", "/api/v1/queues/"+kept+"/jobs", a.super, `{"title":"still theirs"}`, 201, "")
	last := out["job"].(map[string]any)["id"].(string)
	heard := page.until(
		func(n notify.Notice) bool { return n.Type == notify.JobAvailable && n.JobID == last },
		func(n notify.Notice) bool { return n.Queue == removed })
	if len(heard) > 0 {
		t.Errorf("after the grant was removed the socket still got %q", heard)
	}

	for _, path := range []string{"/", "/fragments/home"} {
		if b.do("GET", path, nil); b.status != http.StatusOK || strings.Contains(b.body, removed) {
			t.Errorf("GET %s after the grant was removed: %d, showing %s: %v", path, b.status, removed, strings.Contains(b.body, removed))
		}
	}
}

// A websocket beyond a cap is upgraded only to be closed with the reason a
// page reads, and the refusal is logged, once a minute for each cap and
// user or address, with the setting that raises the cap.
func TestWebsocketCaps(t *testing.T) {
	a := newApp(t)
	cfg := a.config(rdb)
	var logged logBuffer
	cfg.Log = slog.New(slog.NewTextHandler(&logged, nil))
	cfg.SocketsPerUser, cfg.SocketsPerAddress = 2, 3
	a.srv = httptest.NewServer(checked(t, handlers.New(cfg)))
	t.Cleanup(a.srv.Close)

	refused := func(who string, b *browser, code int, reason string) {
		t.Helper()
		d := websocket.Dialer{Jar: b.c.Jar, HandshakeTimeout: wsTimeout}
		conn, res, err := d.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/ws", http.Header{"Origin": {a.srv.URL}})
		if err != nil {
			t.Fatalf("%s: %v, status %d; want an upgrade that is closed with the reason", who, err, status(res))
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(wsTimeout))
		_, msg, err := conn.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != code || ce.Text != reason {
			t.Fatalf("%s: read %q, %v; want closed with %d %q", who, msg, err, code, reason)
		}
	}
	_, ann := a.person(users.Operator, a.queue)
	_, bob := a.person(users.Operator, a.queue)
	first, _ := a.live("ann's first tab", ann)
	a.live("ann's second tab", ann)
	refused("ann's third tab (per user)", ann, 4003, "too many live pages open for you")
	refused("ann's fourth tab (per user)", ann, 4003, "too many live pages open for you")
	a.live("bob's first tab", bob)
	refused("bob's second tab (per address)", bob, 4002, "too many connections from your network")

	// A socket that closes gives its place back.
	first.conn.Close()
	eventually(t, wsTimeout, "a place freed for bob", func() bool {
		conn, _, err := a.dial(bob, a.srv.URL, nil)
		if err != nil {
			return false
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetReadDeadline(time.Now().Add(wsTimeout))
		_, _, err = conn.ReadMessage() // the snapshot, or the refusal
		return err == nil
	})
	refused("ann's tab after bob took the freed place", ann, 4002, "too many connections from your network")

	log := logged.String()
	for setting, want := range map[string]int{"CLAIMDESK_WS_PER_USER": 1, "CLAIMDESK_WS_PER_ADDRESS": 1} {
		if n := strings.Count(log, "raise the cap with "+setting); n != want {
			t.Errorf("the log names %s %d times, want %d (once a minute per user or address):\n%s", setting, n, want, log)
		}
	}
}

// changeAfterRead is a Redis hook that runs change once, right after the
// first command that reads key: a change that lands between two steps of
// the server's, and that no notice tells.
type changeAfterRead struct {
	key    string
	change func()
	once   sync.Once
}

func (h *changeAfterRead) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *changeAfterRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *changeAfterRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); len(args) > 1 && args[1] == h.key {
			h.once.Do(h.change)
		}
		return err
	}
}

func TestUserChangedUnannouncedAsTheSocketOpensClosesIt(t *testing.T) {
	a := newApp(t)
	name, b := a.person(users.Operator, a.queue)
	// A server whose check of the session at the upgrade is followed at
	// once by disabling the user, unannounced: the notice of a change
	// made before the socket joins the hub reaches no socket.
	c := redis.NewClient(&redis.Options{Addr: rdb.(*redis.Client).Options().Addr})
	t.Cleanup(func() { c.Close() })
	c.AddHook(&changeAfterRead{key: keys.User(name), change: func() {
		if err := rdb.HSet(context.Background(), keys.User(name), "disabled", "1").Err(); err != nil {
			t.Error(err)
		}
	}})
	a.srv = httptest.NewServer(checked(t, handlers.New(a.config(c))))
	t.Cleanup(a.srv.Close)
	page, _ := a.live("operator", b)
	page.closedWithin(atOnce, closeSessionEnded)
}

func TestLogoutClosesThatSessionsSockets(t *testing.T) {
	a := newApp(t)
	name, b := a.person(users.Operator, a.queue)
	other := a.secondSession(name)
	page, _ := a.live("the tab of the session logged out", b)
	stays, _ := a.live("a tab of the user's other session", other)

	b.do("GET", "/", nil)
	if b.do("POST", "/logout", url.Values{"_csrf": {b.csrf}}); b.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", b.status)
	}
	page.closedWithin(atOnce, closeSessionEnded)
	b.loggedOut("the session logged out")
	// The other session goes on, its socket too.
	a.enqueue("after one session logged out")
	if got := stays.read(); !strings.Contains(string(got), "after one session logged out") {
		t.Fatalf("the other session's socket: %s", got)
	}
}

func TestSessionRunOutClosesItsSockets(t *testing.T) {
	a := newApp(t)
	cfg := a.config(a.rdb)
	cfg.PingPeriod = 100 * time.Millisecond
	a.srv = httptest.NewServer(checked(t, handlers.New(cfg)))
	t.Cleanup(a.srv.Close)
	_, b := a.person(users.Operator, a.queue)
	page, _ := a.live("operator", b)
	u, _ := url.Parse(a.srv.URL)
	var session string
	for _, ck := range b.c.Jar.Cookies(u) {
		if ck.Name == "claimdesk_session" {
			session = ck.Value
		}
	}
	// The session's twelve hours are over: Redis lets its key go, and
	// nobody announces it.
	if n, err := a.rdb.Del(context.Background(), keys.Session(session)).Result(); err != nil || n != 1 {
		t.Fatalf("deleting the session: %d %v", n, err)
	}
	page.closedWithin(time.Second, closeSessionEnded)
}
