package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"html"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"
)

// envWith is an environment with the Redis at addr and the given settings,
// in name, value pairs.
func envWith(redisAddr string, pairs ...string) func(string) string {
	env := map[string]string{"CLAIMDESK_REDIS_URL": "redis://" + redisAddr}
	for i := 0; i+1 < len(pairs); i += 2 {
		env[pairs[i]] = pairs[i+1]
	}
	return func(k string) string { return env[k] }
}

// command runs one claimdesk command with stdin, and returns its output.
func command(env func(string) string, stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	err := run(context.Background(), args, env, strings.NewReader(stdin), &out)
	return out.String(), err
}

func TestCommands(t *testing.T) {
	srv := taskstest.Redis(t)
	env := envWith(srv.Addr())
	ctx := context.Background()
	cmd := func(stdin string, args ...string) (string, error) { return command(env, stdin, args...) }

	out, err := cmd("", "seed")
	if err != nil || !strings.Contains(out, "5 queues") || !strings.Contains(out, "alice-demo-pass") {
		t.Fatalf("seed: %v\n%s", err, out)
	}
	// The demo's day before shows in every operator's numbers, with every
	// way a reservation ends.
	queues, err := tasks.New(srv.Client()).QueueNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tallies, err := tasks.New(srv.Client()).Tallies(ctx, queues)
	if err != nil {
		t.Fatal(err)
	}
	var given, failed, expired, taken int64
	for _, name := range []string{"alice", "bob", "carol", "dana"} {
		tl := tallies[name]
		if tl == nil || tl.Window.Completed == 0 || tl.Window.MedianHandling() <= 0 {
			t.Fatalf("the demo's numbers of %s = %+v", name, tl)
		}
		given, failed, expired, taken = given+tl.Window.GivenBack, failed+tl.Window.Failed, expired+tl.Window.Expired, taken+tl.Window.TakenBack
	}
	if given == 0 || failed == 0 || expired == 0 || taken == 0 {
		t.Fatalf("the demo's reservations ended given back %d, failed %d, ran out %d, taken back %d times: want some of each",
			given, failed, expired, taken)
	}
	// A queue with an outcome form: the demo's completions fit it.
	ts := tasks.New(srv.Client())
	support, err := ts.Queue(ctx, "support-escalations")
	if err != nil || support.Outcome.Empty() {
		t.Fatalf("the demo's support-escalations has no outcome form: %+v, %v", support.Outcome, err)
	}
	done, err := ts.ListJobs(ctx, "support-escalations", tasks.StateCompleted, 20, "")
	if err != nil || len(done.Jobs) == 0 {
		t.Fatalf("the demo completed no support-escalations job: %v", err)
	}
	for _, j := range done.Jobs {
		full, err := ts.Get(ctx, j.ID)
		if err != nil || full.Result == nil || support.Outcome.Check(full.Result) != nil {
			t.Fatalf("a demo completion of support-escalations does not fit its form: %s, %v", full.Result, err)
		}
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
	// Pause, resume and the hold cap.
	st := tasks.New(srv.Client())
	if out, err := cmd("", "queue", "add", "triage", "--lease-seconds", "60", "--max-held", "2"); err != nil || !strings.Contains(out, "max held 2") {
		t.Fatalf("queue add --max-held: %v\n%s", err, out)
	}
	if out, err := cmd("", "queue", "pause", "triage"); err != nil || !strings.Contains(out, "paused") {
		t.Fatalf("queue pause: %v\n%s", err, out)
	}
	if _, err := st.Claim(ctx, "triage", "dora"); !errors.Is(err, tasks.ErrQueuePaused) {
		t.Fatalf("claim from a queue paused by the command: %v", err)
	}
	if _, err := cmd("", "queue", "add", "triage", "--lease-seconds", "90", "--max-held", "2"); err != nil {
		t.Fatal(err)
	}
	if q, _ := st.Queue(ctx, "triage"); !q.Paused || q.MaxHeld != 2 || q.LeaseSeconds != 90 || q.RequireReason {
		t.Fatalf("after queue add on a paused queue: %+v, want still paused", q)
	}
	if out, err := cmd("", "queue", "resume", "triage"); err != nil || !strings.Contains(out, "resumed") {
		t.Fatalf("queue resume: %v\n%s", err, out)
	}
	if q, _ := st.Queue(ctx, "triage"); q.Paused {
		t.Fatal("still paused after queue resume")
	}
	// What the commands did is in the audit log, as the command line's.
	entries, _, err := audit.New(srv.Client()).List(ctx, "", 3, audit.Filter{})
	if err != nil || len(entries) != 3 || entries[0].Action != audit.QueueResumed || entries[1].Action != audit.QueueChanged ||
		entries[2].Action != audit.QueuePaused || entries[0].Actor != audit.CommandLine || entries[0].Target != "triage" {
		t.Fatalf("audit log = %+v, %v", entries, err)
	}
	// A reason required of every take-back, from the command line.
	if out, err := cmd("", "queue", "add", "triage", "--require-reason"); err != nil || !strings.Contains(out, "reason required yes") {
		t.Fatalf("queue add --require-reason: %v\n%s", err, out)
	}
	if q, _ := st.Queue(ctx, "triage"); !q.RequireReason || q.LeaseSeconds != 90 {
		t.Fatalf("after queue add --require-reason: %+v", q)
	}
	// Due times from the command line.
	if out, err := cmd("", "queue", "add", "triage", "--sla", "4h", "--order", "due", "--breach-priority", "90"); err != nil ||
		!strings.Contains(out, "due 14400s after enqueue") || !strings.Contains(out, "claim order due") ||
		!strings.Contains(out, "on breach priority 90") {
		t.Fatalf("queue add --sla: %v\n%s", err, out)
	}
	if q, _ := st.Queue(ctx, "triage"); q.SLASeconds != 4*3600 || q.Order != tasks.OrderDue || q.BreachPriority != 90 || q.WarnFraction != 0.8 {
		t.Fatalf("after queue add --sla: %+v", q)
	}
	for _, bad := range [][]string{{"--sla", "4 hours"}, {"--sla", "1.5s"}, {"--order", "fifo"}, {"--warn-fraction", "2"}} {
		if _, err := cmd("", append([]string{"queue", "add", "triage"}, bad...)...); err == nil {
			t.Fatalf("queue add %q took it", bad)
		}
	}
	// An outcome form from the command line; a bad one is a usage error.
	form := `{"choices": ["keep", "drop"], "fields": [{"name": "why", "type": "text", "required_for": ["drop"]}]}`
	if out, err := cmd("", "queue", "add", "triage", "--lease-seconds", "90", "--max-held", "2", "--outcome", form); err != nil ||
		!strings.Contains(out, "outcome form 2 choices, 1 field") {
		t.Fatalf("queue add --outcome: %v\n%s", err, out)
	}
	if q, _ := st.Queue(ctx, "triage"); q.Outcome.Empty() || q.Outcome.Fields[0].RequiredFor[0] != "drop" {
		t.Fatalf("after queue add --outcome: %+v", q.Outcome)
	}
	if _, err := cmd("", "queue", "add", "triage", "--outcome", `{"choices": ["one"]}`); err == nil || !strings.Contains(err.Error(), "outcome.choices") {
		t.Fatalf("queue add with a bad outcome form: %v", err)
	}
	// On an existing queue, queue add changes only the settings given.
	if out, err := cmd("", "queue", "add", "triage", "--max-attempts", "7"); err != nil || !strings.Contains(out, "queue triage changed") {
		t.Fatalf("queue add --max-attempts on an existing queue: %v\n%s", err, out)
	}
	if q, _ := st.Queue(ctx, "triage"); q.MaxAttempts != 7 || q.LeaseSeconds != 90 || q.MaxHeld != 2 || q.AgingSeconds != 30 || q.Outcome.Empty() {
		t.Fatalf("after queue add --max-attempts: %+v, want the other settings kept", q)
	}
	// The log says what changed, and only that.
	if entries, _, err := audit.New(srv.Client()).List(ctx, "", 1, audit.Filter{}); err != nil || entries[0].Detail != "max attempts 5 → 7" {
		t.Fatalf("the change's audit entry: %+v, %v", entries, err)
	}
	if out, err := cmd("", "queue", "add", "triage"); err != nil || !strings.Contains(out, "queue triage unchanged") {
		t.Fatalf("queue add of an existing queue with no settings: %v\n%s", err, out)
	}
	if _, err := cmd("", "queue", "add", "triage", "--outcome", "{}"); err != nil {
		t.Fatal(err)
	}
	if q, _ := st.Queue(ctx, "triage"); !q.Outcome.Empty() || q.MaxAttempts != 7 {
		t.Fatalf("after queue add --outcome {}: %+v, want no form and the rest kept", q)
	}
	if _, err := cmd("", "queue", "pause", "no-such-queue"); !errors.Is(err, tasks.ErrQueueNotFound) {
		t.Fatalf("queue pause of a missing queue: %v", err)
	}
	token, err := cmd("", "token", "add", "dora")
	if err != nil || !strings.HasPrefix(token, "cdt_") || strings.Count(token, "\n") != 1 {
		t.Fatalf("token add printed %q, %v", token, err)
	}
	if _, err := cmd("", "seed", "--reset"); err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client()
	if n, _ := rdb.Exists(ctx, keys.ForQueue("triage").Conf()).Result(); n != 0 {
		t.Fatal("seed --reset kept a queue that is not in the demo data")
	}

	// A store of the storage format before this one: refused, until reset.
	if err := rdb.Del(ctx, keys.Format).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd("", "seed"); err == nil || !strings.Contains(err.Error(), "seed --reset") {
		t.Fatalf("seed on a store of an earlier format: %v, want a refusal that names seed --reset", err)
	}
	if out, err := cmd("", "seed", "--reset"); err != nil || !strings.Contains(out, "5 queues") {
		t.Fatalf("seed --reset on a store of an earlier format: %v\n%s", err, out)
	}
	if _, err := cmd("", "queue", "add", "after-reset"); err != nil {
		t.Fatalf("a command after the reset: %v", err)
	}

	for _, args := range [][]string{
		{"bogus"}, {"queue"}, {"queue", "add"}, {"user", "list"}, {"serve", "--nope"},
		{"queue", "add", "a", "b"}, {"serve", "--log-level", "loud"}, {"queue", "pause"},
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

func TestRedisURL(t *testing.T) {
	clientFor := func(url string) (redis.UniversalClient, error) {
		target, err := parseRedisURL(url)
		if err != nil {
			return nil, err
		}
		return target.client(), nil
	}
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

	// claimdesk's settings where the URL gives none; the URL's where it does.
	for url, want := range map[string][2]any{
		"redis://127.0.0.1:6379/0":                               {0, ioTimeout},
		"redis://127.0.0.1:6379/0?max_retries=2&read_timeout=5s": {2, 5 * time.Second},
	} {
		c, err := clientFor(url)
		if err != nil {
			t.Fatal(err)
		}
		opt := c.(*redis.Client).Options()
		if opt.MaxRetries != want[0] || opt.ReadTimeout != want[1] || opt.DialTimeout != dialTimeout {
			t.Errorf("%s: retries %d, read timeout %v, dial timeout %v; want %v, %v, %v",
				url, opt.MaxRetries, opt.ReadTimeout, opt.DialTimeout, want[0], want[1], dialTimeout)
		}
		c.Close()
	}
	c, err := clientFor("127.0.0.1:7000,127.0.0.1:7001")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if opt := c.(*redis.ClusterClient).Options(); opt.MaxRedirects != clusterRedirects || opt.MaxRetries != noRetries || opt.ReadTimeout != ioTimeout {
		t.Errorf("cluster: redirects %d, retries %d, read timeout %v", opt.MaxRedirects, opt.MaxRetries, opt.ReadTimeout)
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

// serving is a claimdesk serve of a test, on loopback ports of its own.
type serving struct {
	base    string // http://host:port of the app
	metrics string // host:port of the metrics listener, if it has one
	stop    context.CancelFunc
	done    chan struct{} // closed when serve has returned err
	err     error
}

// startServe runs claimdesk serve with the environment and the extra
// flags, and waits until it is serving. The test's end stops it.
func startServe(t *testing.T, env func(string) string, args ...string) *serving {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	sv := &serving{stop: stop, done: make(chan struct{})}
	logs, logw := io.Pipe()
	go func() {
		sv.err = run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), env, strings.NewReader(""), logw)
		logw.Close()
		close(sv.done)
	}()
	// serve logs where it listens; the lines end with addr=host:port.
	addrs := make(chan [2]string, 1)
	go func() {
		var metrics string
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			line := sc.Text()
			_, addr, found := strings.Cut(line, " addr=")
			switch {
			case !found:
			case strings.Contains(line, "claimdesk serves its metrics"):
				metrics = addr
			case strings.Contains(line, "claimdesk is serving"):
				addrs <- [2]string{addr, metrics}
			}
		}
		_, _ = io.Copy(io.Discard, logs)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-sv.done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20s")
		}
	})
	select {
	case a := <-addrs:
		sv.base, sv.metrics = "http://"+a[0], a[1]
	case <-sv.done:
		t.Fatalf("serve ended before serving: %v", sv.err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start within 10s")
	}
	return sv
}

// addUser adds a user with the password and returns an API token of theirs.
func addUser(t *testing.T, env func(string) string, name, password string, flags ...string) string {
	t.Helper()
	if out, err := command(env, password+"\n", append([]string{"user", "add", name, "--password-stdin"}, flags...)...); err != nil {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	token, err := command(env, "", "token", "add", name)
	if err != nil {
		t.Fatalf("token add: %v", err)
	}
	return strings.TrimSpace(token)
}

// login logs in at base as a browser does, and returns its cookies.
func login(t *testing.T, base, name, password string) http.CookieJar {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if res := tryLogin(t, client, base, name, password, nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %s", res.Status)
	}
	return jar
}

// tryLogin sends the login form as a browser does (after fetching it for
// its CSRF token), with the extra headers, and returns the answer.
func tryLogin(t *testing.T, client *http.Client, base, name, password string, header http.Header) *http.Response {
	t.Helper()
	res, err := client.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="_csrf" value="([^"]*)"`).FindSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the login page: %s", page)
	}
	form := url.Values{"name": {name}, "password": {password}, "_csrf": {html.UnescapeString(string(m[1]))}}
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	maps.Copy(req.Header, header)
	if res, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// dialFeed opens the live feed with the browser's cookies.
func dialFeed(base string, jar http.CookieJar) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{Jar: jar, HandshakeTimeout: 10 * time.Second}
	return d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", http.Header{"Origin": {base}})
}

// openFeed opens the live feed with the browser's cookies and reads its
// snapshot.
func openFeed(t *testing.T, base string, jar http.CookieJar) *websocket.Conn {
	t.Helper()
	conn, _, err := dialFeed(base, jar)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := conn.ReadMessage(); err != nil {
		t.Fatalf("reading the snapshot: %v", err)
	}
	return conn
}

// closeCode reads on until the server ends the feed, and returns the code
// of its closing frame (0 without one).
func closeCode(conn *websocket.Conn) int {
	for {
		if _, _, err := conn.NextReader(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			return 0
		}
	}
}

func TestServeClosesWebsocketsAtShutdown(t *testing.T) {
	env := envWith(taskstest.Redis(t).Addr())
	addUser(t, env, "dora", "s3cret-password", "--role", "supervisor")
	sv := startServe(t, env)
	conn := openFeed(t, sv.base, login(t, sv.base, "dora", "s3cret-password"))

	// Told to stop, serve says goodbye to the page and returns without
	// waiting for it to leave on its own.
	sv.stop()
	if code := closeCode(conn); code != websocket.CloseGoingAway {
		t.Errorf("the feed ended with close code %d, want a going-away close", code)
	}
	select {
	case <-sv.done:
		if sv.err != nil {
			t.Errorf("serve: %v", sv.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return within 10s of the stop")
	}
}

func TestUserAndTokenCommands(t *testing.T) {
	srv := taskstest.Redis(t)
	env := envWith(srv.Addr())
	ctx := context.Background()
	rdb := srv.Client()
	if _, err := command(env, "s3cret-password\n", "user", "add", "dora", "--role", "operator", "--queues", "triage", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for range 2 {
		token, err := command(env, "", "token", "add", "dora")
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, strings.TrimSpace(token))
	}
	// A token as the version before token ids kept it.
	const old = "cdt_made-before-token-ids-0000"
	sum := sha256.Sum256([]byte(old))
	if err := rdb.Set(ctx, keys.APIToken(hex.EncodeToString(sum[:])), "dora", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Another process (a server) uses the first token.
	if _, err := users.New(rdb).ByToken(ctx, tokens[0]); err != nil {
		t.Fatal(err)
	}

	out, err := command(env, "", "token", "list", "dora")
	if err != nil {
		t.Fatalf("token list: %v", err)
	}
	for _, tok := range append(tokens, old) {
		if strings.Contains(out, tok) || strings.Contains(out, tok[4:]) {
			t.Fatalf("token list shows a token:\n%s", out)
		}
	}
	stamp := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`
	line := regexp.MustCompile(`^([0-9a-f]{16}) (` + stamp + `|-) (` + stamp + `|-)$`)
	ids := map[string]string{} // "created used" → id
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("token list line %q is not ID CREATED LAST_USED", l)
		}
		kind := "made"
		switch {
		case m[2] == "-":
			kind = "old"
		case m[3] != "-":
			kind = "used"
		}
		ids[kind] = m[1]
	}
	if len(lines) != 3 || len(ids) != 3 {
		t.Fatalf("token list, with a used token, an unused one, and one made before token ids:\n%s", out)
	}

	// Revoked: the token stops working; the others go on.
	if out, err := command(env, "", "token", "revoke", ids["used"]); err != nil || !strings.Contains(out, "revoked") {
		t.Fatalf("token revoke: %v\n%s", err, out)
	}
	if _, err := users.New(rdb).ByToken(ctx, tokens[0]); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("a revoked token: %v, want ErrNotFound", err)
	}
	for _, tok := range []string{tokens[1], old} {
		if _, err := users.New(rdb).ByToken(ctx, tok); err != nil {
			t.Fatalf("a token not revoked: %v", err)
		}
	}
	if out, _ := command(env, "", "token", "list", "dora"); strings.Count(out, "\n") != 2 || strings.Contains(out, ids["used"]) {
		t.Fatalf("token list after a revoke:\n%s", out)
	}

	// Disabled: tokens refused, sessions over; enabled: tokens work again,
	// sessions stay over.
	before, err := users.New(rdb).Get(ctx, "dora")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := command(env, "", "user", "disable", "dora"); err != nil || !strings.Contains(out, "disabled") {
		t.Fatalf("user disable: %v\n%s", err, out)
	}
	if _, err := users.New(rdb).ByToken(ctx, tokens[1]); !errors.Is(err, users.ErrDisabled) {
		t.Fatalf("a disabled user's token: %v, want ErrDisabled", err)
	}
	if out, err := command(env, "", "user", "enable", "dora"); err != nil || !strings.Contains(out, "enabled") {
		t.Fatalf("user enable: %v\n%s", err, out)
	}
	if _, err := users.New(rdb).ByToken(ctx, tokens[1]); err != nil {
		t.Fatalf("an enabled user's token: %v", err)
	}
	u, err := users.New(rdb).Get(ctx, "dora")
	if err != nil || u.Disabled || u.SessionValid(before.Epoch) {
		t.Fatalf("after disable and enable: %+v, %v; want enabled, the session of before over", u, err)
	}

	// A new password ends the sessions; the same one again does not.
	for _, tc := range []struct {
		password string
		ends     bool
	}{{"s3cret-password", false}, {"an0ther-password", true}} {
		before, _ := users.New(rdb).Get(ctx, "dora")
		if _, err := command(env, tc.password+"\n", "user", "add", "dora", "--role", "operator", "--queues", "triage", "--password-stdin"); err != nil {
			t.Fatal(err)
		}
		after, _ := users.New(rdb).Get(ctx, "dora")
		if valid := after.SessionValid(before.Epoch); valid == tc.ends {
			t.Errorf("user add with password %q: a session begun before is valid: %v, want %v", tc.password, valid, !tc.ends)
		}
	}

	for _, args := range [][]string{
		{"token", "revoke"}, {"token", "list"}, {"user", "disable"}, {"user", "enable", "a", "b"}, {"token", "forget", "x"},
		{"serve", "--ws-per-user", "0"}, {"serve", "--ws-per-address", "many"},
	} {
		_, err := command(env, "", args...)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("%q: error %v, want a usage error", args, err)
		}
	}
	for _, args := range [][]string{
		{"token", "revoke", ids["used"]}, {"token", "revoke", "not-an-id"}, {"token", "list", "nobody"},
		{"user", "disable", "nobody"}, {"user", "enable", "nobody"},
	} {
		_, err := command(env, "", args...)
		var u usageError
		if err == nil || errors.As(err, &u) {
			t.Errorf("%q: error %v, want a failure", args, err)
		}
	}
}

// TestCommandsReachARunningServer disables a user from the command line,
// another process than the server, and the server's websockets and pages
// follow at once; the server's cap on websockets per user comes from the
// environment.
func TestCommandsReachARunningServer(t *testing.T) {
	env := envWith(taskstest.Redis(t).Addr(), "CLAIMDESK_WS_PER_USER", "1")
	addUser(t, env, "dora", "s3cret-password", "--role", "operator", "--queues", "triage")
	base := startServe(t, env).base
	jar := login(t, base, "dora", "s3cret-password")
	conn := openFeed(t, base, jar)
	extra, _, err := dialFeed(base, jar)
	if err != nil {
		t.Fatalf("a second websocket of a user capped at one: %v, want it upgraded to say why it is refused", err)
	}
	_ = extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	var ce *websocket.CloseError
	if _, msg, err := extra.ReadMessage(); !errors.As(err, &ce) || ce.Code != 4003 {
		t.Fatalf("a second websocket of a user capped at one read %.100q, %v; want it closed with 4003", msg, err)
	}
	extra.Close()

	start := time.Now()
	if out, err := command(env, "", "user", "disable", "dora"); err != nil {
		t.Fatalf("user disable: %v\n%s", err, out)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if code := closeCode(conn); code != 4001 || time.Since(start) > 2*time.Second {
		t.Errorf("the disabled user's feed ended with close code %d after %v, want 4001 (session ended) within 2s", code, time.Since(start))
	}
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := browser.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login" {
		t.Errorf("the disabled user's home page: %s to %q, want a redirect to /login", res.Status, res.Header.Get("Location"))
	}
}

// People's skills are set by user add and changed by user change, which
// changes only what its flags say; bad skills are refused, changing
// nothing.
func TestUserSkillsCommands(t *testing.T) {
	srv := taskstest.Redis(t)
	env := envWith(srv.Addr())
	ctx := context.Background()
	us := users.New(srv.Client())
	out, err := command(env, "s3cret-password\n", "user", "add", "dora", "--role", "operator", "--queues", "triage", "--skills", "de, contracts:4", "--password-stdin")
	if err != nil || !strings.Contains(out, "skills contracts:4,de") {
		t.Fatalf("user add --skills: %v\n%s", err, out)
	}
	if out, err := command(env, "", "user", "add", "dora", "--role", "operator", "--queues", "triage,billing"); err != nil || !strings.Contains(out, "skills contracts:4,de") {
		t.Fatalf("user add without --skills kept none: %v\n%s", err, out)
	}
	if out, err := command(env, "", "user", "change", "dora", "--skills", "fr:2"); err != nil || !strings.Contains(out, "operator triage,billing skills fr:2") {
		t.Fatalf("user change --skills: %v\n%s", err, out)
	}
	for _, bad := range [][]string{{"--skills", "FR"}, {"--skills", "fr:6"}, {"--role", "boss"}} {
		if _, err := command(env, "", append([]string{"user", "change", "dora"}, bad...)...); err == nil {
			t.Fatalf("user change %q was taken", bad)
		}
	}
	if _, err := command(env, "", "user", "change", "nobody", "--skills", "fr"); err == nil {
		t.Fatal("user change of nobody was taken")
	}
	u, err := us.Get(ctx, "dora")
	if err != nil || u.Skills.String() != "fr:2" || len(u.Queues) != 2 {
		t.Fatalf("dora = %+v, %v", u, err)
	}
	if out, err := command(env, "", "user", "change", "dora", "--skills", ""); err != nil || strings.Contains(out, "skills") {
		t.Fatalf("user change --skills \"\": %v\n%s", err, out)
	}
}
