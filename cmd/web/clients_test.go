package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"claimdesk/internal/handlers"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"

	"github.com/go-redis/redis_rate/v10"
)

// Bad trusted proxies or rates stop serve before it starts, with a
// message that names the value.
func TestServeRefusesBadClientSettings(t *testing.T) {
	srv := taskstest.Redis(t)
	for _, tc := range []struct{ env, value, want string }{
		{"CLAIMDESK_TRUSTED_PROXIES", "10.0.0.0/8, 10.0.0.300/32", `bad CLAIMDESK_TRUSTED_PROXIES "10.0.0.300/32"`},
		{"CLAIMDESK_TRUSTED_PROXIES", "10.0.0.1", `bad CLAIMDESK_TRUSTED_PROXIES "10.0.0.1"`},
		{"CLAIMDESK_TRUSTED_PROXIES", "10.0.0.0/8;192.0.2.0/24", `bad CLAIMDESK_TRUSTED_PROXIES "10.0.0.0/8;192.0.2.0/24"`},
		{"CLAIMDESK_RATE_USER", "50/sec", `bad CLAIMDESK_RATE_USER "50/sec"`},
		{"CLAIMDESK_RATE_USER", "50/d", `bad CLAIMDESK_RATE_USER "50/d"`},
		{"CLAIMDESK_RATE_ADDRESS", "0/s", `bad CLAIMDESK_RATE_ADDRESS "0/s"`},
		{"CLAIMDESK_RATE_ADDRESS", "-5/s", `bad CLAIMDESK_RATE_ADDRESS "-5/s"`},
		{"CLAIMDESK_RATE_LOGIN", "1.5/s", `bad CLAIMDESK_RATE_LOGIN "1.5/s"`},
		{"CLAIMDESK_RATE_LOGIN", "10 /m", `bad CLAIMDESK_RATE_LOGIN "10 /m"`},
		{"CLAIMDESK_RATE_LOGIN", "10", `bad CLAIMDESK_RATE_LOGIN "10"`},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			env := func(k string) string {
				switch k {
				case "CLAIMDESK_REDIS_URL":
					return "redis://" + srv.Addr()
				case tc.env:
					return tc.value
				}
				return ""
			}
			// Were the value let through, serve would stop at once anyway.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, env, strings.NewReader(""), &bytes.Buffer{})
			var u usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve: %v; want a usage error saying %s", err, tc.want)
			}
		})
	}
}

func TestRates(t *testing.T) {
	for in, want := range map[string]redis_rate.Limit{
		"50/s": redis_rate.PerSecond(50), "600/m": redis_rate.PerMinute(600), "9000/h": redis_rate.PerHour(9000),
	} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	d := handlers.DefaultRateLimits
	for _, l := range []redis_rate.Limit{d.User, d.Address, d.Login} {
		if got, err := parseRate(formatRate(l)); err != nil || got != l {
			t.Errorf("the default %v reads back as %v, %v", l, got, err)
		}
	}
}

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
