package handlers_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"claimdesk/internal/handlers"

	"github.com/prometheus/client_golang/prometheus"
)

// series counts the request metrics' series in the registry.
func series(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "claimdesk_http_") {
			n += len(f.GetMetric())
		}
	}
	return n
}

// Whatever methods and paths clients send, the request metrics keep the
// series of the route table and the known methods.
func TestRequestMetricsMintNoSeries(t *testing.T) {
	a := newApp(t)
	reg := prometheus.NewRegistry()
	srv := a.serverWith(a.rdb, func(cfg *handlers.Config, _ *http.Server) { cfg.Registry = reg })
	send := func(method, path string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	word := func(prefix string) string {
		const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		b := []byte(prefix)
		for range 8 {
			b = append(b, letters[rand.IntN(len(letters))])
		}
		return string(b)
	}
	// Each kind of request once: a known or unknown method, on a route, on
	// no route, on no route of the API.
	paths := []func() string{
		func() string { return "/healthz" },
		func() string { return "/" + strings.ToLower(word("p")) },
		func() string { return "/api/v1/" + strings.ToLower(word("p")) },
		func() string { return "/jobs/" + word("j") + "/" + strings.ToLower(word("a")) + "/" + word("x") },
	}
	methods := []func() string{
		func() string { return "GET" },
		func() string { return word("M") },
	}
	for _, m := range methods {
		for _, p := range paths {
			send(m(), p())
		}
	}
	before := series(t, reg)
	for i := range 100 {
		send(methods[i%len(methods)](), paths[i/len(methods)%len(paths)]())
	}
	if after := series(t, reg); after != before {
		t.Errorf("100 requests of random methods and paths took the request metrics from %d series to %d", before, after)
	}
	send("FOO123", "/healthz")
	if families, _ := reg.Gather(); strings.Contains(fmt.Sprint(families), "FOO123") {
		t.Error("a method that is no known method is a label")
	}
}

func TestMetricsBehindAToken(t *testing.T) {
	a := newApp(t)
	const token = "metrics-token-5d1e"
	srv := a.serverWith(a.rdb, func(cfg *handlers.Config, _ *http.Server) { cfg.MetricsToken = token })
	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"no credentials", "", http.StatusUnauthorized},
		{"a wrong token", "Bearer not-" + token, http.StatusUnauthorized},
		{"the token without Bearer", token, http.StatusUnauthorized},
		{"a longer token", "Bearer " + token + "0", http.StatusUnauthorized},
		{"a user's API token", "Bearer " + a.super, http.StatusUnauthorized},
		{"the token", "Bearer " + token, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("%d %.100s, want %d", res.StatusCode, raw, tc.status)
			}
			switch tc.status {
			case http.StatusOK:
				if !strings.Contains(string(raw), "claimdesk_websockets") {
					t.Errorf("no metrics: %.100s", raw)
				}
			default:
				if !strings.Contains(string(raw), `"code":"unauthenticated"`) || res.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("refusal %s (WWW-Authenticate %q)", raw, res.Header.Get("WWW-Authenticate"))
				}
			}
		})
	}

	// Served on a listener of its own, /metrics is not the app's.
	apart := a.serverWith(a.rdb, func(cfg *handlers.Config, _ *http.Server) { cfg.SeparateMetrics = true })
	res, err := http.Get(apart.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics of an app whose metrics have their own listener: %d, want 404", res.StatusCode)
	}
}

// Each queue's numbers are read when Prometheus scrapes.
func TestQueueMetrics(t *testing.T) {
	a := newApp(t)
	a.enqueue("one")
	a.enqueue("two")
	a.claim()
	a.expect("POST", "/api/v1/queues/"+a.queue+"/pause", a.super, "", 200, "")
	res, err := http.Get(a.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	text := string(raw)
	for _, want := range []string{
		fmt.Sprintf(`claimdesk_queue_jobs{queue=%q,state="ready"} 1`, a.queue),
		fmt.Sprintf(`claimdesk_queue_jobs{queue=%q,state="reserved"} 1`, a.queue),
		fmt.Sprintf(`claimdesk_queue_jobs{queue=%q,state="dead"} 0`, a.queue),
		fmt.Sprintf(`claimdesk_queue_paused{queue=%q} 1`, a.queue),
		fmt.Sprintf(`claimdesk_queue_next_wait_seconds{queue=%q} `, a.queue),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The job left ready has waited since it came, a moment ago.
	m := regexp.MustCompile(`claimdesk_queue_oldest_wait_seconds\{queue="` + a.queue + `"\} (\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("/metrics lacks the queue's oldest wait")
	}
	if secs, err := strconv.ParseFloat(m[1], 64); err != nil || secs <= 0 || secs > 60 {
		t.Errorf("oldest wait = %s, want a moment", m[1])
	}
}
