package tasks

import (
	"math/big"
	"strings"
	"testing"
	"time"
)

// ulidValue reads a ULID's 128 bits.
func ulidValue(t *testing.T, ulid string) *big.Int {
	t.Helper()
	v := new(big.Int)
	for _, c := range ulid {
		d := strings.IndexRune(crockford, c)
		if d < 0 {
			t.Fatalf("%q is no ULID", ulid)
		}
		v.Lsh(v, 5).Or(v, big.NewInt(int64(d)))
	}
	return v
}

// Ids made in one millisecond sort in the order they were made, and none
// tells the next: they step by a random amount, not by one.
func TestIDsSortAndDoNotCount(t *testing.T) {
	ids.Lock()
	at := time.UnixMilli(int64(ids.ms)) // the millisecond of the last id made
	ids.Unlock()
	const n = 1000
	var prev *big.Int
	small := 0
	for i := range n {
		id := newID("q", at)
		if q, ok := queueOf(id); !ok || q != "q" {
			t.Fatalf("%q: not an id of queue q", id)
		}
		v := ulidValue(t, localID(id))
		if prev != nil {
			step := new(big.Int).Sub(v, prev)
			if step.Sign() <= 0 {
				t.Fatalf("id %d, %s, does not sort after the one before", i, id)
			}
			if step.Cmp(big.NewInt(1<<16)) < 0 {
				small++
			}
		}
		prev = v
	}
	// A random step below 2^16 of at most 2^32 comes once in 65,536.
	if small > 2 {
		t.Fatalf("%d of %d steps were below 2^16: ids count up", small, n-1)
	}
}
