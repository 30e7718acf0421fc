package client_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"claimdesk/client"
	"claimdesk/internal/webhooks/receivertest"
)

// webhookHeader is a delivery's header: its id, its timestamp in Unix
// seconds and its signatures.
func webhookHeader(id string, at time.Time, signatures string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
	h.Set("webhook-signature", signatures)
	return h
}

// TestVerifyWebhook verifies deliveries signed by the Standard Webhooks
// reference library, and ones tampered with, signed with another secret,
// stale, early or without their headers. Where the reference library's own
// verifier can judge a case (its tolerance is a fixed 5 minutes of the
// clock), it must judge it as VerifyWebhook does.
func TestVerifyWebhook(t *testing.T) {
	secret, other := receivertest.NewSecret(t), receivertest.NewSecret(t)
	const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	body := []byte(`{"type":"job.completed","timestamp":"2026-11-26T09:15:02.5Z","data":{"job":{"id":"j1","queue":"invoice-review"}}}`)
	now := time.Now()
	signed := func(at time.Time) http.Header {
		return webhookHeader(id, at, receivertest.Sign(t, secret, id, at, body))
	}
	without := func(name string) http.Header {
		h := signed(now)
		h.Del(name)
		return h
	}
	restamped := func(stamp string) http.Header {
		h := signed(now)
		h.Set("webhook-timestamp", stamp)
		return h
	}

	tests := []struct {
		name      string
		secrets   []string
		header    http.Header
		body      []byte
		at        time.Time // now, for VerifyWebhook
		tolerance time.Duration
		want      error // nil: taken
		reference bool  // the reference library's verifier must agree
	}{
		{name: "signed", secrets: []string{secret}, header: signed(now), reference: true},
		{name: "tampered body", secrets: []string{secret}, header: signed(now),
			body: []byte(`{"type":"job.completed","timestamp":"2026-11-26T09:15:02.5Z","data":{"job":{"id":"j2","queue":"invoice-review"}}}`),
			want: client.ErrWebhookSignature, reference: true},
		{name: "body with a space more", secrets: []string{secret}, header: signed(now), body: append(body, ' '),
			want: client.ErrWebhookSignature, reference: true},
		{name: "another id", secrets: []string{secret}, header: func() http.Header {
			h := signed(now)
			h.Set("webhook-id", "msg_other")
			return h
		}(), want: client.ErrWebhookSignature, reference: true},
		{name: "another timestamp", secrets: []string{secret}, header: restamped(strconv.FormatInt(now.Unix()+1, 10)),
			want: client.ErrWebhookSignature, reference: true},
		{name: "wrong secret", secrets: []string{other}, header: signed(now),
			want: client.ErrWebhookSignature, reference: true},
		{name: "old", secrets: []string{secret}, header: signed(now.Add(-6 * time.Minute)),
			want: client.ErrWebhookTimestamp, reference: true},
		{name: "future", secrets: []string{secret}, header: signed(now.Add(6 * time.Minute)),
			want: client.ErrWebhookTimestamp, reference: true},
		{name: "old by the tolerance exactly", secrets: []string{secret}, header: signed(now),
			at: time.Unix(now.Unix(), 0).Add(5 * time.Minute)},
		{name: "old by a second more than the tolerance", secrets: []string{secret}, header: signed(now),
			at: time.Unix(now.Unix(), 0).Add(5*time.Minute + time.Second), want: client.ErrWebhookTimestamp},
		{name: "early by the tolerance exactly", secrets: []string{secret}, header: signed(now),
			at: time.Unix(now.Unix(), 0).Add(-5 * time.Minute)},
		{name: "early by a second more than the tolerance", secrets: []string{secret}, header: signed(now),
			at: time.Unix(now.Unix(), 0).Add(-5*time.Minute - time.Second), want: client.ErrWebhookTimestamp},
		{name: "old within a tolerance given", secrets: []string{secret}, header: signed(now.Add(-6 * time.Minute)),
			tolerance: 10 * time.Minute},
		{name: "old beyond a tolerance given", secrets: []string{secret}, header: signed(now.Add(-2 * time.Minute)),
			tolerance: time.Minute, want: client.ErrWebhookTimestamp},
		{name: "old and unsigned", secrets: []string{other}, header: signed(now.Add(-time.Hour)),
			want: client.ErrWebhookSignature},
		{name: "two signatures, the second valid", secrets: []string{secret},
			header: webhookHeader(id, now, receivertest.Sign(t, other, id, now, body)+" "+receivertest.Sign(t, secret, id, now, body)), reference: true},
		{name: "two signatures, the first valid", secrets: []string{secret},
			header: webhookHeader(id, now, receivertest.Sign(t, secret, id, now, body)+" "+receivertest.Sign(t, other, id, now, body)), reference: true},
		{name: "two signatures, none valid", secrets: []string{receivertest.NewSecret(t)},
			header: webhookHeader(id, now, receivertest.Sign(t, other, id, now, body)+" "+receivertest.Sign(t, secret, id, now, body)),
			want:   client.ErrWebhookSignature, reference: true},
		{name: "unknown versions passed over", secrets: []string{secret},
			header:    webhookHeader(id, now, "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg== v0 "+receivertest.Sign(t, secret, id, now, body)),
			reference: true},
		{name: "a valid signature under an unknown version", secrets: []string{secret},
			header: webhookHeader(id, now, "v2"+receivertest.Sign(t, secret, id, now, body)[2:]),
			want:   client.ErrWebhookSignature, reference: true},
		{name: "two secrets, the new one valid", secrets: []string{other, secret}, header: signed(now)},
		{name: "two secrets, the old one valid", secrets: []string{secret, other}, header: signed(now)},
		{name: "two secrets, none valid", secrets: []string{other, receivertest.NewSecret(t)}, header: signed(now),
			want: client.ErrWebhookSignature},
		{name: "no webhook-id", secrets: []string{secret}, header: without("webhook-id"),
			want: client.ErrWebhookHeaders, reference: true},
		{name: "no webhook-timestamp", secrets: []string{secret}, header: without("webhook-timestamp"),
			want: client.ErrWebhookHeaders, reference: true},
		{name: "no webhook-signature", secrets: []string{secret}, header: without("webhook-signature"),
			want: client.ErrWebhookHeaders, reference: true},
		{name: "empty webhook-signature", secrets: []string{secret}, header: webhookHeader(id, now, " "),
			want: client.ErrWebhookHeaders},
		{name: "timestamp not a number", secrets: []string{secret}, header: restamped("yesterday"),
			want: client.ErrWebhookHeaders, reference: true},
		{name: "timestamp in milliseconds' form", secrets: []string{secret}, header: restamped(strconv.FormatInt(now.Unix(), 10) + ".000"),
			want: client.ErrWebhookHeaders, reference: true},
		{name: "timestamp with a sign", secrets: []string{secret}, header: restamped("+" + strconv.FormatInt(now.Unix(), 10)),
			want: client.ErrWebhookHeaders},
		{name: "timestamp with a leading zero", secrets: []string{secret}, header: restamped("0" + strconv.FormatInt(now.Unix(), 10)),
			want: client.ErrWebhookHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := body
			if tt.body != nil {
				b = tt.body
			}
			at := now
			if !tt.at.IsZero() {
				at = tt.at
			}
			err := client.VerifyWebhook(tt.secrets, tt.header, b, at, tt.tolerance)
			if tt.want == nil && err != nil {
				t.Fatalf("VerifyWebhook refused a delivery it should take: %v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("VerifyWebhook = %v, want an error that is %v", err, tt.want)
			}
			if !tt.reference {
				return
			}
			wh, err := standardwebhooks.NewWebhook(tt.secrets[0])
			if err != nil {
				t.Fatal(err)
			}
			if err, taken := wh.Verify(b, tt.header), tt.want == nil; (err == nil) != taken {
				t.Fatalf("the reference verifier says %v where VerifyWebhook took it: %v", err, taken)
			}
		})
	}
}

// TestVerifyWebhookSecrets refuses secrets that are not webhook secrets
// with an error of its own, whatever the delivery.
func TestVerifyWebhookSecrets(t *testing.T) {
	secret := receivertest.NewSecret(t)
	body := []byte(`{}`)
	now := time.Now()
	header := webhookHeader("msg_1", now, receivertest.Sign(t, secret, "msg_1", now, body))
	for _, secrets := range [][]string{
		nil,
		{secret[len("whsec_"):]},
		{"whsec_not base64!"},
		{"whsec_"},
		{secret, "whsec_%%%"},
	} {
		err := client.VerifyWebhook(secrets, header, body, now, 0)
		if err == nil {
			t.Errorf("secrets %q taken", secrets)
			continue
		}
		for _, refusal := range []error{client.ErrWebhookHeaders, client.ErrWebhookSignature, client.ErrWebhookTimestamp} {
			if errors.Is(err, refusal) {
				t.Errorf("secrets %q: %v, a refusal of the delivery rather than of the secrets", secrets, err)
			}
		}
	}
}

// TestParseWebhook returns a verified delivery's event, and nothing of one
// that fails verification.
func TestParseWebhook(t *testing.T) {
	secret := receivertest.NewSecret(t)
	const id = "msg_2"
	body := []byte(`{"type":"batch.finished","timestamp":"2026-11-26T09:15:02.5Z","data":{"batch":{"id":"b1","state":"completed"}}}`)
	now := time.Now()
	header := webhookHeader(id, now, receivertest.Sign(t, secret, id, now, body))

	event, err := client.ParseWebhook([]string{secret}, header, body, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 26, 9, 15, 2, 5e8, time.UTC); event.Type != "batch.finished" || !event.Timestamp.Equal(want) ||
		string(event.Data) != `{"batch":{"id":"b1","state":"completed"}}` {
		t.Fatalf("ParseWebhook = %+v (data %s)", event, event.Data)
	}

	event, err = client.ParseWebhook([]string{receivertest.NewSecret(t)}, header, body, now, 0)
	if !errors.Is(err, client.ErrWebhookSignature) || event != nil {
		t.Fatalf("ParseWebhook with another secret = %+v, %v; want nil, %v", event, err, client.ErrWebhookSignature)
	}

	notJSON := []byte("job.completed")
	if _, err := client.ParseWebhook([]string{secret}, webhookHeader(id, now, receivertest.Sign(t, secret, id, now, notJSON)), notJSON, now, 0); err == nil {
		t.Fatal("ParseWebhook took a signed body that is not JSON")
	}
}

// A receiver's handler checks each delivery before it does anything with
// it.
func ExampleVerifyWebhook() {
	secrets := []string{os.Getenv("WEBHOOK_SECRET")} // during a rotation of the secret, the old and the new
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20)) // the body as sent, not decoded and encoded again
		if err := client.VerifyWebhook(secrets, r.Header, body, time.Now(), 0); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest) // not signed with the secret, or too old: do nothing
			return
		}
		// Do the event's work once per webhook-id, then answer 2xx.
		w.WriteHeader(http.StatusNoContent)
	})
	http.Handle("/claimdesk-events", hook)
}
