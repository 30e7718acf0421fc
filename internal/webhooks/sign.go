package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix starts every endpoint's secret, as Standard Webhooks writes
// them: whsec_ and the key in standard base64.
const SecretPrefix = "whsec_"

// The sizes of a secret's key, in bytes, that SecretKey takes: those the
// Standard Webhooks text allows. NewSecret makes keys of secretBytes.
const (
	minKeyBytes = 24
	maxKeyBytes = 64
	secretBytes = 32
)

// NewSecret returns a new secret: SecretPrefix and 32 bytes from
// crypto/rand in standard base64.
func NewSecret() (string, error) {
	key := make([]byte, secretBytes)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("new secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// SecretKey returns the key of a secret, the bytes its base64 stands for,
// which Sign signs with (not the secret's text). It refuses a secret
// without SecretPrefix, whose base64 is malformed, or whose key is not 24
// to 64 bytes.
func SecretKey(secret string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("secret: want " + SecretPrefix + " and base64")
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, errors.New("secret: want " + SecretPrefix + " and standard base64 (with padding)")
	}
	if len(key) < minKeyBytes || len(key) > maxKeyBytes {
		return nil, fmt.Errorf("secret: a key of %d bytes, want %d to %d", len(key), minKeyBytes, maxKeyBytes)
	}
	return key, nil
}

// Sign returns the webhook-signature header of a delivery: for each key, in
// the order given, "v1," and the base64 HMAC-SHA256 of id "." timestamp
// "." body, keyed by the key; space-separated. While an endpoint's secret
// is rotated, keys holds the new key and the old, and a receiver that knows
// either accepts the delivery.
func Sign(keys [][]byte, id string, timestamp int64, body []byte) string {
	signed := make([]byte, 0, len(id)+22+len(body))
	signed = append(signed, id...)
	signed = append(signed, '.')
	signed = strconv.AppendInt(signed, timestamp, 10)
	signed = append(signed, '.')
	signed = append(signed, body...)
	sigs := make([]string, len(keys))
	for i, key := range keys {
		mac := hmac.New(sha256.New, key)
		mac.Write(signed)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	return strings.Join(sigs, " ")
}
