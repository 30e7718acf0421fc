package tasks

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// Job ids are a ULID (26 characters of Crockford base32: 48 bits of
// milliseconds, 80 random bits) followed by "." and the queue name, so any id
// tells which queue's keys hold the job. Ids made by one process sort in the
// order they were made, which keeps equal-rank jobs first in, first out:
// within a millisecond each id is the one before plus a random step of up
// to 2^32, so no id tells the next (a batch's jobs are made at once).

const (
	ulidLen    = 26
	crockford  = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	idSepIndex = ulidLen
)

// isCrockford tells the bytes that are digits of crockford.
var isCrockford = func() (t [256]bool) {
	for i := range len(crockford) {
		t[crockford[i]] = true
	}
	return t
}()

var ids struct {
	sync.Mutex
	ms uint64
	hi uint16 // top 16 of the 80 random bits
	lo uint64 // low 64 random bits
}

// Inside Redis a job or batch is known by its ULID alone: every key that
// holds it is its queue's already, and the queue's name in each copy of the
// id (a waiting job's metadata, payload and place in line) would be a good
// part of what the job costs in memory. localID and globalID convert at the
// edge of the engine; scripts see local ids only.

// localID is the id as its queue's keys hold it. id must have passed queueOf.
func localID(id string) string { return id[:ulidLen] }

// globalID is the id of the queue's job or batch known locally as local
// ("" stays "").
func globalID(local, queue string) string {
	if local == "" {
		return ""
	}
	return local + "." + queue
}

// newID returns a fresh id for a job or batch of the queue.
func newID(queue string, now time.Time) string {
	ids.Lock()
	ms := uint64(now.UnixMilli())
	if ms <= ids.ms {
		// Same (or earlier) millisecond: step up so ids stay ordered.
		var b [4]byte
		_, _ = rand.Read(b[:])
		before := ids.lo
		ids.lo += 1 + uint64(binary.BigEndian.Uint32(b[:]))
		if ids.lo < before {
			ids.hi++
		}
	} else {
		var b [10]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
		ids.ms, ids.hi, ids.lo = ms, binary.BigEndian.Uint16(b[:2]), binary.BigEndian.Uint64(b[2:])
	}
	ms, hi, lo := ids.ms, ids.hi, ids.lo
	ids.Unlock()

	var raw [16]byte
	binary.BigEndian.PutUint16(raw[0:], uint16(ms>>32))
	binary.BigEndian.PutUint32(raw[2:], uint32(ms))
	binary.BigEndian.PutUint16(raw[6:], hi)
	binary.BigEndian.PutUint64(raw[8:], lo)

	var out [ulidLen]byte
	// 128 bits in 26 base32 digits: the first digit carries the top 3 bits.
	hiWord, loWord := binary.BigEndian.Uint64(raw[:8]), binary.BigEndian.Uint64(raw[8:])
	for i := ulidLen - 1; i >= 0; i-- {
		out[i] = crockford[loWord&31]
		loWord = loWord>>5 | hiWord<<59
		hiWord >>= 5
	}
	return string(out[:]) + "." + queue
}

// queueOf returns the queue named in a job id, or false if id is not one.
func queueOf(id string) (string, bool) {
	if len(id) < ulidLen+2 || id[idSepIndex] != '.' || id[0] > '7' {
		return "", false
	}
	for i := 0; i < ulidLen; i++ {
		if !isCrockford[id[i]] {
			return "", false
		}
	}
	q := id[idSepIndex+1:]
	if !validQueueName(q) {
		return "", false
	}
	return q, true
}

// newToken returns a fresh reservation token: 128 random bits from crypto/rand.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}
