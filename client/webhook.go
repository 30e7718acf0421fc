package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// defaultWebhookTolerance is how far a delivery's webhook-timestamp may be
// from now, before or after, when the caller gives no tolerance.
const defaultWebhookTolerance = 5 * time.Minute

// The refusals of [VerifyWebhook] and [ParseWebhook], each wrapped with
// what was wrong; find them with errors.Is. A receiver answers a delivery
// refused for any of them with a 4xx and does nothing with it.
var (
	// ErrWebhookHeaders is a delivery without a webhook-id,
	// webhook-timestamp or webhook-signature header, or with a timestamp
	// that is not Unix seconds.
	ErrWebhookHeaders = errors.New("webhook headers missing or malformed")
	// ErrWebhookSignature is a delivery none of whose v1 signatures is the
	// signature of its id, timestamp and body by any of the secrets.
	ErrWebhookSignature = errors.New("no webhook signature matches")
	// ErrWebhookTimestamp is a delivery, signed as it should be, whose
	// timestamp is further from now than the tolerance: a replay, or a
	// clock that is off.
	ErrWebhookTimestamp = errors.New("webhook timestamp out of tolerance")
)

// webhookSecretPrefix begins every webhook secret; base64 of the key
// follows it.
const webhookSecretPrefix = "whsec_"

// WebhookEvent is the body of a webhook delivery: what happened, when
// (not when it was delivered), and the event's data, whose form its type
// says.
type WebhookEvent struct {
	// Type is the event's type, such as job.completed.
	Type string `json:"type"`
	// Timestamp is when the event happened.
	Timestamp time.Time `json:"timestamp"`
	// Data is the event's data, as sent.
	Data json.RawMessage `json:"data"`
}

// VerifyWebhook checks that a delivery of claimdesk's webhooks, its
// header and its body as received (read whole, not decoded and encoded
// again), is one that claimdesk signed with one of the secrets, as the
// Standard Webhooks specification says: the webhook-signature header
// holds space-separated signatures, and one of its v1 signatures (other
// versions are passed over) is the base64 HMAC-SHA256 of
// webhook-id + "." + webhook-timestamp + "." + body, keyed by a secret's
// bytes (its base64 after whsec_). During a rotation of the endpoint's
// secret, pass the old and the new: either one passes. The delivery's
// webhook-timestamp, Unix seconds, must be within tolerance of now, before
// or after (0: 5 minutes).
//
// A refused delivery's error wraps [ErrWebhookHeaders],
// [ErrWebhookSignature] or [ErrWebhookTimestamp]; any other error is a
// secret that is not one (no secrets, or one that is not whsec_ and
// base64), the caller's mistake rather than the delivery's.
//
// The webhook-id is the event's, the same on every retry of its delivery:
// it is the key to do an event's work once. The timestamp is the
// attempt's, new on every retry.
func VerifyWebhook(secrets []string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	keys, err := webhookKeys(secrets)
	if err != nil {
		return err
	}
	id, stamp := header.Get("webhook-id"), header.Get("webhook-timestamp")
	signatures := strings.Fields(strings.Join(header.Values("webhook-signature"), " "))
	switch {
	case id == "":
		return fmt.Errorf("%w: no webhook-id", ErrWebhookHeaders)
	case stamp == "":
		return fmt.Errorf("%w: no webhook-timestamp", ErrWebhookHeaders)
	case len(signatures) == 0:
		return fmt.Errorf("%w: no webhook-signature", ErrWebhookHeaders)
	}
	// Only the plain decimal form, so that the timestamp signed is the one
	// judged.
	seconds, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil || strconv.FormatInt(seconds, 10) != stamp {
		return fmt.Errorf("%w: webhook-timestamp %q is not Unix seconds", ErrWebhookHeaders, stamp)
	}
	if !webhookSigned(keys, signatures, id+"."+stamp+"."+string(body)) {
		return fmt.Errorf("%w: %d signatures, %d secrets", ErrWebhookSignature, len(signatures), len(keys))
	}
	if tolerance <= 0 {
		tolerance = defaultWebhookTolerance
	}
	if off := now.Sub(time.Unix(seconds, 0)); off > tolerance || off < -tolerance {
		return fmt.Errorf("%w: webhook-timestamp %d is %v from now, more than %v", ErrWebhookTimestamp, seconds, off, tolerance)
	}
	return nil
}

// ParseWebhook verifies a delivery as [VerifyWebhook] does and returns its
// body decoded.
func ParseWebhook(secrets []string, header http.Header, body []byte, now time.Time, tolerance time.Duration) (*WebhookEvent, error) {
	if err := VerifyWebhook(secrets, header, body, now, tolerance); err != nil {
		return nil, err
	}
	var event WebhookEvent
	if err := json.Unmarshal(body, &event); err != nil {
		return nil, fmt.Errorf("webhook body: %w", err)
	}
	return &event, nil
}

// webhookKeys decodes the secrets into their keys.
func webhookKeys(secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, errors.New("no webhook secrets")
	}
	keys := make([][]byte, len(secrets))
	for i, secret := range secrets {
		encoded, found := strings.CutPrefix(secret, webhookSecretPrefix)
		key, err := base64.StdEncoding.DecodeString(encoded)
		if !found || err != nil || len(key) == 0 {
			return nil, fmt.Errorf("webhook secret %d of %d is not %s and base64", i+1, len(secrets), webhookSecretPrefix)
		}
		keys[i] = key
	}
	return keys, nil
}

// webhookSigned reports whether one of the signatures is a v1 signature
// of the content by one of the keys.
func webhookSigned(keys [][]byte, signatures []string, content string) bool {
	for _, key := range keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(content))
		want := []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		for _, s := range signatures {
			version, signature, _ := strings.Cut(s, ",")
			if version == "v1" && hmac.Equal([]byte(signature), want) {
				return true
			}
		}
	}
	return false
}
