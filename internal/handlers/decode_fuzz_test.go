package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"unicode/utf8"

	"claimdesk/internal/tasks"
)

// The request decoders under fuzzing, one target per body: whatever the
// body, decodeJSON never panics; a body it refuses is a 400 of the error
// table (invalid_json or invalid_field), never an internal error; a body
// it takes is valid UTF-8, and the value it decoded, encoded again, is
// taken again and decodes to the same value. Their seed corpora in
// testdata/fuzz run with every go test.

func FuzzDecodeEnqueue(f *testing.F) { fuzzDecode[enqueueRequest](f) }

func FuzzDecodeBatch(f *testing.F) { fuzzDecode[tasks.NewBatch](f) }

// FuzzDecodeHolder covers the bodies of complete, fail, extend, release
// and skip.
func FuzzDecodeHolder(f *testing.F) { fuzzDecode[holderRequest](f) }

func FuzzDecodeQueue(f *testing.F) { fuzzDecode[tasks.Queue](f) }

func fuzzDecode[T any](f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		var v T
		if err := decodeJSON(body, &v); err != nil {
			pub, internal := publicError(err)
			if internal || pub.Status != http.StatusBadRequest || pub.Code != "invalid_json" && pub.Code != "invalid_field" {
				t.Fatalf("body %q refused with %d %s (%v)", body, pub.Status, pub.Code, err)
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("took %q, which is not UTF-8", body)
		}
		encoded, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("took %q as %+v, which does not encode: %v", body, v, err)
		}
		var again T
		if err := decodeJSON(encoded, &again); err != nil {
			t.Fatalf("took %q as %s, but not that: %v", body, encoded, err)
		}
		if twice, _ := json.Marshal(again); !bytes.Equal(encoded, twice) {
			t.Fatalf("took %q as %s, and that as %s", body, encoded, twice)
		}
	})
}
