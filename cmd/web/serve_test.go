package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

// api sends a request with an API token (none if empty) and returns the
// status and the body.
func api(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// enqueue puts a job into the queue and returns its id.
func enqueue(t *testing.T, base, token, queue, title string) string {
	t.Helper()
	status, body := api(t, "POST", base+"/api/v1/queues/"+queue+"/jobs", token, `{"title":"`+title+`"}`)
	var out struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	if err := json.Unmarshal([]byte(body), &out); status != http.StatusCreated || err != nil {
		t.Fatalf("enqueue: %d %s", status, body)
	}
	return out.Job.ID
}

// A client that sends its body a byte at a time holds its connection no
// longer than the read timeout, whatever the route.
func TestServeCutsASlowBody(t *testing.T) {
	env := envWith(taskstest.Redis(t).Addr())
	token := addUser(t, env, "pat", "s3cret-password", "--role", "supervisor")
	const bound = time.Second
	sv := startServe(t, env, "--read-timeout", bound.String())

	for _, tc := range []struct {
		name, head string
		status     int // 0: any answer, or none
	}{
		{"API", "POST /api/v1/queues HTTP/1.1\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\n", http.StatusRequestTimeout},
		{"page", "POST /login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(sv.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := fmt.Fprintf(conn, "%sHost: claimdesk.test\r\nContent-Length: 100000\r\n\r\n{", tc.head); err != nil {
				t.Fatal(err)
			}
			trickling := make(chan struct{})
			defer close(trickling)
			go func() {
				tick := time.NewTicker(200 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-trickling:
						return
					case <-tick.C:
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}
			}()

			// Read whatever the server says until it hangs up; give up at
			// well past the bound.
			_ = conn.SetReadDeadline(start.Add(bound + 5*time.Second))
			var got bytes.Buffer
			_, err = io.Copy(&got, conn)
			elapsed := time.Since(start)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the connection is still open %s after a body began to trickle in (read timeout %s); got %q", elapsed, bound, got.String())
			}
			if elapsed > bound+2*time.Second {
				t.Errorf("the connection was cut after %s, want within about %s", elapsed, bound)
			}
			if tc.status != 0 {
				res, err := http.ReadResponse(bufio.NewReader(&got), nil)
				if err != nil {
					t.Fatalf("no answer before the cut: %v (%q)", err, got.String())
				}
				body, _ := io.ReadAll(res.Body)
				if res.StatusCode != tc.status || !strings.Contains(string(body), `"request_timeout"`) {
					t.Errorf("answer %d %s, want %d request_timeout", res.StatusCode, body, tc.status)
				}
			}
		})
	}
}

// The read timeout bounds how long a request takes to arrive, not how long
// it is answered: websockets and ?wait outlive it.
func TestServeKeepsSocketsAndWaitsPastTheReadTimeout(t *testing.T) {
	env := envWith(taskstest.Redis(t).Addr())
	token := addUser(t, env, "sky", "s3cret-password", "--role", "supervisor")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"queue", "add", "late"}, env, strings.NewReader(""), &out); err != nil {
		t.Fatal(err)
	}
	const bound = time.Second
	sv := startServe(t, env, "--read-timeout", bound.String())
	feed := openFeed(t, sv.base, login(t, sv.base, "sky", "s3cret-password"))

	first := enqueue(t, sv.base, token, "late", "first")
	type answer struct {
		status int
		body   string
		took   time.Duration
	}
	waited := make(chan answer, 1)
	go func() {
		start := time.Now()
		req, _ := http.NewRequest("GET", sv.base+"/api/v1/jobs/"+first+"?wait=3", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			waited <- answer{body: err.Error(), took: time.Since(start)}
			return
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		waited <- answer{res.StatusCode, string(raw), time.Since(start)}
	}()

	// Well past the read timeout, the feed still brings the news.
	time.Sleep(bound*2 + bound/2)
	second := enqueue(t, sv.base, token, "late", "second")
	_ = feed.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, msg, err := feed.ReadMessage()
		if err != nil {
			t.Fatalf("the feed ended %s past the read timeout: %v", 2*bound, err)
		}
		if strings.Contains(string(msg), second) {
			break
		}
	}
	a := <-waited
	if a.status != http.StatusOK || !strings.Contains(a.body, first) || a.took < 3*time.Second {
		t.Errorf("?wait=3 answered %d after %s: %s; want 200 with the job after 3s", a.status, a.took, a.body)
	}
}

// With CLAIMDESK_METRICS_ADDR, /metrics is there and not on the main
// address; CLAIMDESK_METRICS_TOKEN guards it wherever it is.
func TestServeMetricsSettings(t *testing.T) {
	redisAddr := taskstest.Redis(t).Addr()
	const token = "scrape-token-0f3c9a"
	scrape := func(url, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	guarded := func(t *testing.T, url string) {
		t.Helper()
		for _, auth := range []string{"", "Bearer wrong-token", token, "Bearer " + token + "x"} {
			if status, body := scrape(url, auth); status != http.StatusUnauthorized || !strings.Contains(body, `"unauthenticated"`) {
				t.Errorf("GET %s with Authorization %q: %d %.80s, want 401 unauthenticated", url, auth, status, body)
			}
		}
		if status, body := scrape(url, "Bearer "+token); status != http.StatusOK || !strings.Contains(body, "claimdesk_websockets") {
			t.Errorf("GET %s with the token: %d %.80s", url, status, body)
		}
	}

	t.Run("own address", func(t *testing.T) {
		sv := startServe(t, envWith(redisAddr, "CLAIMDESK_METRICS_ADDR", "127.0.0.1:0", "CLAIMDESK_METRICS_TOKEN", token))
		if sv.metrics == "" {
			t.Fatal("serve did not say where it serves its metrics")
		}
		if status, _ := scrape(sv.base+"/metrics", ""); status != http.StatusNotFound {
			t.Errorf("/metrics on the main address: %d, want 404", status)
		}
		guarded(t, "http://"+sv.metrics+"/metrics")
		if status, _ := scrape("http://"+sv.metrics+"/api/v1/queues", "Bearer "+token); status != http.StatusNotFound {
			t.Errorf("the metrics listener answered another path: %d, want 404", status)
		}
	})
	t.Run("main address with a token", func(t *testing.T) {
		sv := startServe(t, envWith(redisAddr, "CLAIMDESK_METRICS_TOKEN", token))
		guarded(t, sv.base+"/metrics")
	})
	t.Run("open", func(t *testing.T) {
		sv := startServe(t, envWith(redisAddr))
		if status, body := scrape(sv.base+"/metrics", ""); status != http.StatusOK || !strings.Contains(body, "claimdesk_websockets") {
			t.Errorf("open /metrics: %d %.80s", status, body)
		}
	})
}
