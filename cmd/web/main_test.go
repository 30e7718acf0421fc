package main

import (
	"bufio"
	"bytes"
	"context"
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

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks/taskstest"

	"github.com/gorilla/websocket"
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

// startServe runs `claimdesk serve` on a free port with the environment
// env, and returns its URL, how to stop it, and where its end is told.
func startServe(t *testing.T, env func(string) string) (base string, stop func(), served <-chan error) {
	t.Helper()
	// serve logs where it listens.
	ctx, stop := context.WithCancel(context.Background())
	logs, logw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, env, strings.NewReader(""), logw)
		logw.Close()
		done <- err
	}()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), "claimdesk is serving"); ok {
				_, a, _ = strings.Cut(a, "addr=")
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a, stop, done
	case err := <-done:
		t.Fatalf("serve ended before serving: %v", err)
	case <-time.After(10 * time.Second):
		stop()
		t.Fatal("serve did not start within 10s")
	}
	return "", nil, nil
}

// browserClient is an HTTP client that keeps cookies and follows no
// redirects, as the tests read them.
func browserClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login logs in as a browser does (the form for its CSRF token, then the
// post), with extra headers on the post, and returns the answer.
func login(t *testing.T, client *http.Client, base, name, password string, header http.Header) *http.Response {
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
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	maps.Copy(req.Header, header)
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func TestServeClosesWebsocketsAtShutdown(t *testing.T) {
	srv := taskstest.Redis(t)
	env := func(k string) string {
		if k == "CLAIMDESK_REDIS_URL" {
			return "redis://" + srv.Addr()
		}
		return ""
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"user", "add", "dora", "--role", "supervisor", "--password-stdin"},
		env, strings.NewReader("s3cret-password\n"), &out); err != nil {
		t.Fatalf("user add: %v\n%s", err, out.String())
	}

	base, stop, served := startServe(t, env)
	defer stop()

	// Log in as a browser does, and open the live feed.
	client := browserClient()
	if res := login(t, client, base, "dora", "s3cret-password", nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %s", res.Status)
	}
	jar := client.Jar
	d := websocket.Dialer{Jar: jar, HandshakeTimeout: 10 * time.Second}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", http.Header{"Origin": {base}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := conn.ReadMessage(); err != nil {
		t.Fatalf("reading the snapshot: %v", err)
	}

	// Told to stop, serve says goodbye to the page and returns without
	// waiting for it to leave on its own.
	stop()
	for {
		if _, _, err = conn.NextReader(); err != nil {
			break
		}
	}
	if ce := (*websocket.CloseError)(nil); !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("the feed ended with %v, want a going-away close", err)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return within 10s of the stop")
	}
}
