package handlers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"claimdesk/internal/handlers"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// appWith is an app over a Redis of the test's own, whose server is
// configured by change: every request from this machine comes from one
// address, so tests of what is counted per address keep to themselves.
func appWith(t *testing.T, change func(*handlers.Config)) *app {
	t.Helper()
	a := newAppOn(t, taskstest.Redis(t).Client())
	cfg := a.config(a.rdb)
	change(&cfg)
	a.srv.Close()
	a.srv = httptest.NewServer(checked(t, handlers.New(cfg)))
	t.Cleanup(a.srv.Close)
	return a
}

// retryAfter is the last response's Retry-After in seconds, failing the
// test unless it is a whole number of seconds, at least 1.
func (b *browser) retryAfter() int {
	b.t.Helper()
	n, err := strconv.Atoi(b.got.Get("Retry-After"))
	if err != nil || n < 1 {
		b.t.Fatalf("Retry-After %q, want whole seconds ≥ 1", b.got.Get("Retry-After"))
	}
	return n
}

// failUntilThrottled sends failed logins, each with the headers forwarded
// gives it, until one is refused as throttled, and returns how many were
// sent; the test fails if none is within 600, past the 500 failures an
// address has in 5 minutes (internal/users).
func failUntilThrottled(b *browser, forwarded func(i int) http.Header) int {
	b.t.Helper()
	b.do("GET", "/login", nil)
	// A name longer than any user's is a failed login that costs no bcrypt.
	long := strings.Repeat("n", users.MaxNameLen+1)
	for i := 1; i <= 600; i++ {
		b.header = forwarded(i)
		b.do("POST", "/login", url.Values{"name": {long}, "password": {"guess"}, "_csrf": {b.csrf}})
		switch b.status {
		case http.StatusTooManyRequests:
			b.retryAfter()
			return i
		case http.StatusUnauthorized:
		default:
			b.t.Fatalf("failed login %d: %d", i, b.status)
		}
	}
	b.t.Fatal("600 failed logins from one address, none throttled")
	return 0
}

// A client that is no trusted proxy cannot pass for other addresses.
func TestForwardedAddressesFromAnUntrustedPeerCountForNothing(t *testing.T) {
	a := appWith(t, func(*handlers.Config) {})
	failUntilThrottled(a.browser(), func(i int) http.Header {
		return http.Header{"X-Forwarded-For": {fmt.Sprint("203.0.113.", i)}, "X-Real-IP": {fmt.Sprint("198.51.100.", i)}}
	})
}

// Behind a trusted proxy the client is the last address it forwards that
// is not a trusted proxy's; private addresses are not trusted unless
// configured.
func TestATrustedProxyForwardsTheClient(t *testing.T) {
	_, proxies, _ := net.ParseCIDR("127.0.0.0/8")
	a := appWith(t, func(c *handlers.Config) { c.TrustedProxies = []*net.IPNet{proxies} })
	b := a.browser()
	// What the client claims (left) varies; the proxies append what they
	// saw: the client 10.0.0.7, then another proxy of ours.
	n := failUntilThrottled(b, func(i int) http.Header {
		return http.Header{"X-Forwarded-For": {fmt.Sprintf("203.0.113.%d, 10.0.0.7", i), "127.0.0.9"}}
	})
	if n < 2 {
		t.Fatalf("throttled at the first failed login")
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"the same client", http.Header{"X-Forwarded-For": {"10.0.0.7"}}, http.StatusTooManyRequests},
		{"another client", http.Header{"X-Forwarded-For": {"10.0.0.8"}}, http.StatusUnauthorized},
		{"the proxy itself, X-Real-IP ignored", http.Header{"X-Real-IP": {"10.0.0.7"}}, http.StatusUnauthorized},
	} {
		b.header = tc.header
		b.do("POST", "/login", url.Values{"name": {"nobody-at-all"}, "password": {"guess"}, "_csrf": {b.csrf}})
		if b.status != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, b.status, tc.want)
		}
	}
}

// Concurrent guesses are counted before any password is checked: no more
// than the limit (10 per name and address) are answered "wrong".
func TestConcurrentLoginGuessesAreCountedFirst(t *testing.T) {
	a := appWith(t, func(*handlers.Config) {})
	b := a.browser()
	b.do("GET", "/login", nil)
	const guesses = 30
	statuses := make([]int, guesses)
	retry := make([]string, guesses)
	var wg sync.WaitGroup
	for i := range guesses {
		wg.Go(func() {
			res, err := b.c.PostForm(b.base+"/login", url.Values{"name": {a.opName}, "password": {"guess"}, "_csrf": {b.csrf}})
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			statuses[i], retry[i] = res.StatusCode, res.Header.Get("Retry-After")
		})
	}
	wg.Wait()
	wrong := 0
	for i, s := range statuses {
		switch s {
		case http.StatusUnauthorized:
			wrong++
		case http.StatusTooManyRequests:
			if n, err := strconv.Atoi(retry[i]); err != nil || n < 1 {
				t.Errorf("a throttled login's Retry-After: %q", retry[i])
			}
		default:
			t.Errorf("a guess answered %d", s)
		}
	}
	if wrong > 10 {
		t.Fatalf("%d of %d concurrent guesses were checked, want at most 10", wrong, guesses)
	}
}

// A login form is small: a larger one is refused before it is read, with
// or without its length told first, and logs nobody in.
func TestLoginBodyIsSmall(t *testing.T) {
	a := newApp(t)
	b := a.browser()
	b.do("GET", "/login", nil)
	form := url.Values{"name": {a.opName}, "password": {"password-" + a.opName}, "_csrf": {b.csrf},
		"padding": {strings.Repeat("x", 64<<10)}}
	if b.do("POST", "/login", form); b.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 64 KiB login form: %d, want 413", b.status)
	}
	req, _ := http.NewRequest("POST", b.base+"/login", io.MultiReader(strings.NewReader(form.Encode())))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if req.ContentLength > 0 || res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 64 KiB login form sent in chunks: %d, want 413", res.StatusCode)
	}
	if b.do("GET", "/", nil); b.status != http.StatusSeeOther || b.body != "/login" {
		t.Fatalf("after the refused logins, home: %d %s; want the login page", b.status, b.body)
	}
	if b.login(a.opName, "password-"+a.opName); b.status != http.StatusSeeOther || b.body != "/" {
		t.Fatalf("a login of the usual size: %d %s", b.status, b.body)
	}
}

// Rate limits per user (whether by API token or session) and per address
// hold on the API, the websocket and the login; past one, the API answers
// JSON and the pages a page, each with Retry-After.
func TestRateLimits(t *testing.T) {
	a := appWith(t, func(c *handlers.Config) {
		c.RateLimits = handlers.RateLimits{User: redis_rate.PerMinute(3), Address: redis_rate.PerMinute(8), Login: redis_rate.PerMinute(2)}
	})
	op := a.browser()
	if op.login(a.opName, "password-"+a.opName); op.status != http.StatusSeeOther { // login 1 of 2
		t.Fatalf("login: %d", op.status)
	}
	conn, _, err := a.dial(op, a.srv.URL, nil) // the operator's 1st request, the address's 1st
	if err != nil {
		t.Fatalf("the first websocket: %v", err)
	}
	conn.Close()
	api := a.browser()
	api.header = http.Header{"Authorization": {"Bearer " + a.operator}}
	for i := 2; i <= 3; i++ {
		if api.do("GET", "/api/v1/queues", nil); api.status != http.StatusOK {
			t.Fatalf("the operator's request %d: %d", i, api.status)
		}
	}
	// The operator's 4th: refused, as JSON.
	a.expect("GET", "/api/v1/queues", a.operator, "", http.StatusTooManyRequests, "rate_limited")
	if api.do("GET", "/api/v1/queues", nil); api.status != http.StatusTooManyRequests {
		t.Fatalf("the operator's 5th request: %d", api.status)
	}
	if n := api.retryAfter(); n > 20 {
		t.Fatalf("Retry-After %d at 3/m, want at most 20", n)
	}
	// The websocket of the operator's session shares the operator's limit.
	_, res, err := a.dial(op, a.srv.URL, nil)
	if err == nil || status(res) != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("a websocket past the operator's limit: %v, status %d", err, status(res))
	}
	// Per address: so far 6 counted (refusals by the user's limit count
	// for the address); two more of another user, then none.
	a.expect("GET", "/api/v1/queues", a.super, "", http.StatusOK, "")
	a.expect("GET", "/api/v1/queues", a.super, "", http.StatusOK, "")
	a.expect("GET", "/api/v1/queues", a.producer, "", http.StatusTooManyRequests, "rate_limited")

	// Logins: the second of the minute, then a page that says to wait.
	b := a.browser()
	if b.login(a.opName, "wrong-password"); b.status != http.StatusUnauthorized {
		t.Fatalf("login 2 of 2: %d", b.status)
	}
	b.do("POST", "/login", url.Values{"name": {a.opName}, "password": {"password-" + a.opName}, "_csrf": {b.csrf}})
	if b.status != http.StatusTooManyRequests || !strings.Contains(b.body, "Too many requests") ||
		!strings.HasPrefix(b.got.Get("Content-Type"), "text/html") {
		t.Fatalf("login 3 of 2: %d %s", b.status, b.got.Get("Content-Type"))
	}
	b.retryAfter()
}

// The default limits of the login let a floor of 2,000 people behind one
// NAT address log in at once, each with their own name, and a second
// wave in the same minute; they cap the tries at one name, from whatever
// addresses.
func TestLoginLimitsLetAFloorIn(t *testing.T) {
	t.Parallel()
	login := handlers.LoginLimits(rdb)
	const floor = 2000
	for wave := range 2 {
		errs := make([]error, floor)
		var wg sync.WaitGroup
		for i := range floor {
			wg.Go(func() { errs[i] = login(fmt.Sprintf("floor-%d-%d", wave, i), "203.0.113.40") })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("wave %d: login %d of %d from one address: %v", wave+1, i+1, floor, err)
			}
		}
	}
	max := handlers.DefaultRateLimits.LoginUser.Burst
	for i := range max {
		if err := login("floor-guessed", fmt.Sprintf("198.51.100.%d", i+1)); err != nil {
			t.Fatalf("try %d at one name: %v", i+1, err)
		}
	}
	// The name is counted as the login reads it: trimmed, in lower case.
	if err := login(" Floor-Guessed ", "198.51.100.200"); err == nil || err.Error() != "429 rate_limited" {
		t.Fatalf("try %d at one name, from yet another address: %v, want 429", max+1, err)
	}
}

// Requests with made-up tokens count against their address too: a flood
// of guesses is limited like any other.
func TestRateLimitsCountUnknownTokens(t *testing.T) {
	a := appWith(t, func(c *handlers.Config) {
		c.RateLimits = handlers.RateLimits{Address: redis_rate.PerMinute(3)}
	})
	for i := range 3 {
		a.expect("GET", "/api/v1/queues", fmt.Sprintf("cdt_made-up-token-%d", i), "", http.StatusUnauthorized, "unauthenticated")
	}
	a.expect("GET", "/api/v1/queues", "cdt_made-up-token-3", "", http.StatusTooManyRequests, "rate_limited")
	a.expect("GET", "/api/v1/queues", a.operator, "", http.StatusTooManyRequests, "rate_limited")
}

// limiterCalls counts the rate limiter's calls (note, as a Redis hook).
type limiterCalls struct{ n atomic.Int64 }

// note counts the command if it is the rate limiter's.
func (h *limiterCalls) note(cmd redis.Cmder) {
	for _, arg := range cmd.Args() {
		if s, ok := arg.(string); ok && strings.HasPrefix(s, "rate:") {
			h.n.Add(1)
			return
		}
	}
}

// A busy client asks Redis for a few requests at a time, and still never
// gets more than its limit.
func TestRateLimitsPrefetchWithoutExceeding(t *testing.T) {
	calls := &limiterCalls{}
	a := appWith(t, func(c *handlers.Config) {
		r := redis.NewClient(&redis.Options{Addr: c.Redis.(*redis.Client).Options().Addr})
		t.Cleanup(func() { r.Close() })
		r.AddHook(taskstest.Hook(calls.note))
		c.Redis = r
		c.RateLimits = handlers.RateLimits{User: redis_rate.PerSecond(20), Address: redis_rate.PerSecond(1000)}
	})
	start := time.Now()
	allowed := 0
	for range 60 {
		switch status, _ := a.call("GET", "/api/v1/queues", a.operator, ""); status {
		case http.StatusOK:
			allowed++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("request answered %d", status)
		}
	}
	elapsed := time.Since(start)
	// 20 at once (the burst), then 20 a second.
	if most := 20 + int(20*elapsed.Seconds()) + 1; allowed > most || allowed < 20 {
		t.Fatalf("%d of 60 requests in %v allowed at 20/s, want 20 to %d", allowed, elapsed, most)
	}
	// Per request, two limits (user and address); asked 2 and 100 at a time.
	if n := calls.n.Load(); n > 60 {
		t.Fatalf("the limiter asked Redis %d times for 60 requests, want far fewer than 120", n)
	}
}

// Requests that come at once, well under the limit, are all allowed: they
// do not each ask Redis for a batch of credits, which together would use
// up the limit.
func TestRateLimitsConcurrentRequestsUnderTheLimit(t *testing.T) {
	a := appWith(t, func(c *handlers.Config) {
		// Each asks for 100 credits at a time: 64 asking at once would
		// take 6,400 of the 1,000.
		c.RateLimits = handlers.RateLimits{User: redis_rate.PerSecond(1000), Address: redis_rate.PerSecond(1000)}
	})
	const n = 64
	statuses := make(chan int, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status, _ := a.call("GET", "/api/v1/queues", a.operator, "")
			statuses <- status
		}()
	}
	close(start)
	wg.Wait()
	close(statuses)
	for status := range statuses {
		if status != http.StatusOK {
			t.Fatalf("a request of %d at once, at a limit of 1000/s, answered %d", n, status)
		}
	}
}

// When the limiter cannot count, requests go on to their own handling,
// and the trouble is logged once while it lasts.
func TestRateLimitsFailOpen(t *testing.T) {
	var logs logBuffer
	a := appWith(t, func(c *handlers.Config) {
		c.Log = slog.New(slog.NewTextHandler(&logs, nil))
		// Limits low enough that every request asks Redis (no credits).
		c.RateLimits = handlers.RateLimits{User: redis_rate.PerMinute(600), Address: redis_rate.PerMinute(600)}
	})
	id := a.enqueue("read while the store is full")
	ctx := context.Background()
	// A store out of memory takes no writes, the limiter's included, and
	// still answers reads.
	full := func(on bool) {
		t.Helper()
		if err := a.rdb.ConfigSet(ctx, "maxmemory", map[bool]string{true: "1", false: "0"}[on]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	full(true)
	t.Cleanup(func() { full(false) })
	for range 3 {
		a.expect("GET", "/api/v1/jobs/"+id, a.producer, "", http.StatusOK, "")
	}
	const warning = "rate limits not applied"
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Fatalf("%d warnings in 3 requests, want 1", n)
	}
	full(false)
	a.expect("GET", "/api/v1/jobs/"+id, a.producer, "", http.StatusOK, "")
	full(true)
	a.expect("GET", "/api/v1/jobs/"+id, a.producer, "", http.StatusOK, "")
	if n := strings.Count(logs.String(), warning); n != 2 {
		t.Fatalf("%d warnings after a second outage, want 2", n)
	}
}
