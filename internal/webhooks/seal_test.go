package webhooks

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// sealer is a Sealer of key.
func sealer(t *testing.T, key []byte) *Sealer {
	t.Helper()
	s, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewSealerRefuses(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 16, 24, 31, 33, 64} {
		if _, err := NewSealer(make([]byte, n)); err == nil {
			t.Errorf("NewSealer of a key of %d bytes: no error, want one", n)
		}
	}
}

func TestSealer(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{0x5a}, 32)
	secret, _ := newKey(t)
	sealing, plain := sealer(t, key), sealer(t, nil)
	if !sealing.Sealed() || plain.Sealed() {
		t.Errorf("Sealed() = %v with a key, %v without; want true, false", sealing.Sealed(), plain.Sealed())
	}

	t.Run("sealed", func(t *testing.T) {
		t.Parallel()
		stored, err := sealing.Seal(secret)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(stored, "v1:") || strings.Contains(stored, strings.TrimPrefix(secret, "whsec_")) {
			t.Errorf("Seal(%q) = %q, want v1: and the secret unreadable", secret, stored)
		}
		// A fresh nonce each time: the same secret is never stored alike.
		if again, _ := sealing.Seal(secret); again == stored {
			t.Errorf("Seal sealed %q twice as %q", secret, stored)
		}
		// The key is what opens it, not this Sealer.
		if got, err := sealer(t, bytes.Clone(key)).Open(stored); err != nil || got != secret {
			t.Errorf("Open(%q) = %q, %v; want %q", stored, got, err, secret)
		}
	})

	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		stored, err := plain.Seal(secret)
		if err != nil {
			t.Fatal(err)
		}
		if stored != "plain:"+secret {
			t.Errorf("Seal(%q) without a key = %q, want plain: and the secret", secret, stored)
		}
		// A key set later still opens the secrets stored before it.
		for name, s := range map[string]*Sealer{"without a key": plain, "with a key": sealing} {
			if got, err := s.Open(stored); err != nil || got != secret {
				t.Errorf("Open(%q) %s = %q, %v; want %q", stored, name, got, err, secret)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		stored, err := sealing.Seal(secret)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(stored, "v1:"))
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)-1] ^= 1
		tampered := "v1:" + base64.StdEncoding.EncodeToString(raw)
		for _, tc := range []struct {
			name   string
			s      *Sealer
			stored string
			says   string
		}{
			{"no key", plain, stored, "no key is set"},
			{"another key", sealer(t, bytes.Repeat([]byte{0xa5}, 32)), stored, "another key"},
			{"tampered", sealing, tampered, "changed since"},
			{"not base64", sealing, "v1:not*base64", "not base64"},
			{"too short", sealing, "v1:" + base64.StdEncoding.EncodeToString([]byte("short")), "not base64 of a nonce"},
			{"no form", sealing, secret, "not a stored secret"},
			{"empty", plain, "", "not a stored secret"},
		} {
			got, err := tc.s.Open(tc.stored)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: Open(%q) = %q, %v; want an error saying %q", tc.name, tc.stored, got, err, tc.says)
			}
		}
	})
}
