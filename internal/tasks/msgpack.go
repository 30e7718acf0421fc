package tasks

import (
	"errors"
	"fmt"
	"math"
)

// The scripts store job metadata as MessagePack (lua/lib.lua, store), as
// Redis's cmsgpack writes it: a run of values, integers, floats, strings,
// nil and, for skipped_by, an array of strings. This decodes exactly that
// much of the format, into typed fields without boxing.

var errMsgpack = errors.New("malformed metadata")

// msgpackReader reads MessagePack values from b.
type msgpackReader struct {
	b string
	i int
}

func (r *msgpackReader) byte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, errMsgpack
	}
	r.i++
	return r.b[r.i-1], nil
}

func (r *msgpackReader) take(n int) (string, error) {
	if n < 0 || n > len(r.b)-r.i {
		return "", errMsgpack
	}
	r.i += n
	return r.b[r.i-n : r.i], nil
}

// uint reads an n-byte big-endian unsigned integer.
func (r *msgpackReader) uint(n int) (uint64, error) {
	s, err := r.take(n)
	var v uint64
	for i := 0; i < len(s); i++ {
		v = v<<8 | uint64(s[i])
	}
	return v, err
}

// number reads an integer or a float.
func (r *msgpackReader) number() (float64, error) {
	t, err := r.byte()
	switch {
	case err != nil:
		return 0, err
	case t <= 0x7f:
		return float64(t), nil
	case t >= 0xe0:
		return float64(int8(t)), nil
	case t >= 0xcc && t <= 0xcf:
		v, err := r.uint(1 << (t - 0xcc))
		return float64(v), err
	case t >= 0xd0 && t <= 0xd3:
		n := 1 << (t - 0xd0)
		v, err := r.uint(n)
		shift := 64 - 8*n // sign-extend from n bytes
		return float64(int64(v<<shift) >> shift), err
	case t == 0xca:
		v, err := r.uint(4)
		return float64(math.Float32frombits(uint32(v))), err
	case t == 0xcb:
		v, err := r.uint(8)
		return math.Float64frombits(v), err
	}
	return 0, fmt.Errorf("%w: 0x%02x is not a number", errMsgpack, t)
}

func (r *msgpackReader) integer() (int64, error) {
	f, err := r.number()
	return int64(f), err
}

// str reads a string.
func (r *msgpackReader) str() (string, error) {
	t, err := r.byte()
	switch {
	case err != nil:
		return "", err
	case t&0xe0 == 0xa0:
		return r.take(int(t & 0x1f))
	case t >= 0xd9 && t <= 0xdb:
		n, err := r.uint(1 << (t - 0xd9))
		if err != nil {
			return "", err
		}
		return r.take(int(min(n, math.MaxInt32)))
	}
	return "", fmt.Errorf("%w: 0x%02x is not a string", errMsgpack, t)
}

// length reads the header of an array and returns its number of elements.
func (r *msgpackReader) length() (int, error) {
	t, err := r.byte()
	switch {
	case err != nil:
		return 0, err
	case t&0xf0 == 0x90:
		return int(t & 0x0f), nil
	case t == 0xdc || t == 0xdd:
		n, err := r.uint(2 << (t - 0xdc))
		// Each element takes at least a byte: a larger count is a lie.
		if err == nil && n > uint64(len(r.b)-r.i) {
			err = errMsgpack
		}
		return int(n), err
	}
	return 0, fmt.Errorf("%w: 0x%02x is not an array", errMsgpack, t)
}

// metaFields is how many values a job's metadata has (META in lib.lua);
// its history follows them.
const metaFields = 21

// decodeMeta reads job metadata as the scripts store it: one value per
// field, in lib.lua's order, nil for an absent field; then the history,
// kept undecoded (decodeHistory).
func decodeMeta(raw string) (meta, error) {
	var m meta
	r := &msgpackReader{b: raw}
	for field := 0; field < metaFields && r.i < len(r.b); field++ {
		if r.b[r.i] == 0xc0 { // nil
			r.i++
			continue
		}
		if err := m.read(field, r); err != nil {
			return m, fmt.Errorf("field %d: %w", field, err)
		}
	}
	if m.RunAt == 0 {
		m.RunAt = m.CreatedAt
	}
	m.History = raw[r.i:]
	return m, nil
}

// read reads the value of the field at this place.
func (m *meta) read(field int, r *msgpackReader) (err error) {
	small := func(dst *int) error {
		n, err := r.integer()
		*dst = int(n)
		return err
	}
	switch field {
	case 0:
		var s string
		s, err = r.str()
		m.State = State(s)
	case 1:
		m.Title, err = r.str()
	case 2:
		err = small(&m.Priority)
	case 3:
		err = small(&m.Attempts)
	case 4:
		err = small(&m.MaxAttempts)
	case 5:
		err = small(&m.LeaseSeconds)
	case 6:
		m.CreatedAt, err = r.integer()
	case 7:
		m.RunAt, err = r.integer()
	case 8:
		m.Rank, err = r.number()
	case 9:
		m.ReservedBy, err = r.str()
	case 10:
		m.ReservedAt, err = r.integer()
	case 11:
		m.Deadline, err = r.integer()
	case 12:
		m.Token, err = r.str()
	case 13:
		err = small(&m.Extensions)
	case 14:
		m.FinishedAt, err = r.integer()
	case 15:
		m.LastError, err = r.str()
	case 16:
		m.IdempotencyKey, err = r.str()
	case 17:
		var n int
		if n, err = r.length(); err != nil {
			return err
		}
		m.SkippedBy = make([]string, n)
		for i := range m.SkippedBy {
			if m.SkippedBy[i], err = r.str(); err != nil {
				return err
			}
		}
	case 18:
		m.Batch, err = r.str()
	case 19:
		m.ClaimKey, err = r.str()
	case 20:
		err = small(&m.HistoryCount)
	}
	return err
}
