// Package receivertest is a receiver of claimdesk's webhooks for tests: a
// real HTTP server on a loopback port that checks every delivery with the
// Standard Webhooks reference library's verifier, never with claimdesk's
// own signing code, records it, and answers as the test says.
package receivertest

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"claimdesk/client"
)

// maxBody is the most of a delivery's body the receiver reads.
const maxBody = 1 << 20

// path is the path of the receiver's URL.
const path = "/hook"

// Delivery is one request the receiver got.
type Delivery struct {
	// N is which of the receiver's requests it was, counting from 1.
	N int
	// ID is its webhook-id header: the event's, the same on every retry.
	ID string
	// Timestamp is its webhook-timestamp header, Unix seconds: the
	// attempt's.
	Timestamp time.Time
	// Signature is its webhook-signature header, as sent.
	Signature string
	// Event is its body decoded.
	Event client.WebhookEvent
	// Body is its body, as sent.
	Body []byte
	// Arrived is when the receiver got it.
	Arrived time.Time
	// Bad says why it is not a delivery of claimdesk's webhooks as they
	// should be; empty when it is one.
	Bad string
}

// Reply is how the receiver answers a request.
type Reply struct {
	// Status is the answer's status; 0 is 204 No Content.
	Status int
	// RetryAfter is the answer's Retry-After header; empty: none.
	RetryAfter string
	// Delay is how long the receiver waits before it answers.
	Delay time.Duration
	// Body is the answer's body.
	Body string
}

// Receiver is a webhook endpoint of a test.
type Receiver struct {
	srv    *httptest.Server
	closed chan struct{} // closed when the test ends, to cut Delays short

	mu         sync.Mutex
	secrets    []*standardwebhooks.Webhook
	secretsErr error // what is wrong with the secrets last set
	answer     func(n int, d Delivery) Reply
	deliveries []Delivery
	bodies     map[string][]byte // each webhook-id's first body
	arrived    chan struct{}     // closed and replaced on every delivery
}

// Start runs a receiver for the test on a free loopback port that takes
// deliveries signed with any of the secrets (whsec_ and base64); none:
// every delivery is bad until [Receiver.SetSecrets]. It answers 204 until
// [Receiver.Answer] says otherwise. The test's end stops it.
func Start(tb testing.TB, secrets ...string) *Receiver {
	tb.Helper()
	r := &Receiver{closed: make(chan struct{}), bodies: map[string][]byte{}, arrived: make(chan struct{})}
	r.SetSecrets(secrets...)
	if r.secretsErr != nil {
		tb.Fatalf("receivertest: %v", r.secretsErr)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	tb.Cleanup(func() {
		close(r.closed)
		r.srv.Close()
	})
	return r
}

// URL is where the receiver takes deliveries: http://127.0.0.1:port/hook.
func (r *Receiver) URL() string { return r.srv.URL + path }

// SetSecrets replaces the secrets the receiver takes deliveries signed
// with, as during a rotation of the endpoint's secret. While one of them
// is not a secret, every delivery is bad.
func (r *Receiver) SetSecrets(secrets ...string) {
	verifiers := make([]*standardwebhooks.Webhook, len(secrets))
	var bad error
	for i, secret := range secrets {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err == nil && !strings.HasPrefix(secret, "whsec_") {
			err = errors.New("no whsec_")
		}
		if err != nil {
			bad = fmt.Errorf("secret %q is not whsec_ and base64: %w", secret, err)
			break
		}
		verifiers[i] = wh
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets, r.secretsErr = verifiers, bad
}

// Answer sets how the receiver answers its n-th request (counting from 1,
// every request it got) by what fn returns for it, after it recorded the
// request. Requests that arrive together call fn at once.
func (r *Receiver) Answer(fn func(n int, d Delivery) Reply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = fn
}

// Deliveries is every request the receiver got so far, in order.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.deliveries...)
}

// Bad says, for each request so far that was not a delivery of claimdesk's
// webhooks as they should be, which it was and why.
func (r *Receiver) Bad() []string {
	var bad []string
	for _, d := range r.Deliveries() {
		if d.Bad != "" {
			bad = append(bad, fmt.Sprintf("request %d (webhook-id %q): %s", d.N, d.ID, d.Bad))
		}
	}
	return bad
}

// Wait waits until cond holds of the deliveries so far, asking it again
// as each arrives, for up to timeout; then it fails the test, listing
// what arrived.
func (r *Receiver) Wait(tb testing.TB, cond func([]Delivery) bool, timeout time.Duration) {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		deliveries, arrived := append([]Delivery(nil), r.deliveries...), r.arrived
		r.mu.Unlock()
		if cond(deliveries) {
			return
		}
		select {
		case <-arrived:
		case <-deadline.C:
			tb.Fatalf("receivertest: not there within %v; %d requests arrived:%s", timeout, len(deliveries), list(deliveries))
		}
	}
}

// list is the deliveries, a line each.
func list(deliveries []Delivery) string {
	var b strings.Builder
	for _, d := range deliveries {
		fmt.Fprintf(&b, "\n  %d. at %s, webhook-id %q, webhook-timestamp %s: %s", d.N, d.Arrived.Format("15:04:05.000"), d.ID, stamp(d.Timestamp), d.Body)
		if d.Bad != "" {
			fmt.Fprintf(&b, " BAD: %s", d.Bad)
		}
	}
	return b.String()
}

// stamp is a webhook-timestamp as sent: Unix seconds, or none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return strconv.FormatInt(t.Unix(), 10)
}

// serve records a request, checked, and answers it.
func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	d := Delivery{Arrived: time.Now(), ID: req.Header.Get("webhook-id"), Signature: req.Header.Get("webhook-signature")}
	if s, err := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64); err == nil {
		d.Timestamp = time.Unix(s, 0)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	d.Body = body
	if err != nil {
		d.Bad = "reading the body: " + err.Error()
	}

	r.mu.Lock()
	if d.Bad == "" {
		d.Bad = r.check(req, &d)
	}
	d.N = len(r.deliveries) + 1
	r.deliveries = append(r.deliveries, d)
	close(r.arrived)
	r.arrived = make(chan struct{})
	answer := r.answer
	r.mu.Unlock()

	var reply Reply
	if answer != nil {
		reply = answer(d.N, d)
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-req.Context().Done():
			return
		case <-r.closed:
			// No answer at all: the connection drops, as a receiver's
			// that stops.
			panic(http.ErrAbortHandler)
		}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	w.WriteHeader(cmp.Or(reply.Status, http.StatusNoContent))
	_, _ = io.WriteString(w, reply.Body)
}

// check says what is wrong with the request as a delivery, decoding its
// body into d; empty when nothing is. Its caller holds r.mu.
func (r *Receiver) check(req *http.Request, d *Delivery) string {
	if req.Method != http.MethodPost || req.URL.Path != path {
		return fmt.Sprintf("%s %s, not POST %s", req.Method, req.URL.Path, path)
	}
	if t, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || t != "application/json" {
		return fmt.Sprintf("Content-Type %q, not application/json", req.Header.Get("Content-Type"))
	}
	if r.secretsErr != nil {
		return r.secretsErr.Error()
	}
	if len(r.secrets) == 0 {
		return "no secrets to verify it with"
	}
	var refusals []string
	for _, wh := range r.secrets {
		err := wh.Verify(d.Body, req.Header)
		if err == nil {
			refusals = nil
			break
		}
		refusals = append(refusals, err.Error())
	}
	if refusals != nil {
		return "the reference verifier refused it: " + strings.Join(refusals, "; ")
	}
	dec := json.NewDecoder(bytes.NewReader(d.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d.Event); err != nil {
		return "body: " + err.Error()
	}
	switch {
	case dec.More():
		return "body: more than one JSON value"
	case d.Event.Type == "":
		return "body: no type"
	case d.Event.Timestamp.IsZero():
		return "body: no timestamp"
	case !bytes.HasPrefix(bytes.TrimSpace(d.Event.Data), []byte("{")):
		return fmt.Sprintf("body: data %s is not an object", d.Event.Data)
	}
	if first, seen := r.bodies[d.ID]; seen && !bytes.Equal(first, d.Body) {
		return fmt.Sprintf("webhook-id %q came before with another body: %s", d.ID, first)
	} else if !seen {
		r.bodies[d.ID] = d.Body
	}
	return ""
}

// NewSecret is a new webhook secret: whsec_ and base64 of 32 random bytes.
func NewSecret(tb testing.TB) string {
	tb.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		tb.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// Sign is the reference library's webhook-signature entry (v1,base64) of
// the id, the timestamp and the body, signed with the secret.
func Sign(tb testing.TB, secret, id string, at time.Time, body []byte) string {
	tb.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		tb.Fatal(err)
	}
	signature, err := wh.Sign(id, at, body)
	if err != nil {
		tb.Fatal(err)
	}
	return signature
}
