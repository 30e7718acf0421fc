package webhooks

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The signatures are checked by the Standard Webhooks reference library,
// the text's own verifier: a delivery signed here is one any receiver
// built on the text accepts.

// delivery is the signed headers of a delivery, as a receiver gets them.
func delivery(signature, id string, timestamp int64) http.Header {
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(timestamp, 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, signature)
	return h
}

// verifier is the reference library's receiver of the given secret.
func verifier(t *testing.T, secret string) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

// newKey makes a secret and its key.
func newKey(t *testing.T) (string, []byte) {
	t.Helper()
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	key, err := SecretKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	return secret, key
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	a, key := newKey(t)
	b, _ := newKey(t)
	if !strings.HasPrefix(a, "whsec_") || len(key) != 32 {
		t.Errorf("NewSecret() = %q, a key of %d bytes; want whsec_ and 32 bytes in base64", a, len(key))
	}
	if a == b {
		t.Errorf("NewSecret() made %q twice", a)
	}
}

func TestSecretKeyRefuses(t *testing.T) {
	t.Parallel()
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct{ name, secret string }{
		{"no prefix", b64(bytes.Repeat([]byte{7}, 32))},
		{"another prefix", "whsk_" + b64(bytes.Repeat([]byte{7}, 32))},
		{"not base64", "whsec_not*base64"},
		{"URL base64", "whsec_" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))},
		{"empty", "whsec_"},
		{"too short a key", "whsec_" + b64(bytes.Repeat([]byte{7}, 23))},
		{"too long a key", "whsec_" + b64(bytes.Repeat([]byte{7}, 65))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if key, err := SecretKey(tc.secret); err == nil {
				t.Errorf("SecretKey(%q) = %x, want an error", tc.secret, key)
			}
		})
	}
	for _, n := range []int{24, 64} {
		if _, err := SecretKey("whsec_" + b64(bytes.Repeat([]byte{7}, n))); err != nil {
			t.Errorf("a key of %d bytes: %v", n, err)
		}
	}
}

// The example of the reference library's own tests, which its every
// language signs alike.
func TestSignKnownAnswer(t *testing.T) {
	t.Parallel()
	key, err := SecretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign([][]byte{key}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
}

func TestSignVerifies(t *testing.T) {
	t.Parallel()
	oldSecret, oldKey := newKey(t)
	newSecret, key := newKey(t)
	otherSecret, _ := newKey(t)
	const id = "evt_01JD6Q3M7X9K2B4N8P5R0T1V3W"
	body := []byte(`{"type":"job.completed","timestamp":"2026-11-24T09:30:00Z","data":{"job":"01JD6Q3M7X9K2B4N8P5R0T1V3W.invoice-review"}}`)
	now := time.Now().Unix()

	t.Run("one key", func(t *testing.T) {
		t.Parallel()
		if err := verifier(t, newSecret).Verify(body, delivery(Sign([][]byte{key}, id, now, body), id, now)); err != nil {
			t.Errorf("the receiver refused a delivery: %v", err)
		}
	})

	t.Run("two keys", func(t *testing.T) {
		t.Parallel()
		sig := Sign([][]byte{key, oldKey}, id, now, body)
		for _, secret := range []string{newSecret, oldSecret} {
			if err := verifier(t, secret).Verify(body, delivery(sig, id, now)); err != nil {
				t.Errorf("a receiver of one of the two secrets refused %q: %v", sig, err)
			}
		}
		// One signature per key, in the keys' order, as the reference
		// library signs with each alone.
		parts := strings.Split(sig, " ")
		for i, secret := range []string{newSecret, oldSecret} {
			want, err := verifier(t, secret).Sign(id, time.Unix(now, 0), body)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != 2 || parts[i] != want {
				t.Errorf("Sign = %q, want the signature %d to be %q", sig, i, want)
			}
		}
		if err := verifier(t, otherSecret).Verify(body, delivery(sig, id, now)); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
			t.Errorf("a receiver of another secret: got %v, want %v", err, standardwebhooks.ErrNoMatchingSignature)
		}
	})

	t.Run("tampered", func(t *testing.T) {
		t.Parallel()
		sig := Sign([][]byte{key, oldKey}, id, now, body)
		for _, tc := range []struct {
			name string
			body []byte
			id   string
			ts   int64
		}{
			{"body", bytes.Replace(body, []byte("completed"), []byte("canceled"), 1), id, now},
			{"a byte more of body", append(bytes.Clone(body), ' '), id, now},
			{"id", body, id + "X", now},
			{"timestamp", body, id, now + 1},
		} {
			err := verifier(t, newSecret).Verify(tc.body, delivery(sig, tc.id, tc.ts))
			if !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
				t.Errorf("a delivery with its %s changed: got %v, want %v", tc.name, err, standardwebhooks.ErrNoMatchingSignature)
			}
		}
	})
}
