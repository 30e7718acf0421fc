package tasks

import (
	"errors"
	"fmt"
	"math"
)

// The scripts store job metadata as MessagePack (lua/lib.lua, store), as
// Redis's cmsgpack writes it: a map from one-letter names to integers,
// floats, strings and, for skipped_by, an array of strings. This decodes
// exactly that much of the format, into typed fields without boxing.

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

// length reads the header of an array (fix, 0xdc, 0xdd) or of a map (fix,
// 0xde, 0xdf), as asked, and returns its number of elements or pairs.
func (r *msgpackReader) length(isMap bool) (int, error) {
	fix, long := byte(0x90), byte(0xdc)
	if isMap {
		fix, long = 0x80, 0xde
	}
	t, err := r.byte()
	switch {
	case err != nil:
		return 0, err
	case t&0xf0 == fix:
		return int(t & 0x0f), nil
	case t == long || t == long+1:
		n, err := r.uint(2 << (t - long))
		// Each element takes at least a byte: a larger count is a lie.
		if err == nil && n > uint64(len(r.b)-r.i) {
			err = errMsgpack
		}
		return int(n), err
	}
	return 0, fmt.Errorf("%w: 0x%02x is not the expected array or map", errMsgpack, t)
}

// decodeMeta reads job metadata as the scripts store it.
func decodeMeta(raw string) (meta, error) {
	var m meta
	r := &msgpackReader{b: raw}
	n, err := r.length(true)
	if err != nil {
		return m, err
	}
	for range n {
		name, err := r.str()
		if err != nil {
			return m, err
		}
		if len(name) != 1 {
			return m, fmt.Errorf("%w: field %q", errMsgpack, name)
		}
		if err := m.read(name[0], r); err != nil {
			return m, err
		}
	}
	if m.RunAt == 0 {
		m.RunAt = m.CreatedAt
	}
	return m, nil
}

// read reads the value of the field with this one-letter name (lib.lua's
// FIELDS).
func (m *meta) read(letter byte, r *msgpackReader) (err error) {
	small := func(dst *int) error {
		n, err := r.integer()
		*dst = int(n)
		return err
	}
	switch letter {
	case 's':
		var s string
		s, err = r.str()
		m.State = State(s)
	case 't':
		m.Title, err = r.str()
	case 'p':
		err = small(&m.Priority)
	case 'a':
		err = small(&m.Attempts)
	case 'm':
		err = small(&m.MaxAttempts)
	case 'l':
		err = small(&m.LeaseSeconds)
	case 'c':
		m.CreatedAt, err = r.integer()
	case 'r':
		m.RunAt, err = r.integer()
	case 'k':
		m.Rank, err = r.number()
	case 'h':
		m.ReservedBy, err = r.str()
	case 'o':
		m.ReservedAt, err = r.integer()
	case 'd':
		m.Deadline, err = r.integer()
	case 'n':
		m.Token, err = r.str()
	case 'x':
		err = small(&m.Extensions)
	case 'f':
		m.FinishedAt, err = r.integer()
	case 'e':
		m.LastError, err = r.str()
	case 'i':
		m.IdempotencyKey, err = r.str()
	case 'v':
		var n int
		if n, err = r.length(false); err != nil {
			return err
		}
		m.SkippedBy = make([]string, n)
		for i := range m.SkippedBy {
			if m.SkippedBy[i], err = r.str(); err != nil {
				return err
			}
		}
	case 'b':
		m.Batch, err = r.str()
	default:
		return fmt.Errorf("%w: unknown field %q", errMsgpack, letter)
	}
	return err
}
