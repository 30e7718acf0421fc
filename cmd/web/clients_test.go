package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"
)

// What serve is told of proxies and rates reaches the server: behind the
// trusted proxy, each forwarded client has its own login rate.
func TestServeTrustsItsProxiesAndLimitsRates(t *testing.T) {
	env := envWith(taskstest.Redis(t).Addr(), "CLAIMDESK_TRUSTED_PROXIES", "127.0.0.0/8", "CLAIMDESK_RATE_LOGIN", "1/h")
	base := startServe(t, env).base
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		client string
		want   int
	}{
		{"192.0.2.1", http.StatusUnauthorized},
		{"192.0.2.1", http.StatusTooManyRequests},
		{"192.0.2.2", http.StatusUnauthorized},
	} {
		res := tryLogin(t, client, base, "nobody", "guess", http.Header{"X-Forwarded-For": {tc.client}})
		if res.StatusCode != tc.want {
			t.Fatalf("a login from %s: %s, want %d", tc.client, res.Status, tc.want)
		}
	}
}

// `claimdesk user unlock NAME` ends a user's login delay.
func TestUserUnlock(t *testing.T) {
	srv := taskstest.Redis(t)
	env := envWith(srv.Addr())
	ctx := context.Background()
	if _, err := command(env, "s3cret-password\n", "user", "add", "dora", "--role", "operator", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	us := users.New(srv.Client())
	login := func(password string, from int) error {
		_, err := us.Login(ctx, "dora", password, fmt.Sprint("192.0.2.", from))
		return err
	}
	for i := range 10 {
		_ = login("wrong-guess", i)
	}
	if err := login("s3cret-password", 100); !errors.Is(err, users.ErrThrottled) {
		t.Fatalf("login after 10 failures: %v, want ErrThrottled", err)
	}
	if out, err := command(env, "", "user", "unlock", "dora"); err != nil || !strings.Contains(out, "dora") {
		t.Fatalf("user unlock: %v\n%s", err, out)
	}
	if err := login("s3cret-password", 101); err != nil {
		t.Fatalf("login after user unlock: %v", err)
	}
	if _, err := command(env, "", "user", "unlock", "nobody"); !errors.Is(err, users.ErrNotFound) {
		t.Errorf("user unlock of an unknown user: %v", err)
	}
	var u usageError
	if _, err := command(env, "", "user", "unlock"); !errors.As(err, &u) {
		t.Errorf("user unlock without a name: %v, want a usage error", err)
	}
}
