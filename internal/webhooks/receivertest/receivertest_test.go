package receivertest_test

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/webhooks/receivertest"
)

// event is a delivery's body as claimdesk sends it.
const event = `{"type":"job.completed","timestamp":"2026-11-26T09:15:02.5Z","data":{"job":{"id":"j1"}}}`

// request is a delivery of the body with the id, signed with the secret
// by the reference library, stamped now.
func request(t *testing.T, url, secret, id, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", receivertest.Sign(t, secret, id, now, []byte(body)))
	return req
}

// send sends the request and returns its answer, with its body read.
func send(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

func TestRecordsADelivery(t *testing.T) {
	t.Parallel()
	secret := receivertest.NewSecret(t)
	r := receivertest.Start(t, secret)
	before := time.Now()
	req := request(t, r.URL(), secret, "msg_1", event)
	if res, _ := send(t, req); res.StatusCode != http.StatusNoContent {
		t.Fatalf("answered %d, want 204", res.StatusCode)
	}
	if bad := r.Bad(); bad != nil {
		t.Fatalf("a signed delivery is bad: %q", bad)
	}
	got := r.Deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1", len(got))
	}
	d := got[0]
	if d.N != 1 || d.ID != "msg_1" || strconv.FormatInt(d.Timestamp.Unix(), 10) != req.Header.Get("webhook-timestamp") ||
		d.Signature != req.Header.Get("webhook-signature") || string(d.Body) != event || d.Arrived.Before(before) || d.Bad != "" {
		t.Fatalf("recorded %+v", d)
	}
	if want := time.Date(2026, 11, 26, 9, 15, 2, 5e8, time.UTC); d.Event.Type != "job.completed" ||
		!d.Event.Timestamp.Equal(want) || string(d.Event.Data) != `{"job":{"id":"j1"}}` {
		t.Fatalf("decoded %+v (data %s)", d.Event, d.Event.Data)
	}

	// A copy: what the test does to it changes nothing of the receiver's.
	got[0].ID = "changed"
	if r.Deliveries()[0].ID != "msg_1" {
		t.Fatal("Deliveries returned the receiver's own records")
	}
}

func TestFlagsBadDeliveries(t *testing.T) {
	t.Parallel()
	secret := receivertest.NewSecret(t)
	tests := []struct {
		name string
		req  func(r *receivertest.Receiver) *http.Request
		bad  string // in the receiver's complaint
	}{
		{"another secret", func(r *receivertest.Receiver) *http.Request {
			return request(t, r.URL(), receivertest.NewSecret(t), "msg_1", event)
		}, "reference verifier refused it: unable to verify payload, err: no matching signature found"},
		{"tampered body", func(r *receivertest.Receiver) *http.Request {
			req := request(t, r.URL(), secret, "msg_1", event)
			req.Body = io.NopCloser(strings.NewReader(strings.Replace(event, "j1", "j2", 1)))
			return req
		}, "no matching signature found"},
		{"old", func(r *receivertest.Receiver) *http.Request {
			req := request(t, r.URL(), secret, "msg_1", event)
			old := time.Now().Add(-10 * time.Minute)
			req.Header.Set("webhook-timestamp", strconv.FormatInt(old.Unix(), 10))
			req.Header.Set("webhook-signature", receivertest.Sign(t, secret, "msg_1", old, []byte(event)))
			return req
		}, "message timestamp too old"},
		{"no webhook-id", func(r *receivertest.Receiver) *http.Request {
			req := request(t, r.URL(), secret, "msg_1", event)
			req.Header.Del("webhook-id")
			return req
		}, "missing required headers"},
		{"not POST", func(r *receivertest.Receiver) *http.Request {
			req := request(t, r.URL(), secret, "msg_1", event)
			req.Method = http.MethodPut
			return req
		}, "PUT /hook, not POST /hook"},
		{"another path", func(r *receivertest.Receiver) *http.Request {
			return request(t, strings.TrimSuffix(r.URL(), "/hook")+"/", secret, "msg_1", event)
		}, "POST /, not POST /hook"},
		{"not JSON", func(r *receivertest.Receiver) *http.Request {
			req := request(t, r.URL(), secret, "msg_1", event)
			req.Header.Set("Content-Type", "text/plain")
			return req
		}, `Content-Type "text/plain", not application/json`},
		{"no type", func(r *receivertest.Receiver) *http.Request {
			return request(t, r.URL(), secret, "msg_1", `{"timestamp":"2026-11-26T09:15:02Z","data":{}}`)
		}, "body: no type"},
		{"no timestamp", func(r *receivertest.Receiver) *http.Request {
			return request(t, r.URL(), secret, "msg_1", `{"type":"job.dead","data":{}}`)
		}, "body: no timestamp"},
		{"data not an object", func(r *receivertest.Receiver) *http.Request {
			return request(t, r.URL(), secret, "msg_1", `{"type":"job.dead","timestamp":"2026-11-26T09:15:02Z","data":[]}`)
		}, "body: data [] is not an object"},
		{"a field more", func(r *receivertest.Receiver) *http.Request {
			return request(t, r.URL(), secret, "msg_1", `{"type":"job.dead","timestamp":"2026-11-26T09:15:02Z","data":{},"id":"x"}`)
		}, `body: json: unknown field "id"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := receivertest.Start(t, secret)
			send(t, tt.req(r))
			bad := r.Bad()
			if len(bad) != 1 || !strings.Contains(bad[0], tt.bad) || !strings.HasPrefix(bad[0], "request 1 ") {
				t.Fatalf("Bad() = %q, want one complaint about request 1 with %q", bad, tt.bad)
			}
			if d := r.Deliveries(); len(d) != 1 || !strings.Contains(d[0].Bad, tt.bad) {
				t.Fatalf("recorded %+v, want it with its complaint %q", d, tt.bad)
			}
		})
	}
}

func TestFlagsAnIDReusedForAnotherBody(t *testing.T) {
	t.Parallel()
	secret := receivertest.NewSecret(t)
	r := receivertest.Start(t, secret)
	send(t, request(t, r.URL(), secret, "msg_1", event))
	send(t, request(t, r.URL(), secret, "msg_1", event)) // a retry: the same body
	other := strings.Replace(event, "j1", "j2", 1)
	send(t, request(t, r.URL(), secret, "msg_1", other))
	bad := r.Bad()
	if len(bad) != 1 || !strings.HasPrefix(bad[0], `request 3 (webhook-id "msg_1"): webhook-id "msg_1" came before with another body`) {
		t.Fatalf("Bad() = %q, want the third request's only", bad)
	}
}

func TestSecrets(t *testing.T) {
	t.Parallel()
	old, current := receivertest.NewSecret(t), receivertest.NewSecret(t)
	r := receivertest.Start(t)
	send(t, request(t, r.URL(), old, "msg_1", event)) // no secrets yet: bad

	r.SetSecrets(old)
	send(t, request(t, r.URL(), old, "msg_2", event))
	send(t, request(t, r.URL(), current, "msg_3", event)) // bad

	r.SetSecrets(old, current) // the rotation
	send(t, request(t, r.URL(), old, "msg_4", event))
	send(t, request(t, r.URL(), current, "msg_5", event))

	r.SetSecrets(current)
	send(t, request(t, r.URL(), old, "msg_6", event)) // bad
	send(t, request(t, r.URL(), current, "msg_7", event))

	r.SetSecrets(current, "whsec_not base64")
	send(t, request(t, r.URL(), current, "msg_8", event)) // bad

	want := []string{
		`request 1 (webhook-id "msg_1"): no secrets to verify it with`,
		`request 3 (webhook-id "msg_3"): the reference verifier refused it`,
		`request 6 (webhook-id "msg_6"): the reference verifier refused it`,
		`request 8 (webhook-id "msg_8"): secret "whsec_not base64" is not whsec_ and base64`,
	}
	bad := r.Bad()
	if len(bad) != len(want) {
		t.Fatalf("Bad() = %q, want %d complaints", bad, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(bad[i], want[i]) {
			t.Errorf("complaint %d = %q, want it to begin %q", i, bad[i], want[i])
		}
	}
}

func TestWaitWakesOnArrival(t *testing.T) {
	t.Parallel()
	secret := receivertest.NewSecret(t)
	r := receivertest.Start(t, secret)
	sent := make(chan error, 1)
	calls := 0
	// The delivery goes out only once Wait has found nothing yet: Wait
	// must wake when it arrives, long before its timeout.
	r.Wait(t, func(d []receivertest.Delivery) bool {
		calls++
		if calls == 1 {
			req := request(t, r.URL(), secret, "msg_1", event)
			go func() {
				res, err := http.DefaultClient.Do(req)
				if err == nil {
					res.Body.Close()
				}
				sent <- err
			}()
		}
		return len(d) == 1
	}, time.Minute)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("Wait asked its condition %d times, want 2: before the delivery and as it arrived", calls)
	}
}

// failure is a test that Wait fails: what it said, and that it ended.
type failure struct {
	testing.TB
	said string
}

func (f *failure) Helper() {}

func (f *failure) Fatalf(format string, args ...any) {
	f.said = strings.TrimSpace(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func TestWaitFailsListingWhatArrived(t *testing.T) {
	t.Parallel()
	secret := receivertest.NewSecret(t)
	r := receivertest.Start(t, secret)
	send(t, request(t, r.URL(), secret, "msg_1", event))
	send(t, request(t, r.URL(), receivertest.NewSecret(t), "msg_2", event))

	f := &failure{TB: t}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		r.Wait(f, func(d []receivertest.Delivery) bool { return len(d) == 3 }, 50*time.Millisecond)
		f.said = "Wait returned"
	}()
	<-ended
	for _, want := range []string{"not there within 50ms; 2 requests arrived:", `1. at `, `webhook-id "msg_1"`, event,
		`2. at `, `webhook-id "msg_2"`, "BAD: the reference verifier refused it"} {
		if !strings.Contains(f.said, want) {
			t.Errorf("Wait's failure says %q, without %q", f.said, want)
		}
	}
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	secret := receivertest.NewSecret(t)
	r := receivertest.Start(t, secret)
	const delay = 200 * time.Millisecond
	var mu sync.Mutex
	var ids []string
	r.Answer(func(n int, d receivertest.Delivery) receivertest.Reply {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, strconv.Itoa(n)+":"+d.ID)
		switch n {
		case 1:
			return receivertest.Reply{Status: http.StatusServiceUnavailable, RetryAfter: "7", Body: "busy"}
		case 2:
			return receivertest.Reply{Status: http.StatusGone}
		case 3:
			return receivertest.Reply{Delay: delay}
		}
		return receivertest.Reply{Status: http.StatusOK, Body: "thanks"}
	})
	tests := []struct {
		status     int
		retryAfter string
		body       string
	}{
		{http.StatusServiceUnavailable, "7", "busy"},
		{http.StatusGone, "", ""},
		{http.StatusNoContent, "", ""},
		{http.StatusOK, "", "thanks"},
	}
	for i, want := range tests {
		start := time.Now()
		res, body := send(t, request(t, r.URL(), secret, "msg_"+strconv.Itoa(i+1), event))
		if res.StatusCode != want.status || res.Header.Get("Retry-After") != want.retryAfter || body != want.body {
			t.Errorf("request %d answered %d, Retry-After %q, %q; want %d, %q, %q", i+1,
				res.StatusCode, res.Header.Get("Retry-After"), body, want.status, want.retryAfter, want.body)
		}
		if took := time.Since(start); i == 2 && took < delay {
			t.Errorf("request 3 answered after %v, before its delay of %v", took, delay)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "1:msg_1 2:msg_2 3:msg_3 4:msg_4"; strings.Join(ids, " ") != want {
		t.Errorf("Answer's function was asked about %q, want %q", ids, want)
	}
	if bad := r.Bad(); bad != nil {
		t.Fatalf("Bad() = %q", bad)
	}
}

// A reply's delay ends with the test, so that its receiver stops at once.
func TestDelayEndsWithTheTest(t *testing.T) {
	t.Parallel()
	secret := receivertest.NewSecret(t)
	answered := make(chan error, 1)
	t.Run("held", func(t *testing.T) {
		r := receivertest.Start(t, secret)
		r.Answer(func(int, receivertest.Delivery) receivertest.Reply { return receivertest.Reply{Delay: time.Hour} })
		req := request(t, r.URL(), secret, "msg_1", event)
		go func() {
			res, err := http.DefaultClient.Do(req)
			if err == nil {
				res.Body.Close()
			}
			answered <- err
		}()
		r.Wait(t, func(d []receivertest.Delivery) bool { return len(d) == 1 }, time.Minute)
	})
	// The subtest's end stopped its receiver, and the request with it.
	select {
	case err := <-answered:
		if err == nil {
			t.Fatal("the receiver answered a request it held as it stopped")
		}
	case <-time.After(time.Minute):
		t.Fatal("the receiver's end did not end its reply's delay")
	}
}
