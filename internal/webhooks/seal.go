package webhooks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// The forms of a secret as stored: sealedPrefix and the base64 of a nonce
// and the AES-256-GCM ciphertext, or plainPrefix and the secret as it is.
const (
	sealedPrefix = "v1:"
	plainPrefix  = "plain:"
)

// Sealer seals the endpoints' secrets for storing, and opens them again.
// With a key it seals them with AES-256-GCM, so whoever reads Redis
// without the key cannot sign as claimdesk; without one it stores them as
// they are. It is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD // nil: no key
}

// NewSealer returns a Sealer that seals with key, which must be 32 bytes,
// or, when key is empty, one that stores secrets as they are.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) == 0 {
		return &Sealer{}, nil
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("sealer: a key of %d bytes, want 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sealer: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("sealer: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Sealed reports whether s seals secrets (it has a key).
func (s *Sealer) Sealed() bool {
	return s.aead != nil
}

// Seal returns secret as it is to be stored: "v1:" and the base64 of a
// random nonce and the ciphertext when s has a key, else "plain:" and the
// secret.
func (s *Sealer) Seal(secret string) (string, error) {
	if s.aead == nil {
		return plainPrefix + secret, nil
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(secret)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal secret: %w", err)
	}
	return sealedPrefix + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(secret), nil)), nil
}

// Open returns the secret a stored value holds. A plain one opens with or
// without a key, so the secrets stored before a key was set still serve
// (unsealed until they are rotated). A sealed one needs the key it was
// sealed with: without a key, with another, or tampered with, it does not
// open, and Open says which.
func (s *Sealer) Open(stored string) (string, error) {
	if secret, ok := strings.CutPrefix(stored, plainPrefix); ok {
		return secret, nil
	}
	encoded, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return "", errors.New("open secret: not a stored secret (v1:… or plain:…)")
	}
	if s.aead == nil {
		return "", errors.New("open secret: it is sealed, and no key is set to open it")
	}
	sealed, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(sealed) < s.aead.NonceSize() {
		return "", errors.New("open secret: a sealed secret that is not base64 of a nonce and ciphertext")
	}
	nonce, ciphertext := sealed[:s.aead.NonceSize()], sealed[s.aead.NonceSize():]
	secret, err := s.aead.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return "", errors.New("open secret: it was sealed with another key, or changed since")
	}
	return string(secret), nil
}
