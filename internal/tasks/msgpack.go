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

// metaFields are the fields of a job's metadata, in the order the
// scripts store them: each field's name in lib.lua's job table (m.<name>)
// and how it is read into meta. lib.lua's pack_meta and unpack_meta are
// made from this list (luaConstants), so the place of a field is one fact.
var metaFields = []struct {
	name string
	read func(m *meta, r *msgpackReader) error
}{
	{"state", func(m *meta, r *msgpackReader) error { return r.text((*string)(&m.State)) }},
	{"title", func(m *meta, r *msgpackReader) error { return r.text(&m.Title) }},
	{"priority", func(m *meta, r *msgpackReader) error { return r.small(&m.Priority) }},
	{"attempts", func(m *meta, r *msgpackReader) error { return r.small(&m.Attempts) }},
	{"max_attempts", func(m *meta, r *msgpackReader) error { return r.small(&m.MaxAttempts) }},
	{"lease_seconds", func(m *meta, r *msgpackReader) error { return r.small(&m.LeaseSeconds) }},
	{"created_at", func(m *meta, r *msgpackReader) error { return r.int64(&m.CreatedAt) }},
	// run_at is left out (nil) when it equals created_at.
	{"run_at", func(m *meta, r *msgpackReader) error { return r.int64(&m.RunAt) }},
	{"rank", func(m *meta, r *msgpackReader) (err error) { m.Rank, err = r.number(); return err }},
	{"reserved_by", func(m *meta, r *msgpackReader) error { return r.text(&m.ReservedBy) }},
	{"reserved_at", func(m *meta, r *msgpackReader) error { return r.int64(&m.ReservedAt) }},
	{"deadline", func(m *meta, r *msgpackReader) error { return r.int64(&m.Deadline) }},
	{"token", func(m *meta, r *msgpackReader) error { return r.text(&m.Token) }},
	{"extensions", func(m *meta, r *msgpackReader) error { return r.small(&m.Extensions) }},
	{"finished_at", func(m *meta, r *msgpackReader) error { return r.int64(&m.FinishedAt) }},
	{"last_error", func(m *meta, r *msgpackReader) error { return r.text(&m.LastError) }},
	{"idempotency_key", func(m *meta, r *msgpackReader) error { return r.text(&m.IdempotencyKey) }},
	{"skipped_by", func(m *meta, r *msgpackReader) error { return r.texts(&m.SkippedBy) }},
	{"batch", func(m *meta, r *msgpackReader) error { return r.text(&m.Batch) }},
	{"claim_key", func(m *meta, r *msgpackReader) error { return r.text(&m.ClaimKey) }},
	{"hist_n", func(m *meta, r *msgpackReader) error { return r.small(&m.HistoryCount) }},
	// Fields added since storage format 2 (format2Fields) go here, after
	// the others: a record stored before one was added reads it as absent.
	{"due_at", func(m *meta, r *msgpackReader) error { return r.int64(&m.DueAt) }},
	{"warn_at", func(m *meta, r *msgpackReader) error { return r.int64(&m.WarnAt) }},
	{"moved_from", func(m *meta, r *msgpackReader) error { return r.text(&m.MovedFrom) }},
	{"batch_from", func(m *meta, r *msgpackReader) error { return r.text(&m.BatchFrom) }},
	{"skills", func(m *meta, r *msgpackReader) error { return r.text(&m.Skills) }},
	{"route_to", func(m *meta, r *msgpackReader) error { return r.text(&m.RouteTo) }},
	{"fallback_at", func(m *meta, r *msgpackReader) error { return r.int64(&m.FallbackAt) }},
	{"overlap", func(m *meta, r *msgpackReader) error { return r.small(&m.Overlap) }},
	{"answers", func(m *meta, r *msgpackReader) error { return r.small(&m.Answers) }},
	{"review", func(m *meta, r *msgpackReader) error { return r.text(&m.Review) }},
	{"author", func(m *meta, r *msgpackReader) error { return r.text(&m.Author) }},
	{"seats", func(m *meta, r *msgpackReader) error { return r.texts(&m.Seats) }},
	// seated names the job's members in the seat lines, and ended the
	// reservations that ended while others held it, for the scripts
	// alone.
	{"seated", func(_ *meta, r *msgpackReader) error { return r.skip() }},
	{"ended", func(_ *meta, r *msgpackReader) error { return r.skip() }},
}

// format2Fields is how many fields of metaFields a record of storage
// format 2 has, with no count before them (decodeMeta).
const format2Fields = 21

// text reads a string into dst.
func (r *msgpackReader) text(dst *string) (err error) {
	*dst, err = r.str()
	return err
}

// texts reads an array of strings into dst.
func (r *msgpackReader) texts(dst *[]string) error {
	n, err := r.length()
	if err != nil {
		return err
	}
	*dst = make([]string, n)
	for i := range *dst {
		if err := r.text(&(*dst)[i]); err != nil {
			return err
		}
	}
	return nil
}

// int64 reads an integer into dst.
func (r *msgpackReader) int64(dst *int64) (err error) {
	*dst, err = r.integer()
	return err
}

// small reads an integer into dst, an int.
func (r *msgpackReader) small(dst *int) error {
	n, err := r.integer()
	*dst = int(n)
	return err
}

// skip reads past one value of any type cmsgpack writes: nil, a boolean,
// a number, a string, or an array or map of those.
func (r *msgpackReader) skip() error {
	if r.i >= len(r.b) {
		return errMsgpack
	}
	t := r.b[r.i]
	switch {
	case t == 0xc0 || t == 0xc2 || t == 0xc3:
		r.i++
		return nil
	case t&0xe0 == 0xa0 || t >= 0xd9 && t <= 0xdb:
		_, err := r.str()
		return err
	case t&0xf0 == 0x90 || t == 0xdc || t == 0xdd:
		n, err := r.length()
		for ; err == nil && n > 0; n-- {
			err = r.skip()
		}
		return err
	case t&0xf0 == 0x80 || t == 0xde || t == 0xdf:
		r.i++
		n := int(t & 0x0f)
		if t >= 0xde {
			v, err := r.uint(2 << (t - 0xde))
			if err != nil || v > uint64(len(r.b)-r.i) {
				return errMsgpack
			}
			n = int(v)
		}
		for i := 0; i < 2*n; i++ {
			if err := r.skip(); err != nil {
				return err
			}
		}
		return nil
	}
	_, err := r.number()
	return err
}

// decodeMeta reads job metadata as the scripts store it: how many fields
// follow, then one value per field of metaFields, in its order, nil for an
// absent field; then the history, kept undecoded (decodeHistory). A record
// of fewer fields (written before the last were added) leaves the rest
// zero; one of more (written by a later version) has those skipped. A
// record of storage format 2 has no count (its first value is the state, a
// string) and format2Fields fields.
func decodeMeta(raw string) (meta, error) {
	var m meta
	r := &msgpackReader{b: raw}
	fields := format2Fields
	if len(raw) > 0 && raw[0] <= 0x7f { // a positive fixint: the count
		fields = int(raw[0])
		r.i = 1
	}
	for field := 0; field < fields && r.i < len(r.b); field++ {
		if r.b[r.i] == 0xc0 { // nil
			r.i++
			continue
		}
		if field >= len(metaFields) {
			if err := r.skip(); err != nil {
				return m, fmt.Errorf("field %d: %w", field, err)
			}
			continue
		}
		if err := metaFields[field].read(&m, r); err != nil {
			return m, fmt.Errorf("field %s: %w", metaFields[field].name, err)
		}
	}
	if m.RunAt == 0 {
		m.RunAt = m.CreatedAt
	}
	m.History = raw[r.i:]
	return m, nil
}
