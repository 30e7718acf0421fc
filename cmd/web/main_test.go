package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks/taskstest"

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

func TestCommands(t *testing.T) {
	srv := taskstest.Redis(t)
	env := envWith(srv.Addr())
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
	if out, err := cmd("", "seed", "--reset"); err != nil || !strings.Contains(out, "4 queues") {
		t.Fatalf("seed --reset on a store of an earlier format: %v\n%s", err, out)
	}
	if _, err := cmd("", "queue", "add", "after-reset"); err != nil {
		t.Fatalf("a command after the reset: %v", err)
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
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"user", "add", name, "--password-stdin"}, flags...),
		env, strings.NewReader(password+"\n"), &out); err != nil {
		t.Fatalf("user add: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"token", "add", name}, env, strings.NewReader(""), &out); err != nil {
		t.Fatalf("token add: %v", err)
	}
	return strings.TrimSpace(out.String())
}

// login logs in at base as a browser does, and returns its cookies.
func login(t *testing.T, base, name, password string) http.CookieJar {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
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
	res, err = client.PostForm(base+"/login", url.Values{"name": {name}, "password": {password}, "_csrf": {html.UnescapeString(string(m[1]))}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %s", res.Status)
	}
	return jar
}

// openFeed opens the live feed with the browser's cookies and reads its
// snapshot.
func openFeed(t *testing.T, base string, jar http.CookieJar) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Jar: jar, HandshakeTimeout: 10 * time.Second}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", http.Header{"Origin": {base}})
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

func TestServeClosesWebsocketsAtShutdown(t *testing.T) {
	env := envWith(taskstest.Redis(t).Addr())
	addUser(t, env, "dora", "s3cret-password", "--role", "supervisor")
	sv := startServe(t, env)
	conn := openFeed(t, sv.base, login(t, sv.base, "dora", "s3cret-password"))

	// Told to stop, serve says goodbye to the page and returns without
	// waiting for it to leave on its own.
	sv.stop()
	var err error
	for {
		if _, _, err = conn.NextReader(); err != nil {
			break
		}
	}
	if ce := (*websocket.CloseError)(nil); !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("the feed ended with %v, want a going-away close", err)
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
