package tasks

import (
	"errors"
	"fmt"
	"time"
)

// errReply means a script answered values of another shape than its
// header says: a bug, never the caller's fault.
var errReply = errors.New("script answered an unexpected reply")

// reply is what a script answered on a queue after its status and effects
// (Store.run: the status is an error there, the effects go to the
// observers): its own values, which each caller reads in order into its
// typed answer, each value as the type it must be. The first value that
// is missing or of another type is kept as the reply's error, told by
// done (the values read meanwhile are zero).
type reply struct {
	queue  string
	values []any
	err    error
	// now is when the answer came, by the Store's clock: where each job
	// it holds stands against its due time is told as of then.
	now time.Time
}

func (r *reply) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", errReply, fmt.Sprintf(format, args...))
	}
}

// take returns the next value, nil when none is left (a failure then).
func (r *reply) take(what string) any {
	if len(r.values) == 0 {
		r.fail("no %s", what)
		return nil
	}
	v := r.values[0]
	r.values = r.values[1:]
	return v
}

// str reads a string; nil (a Lua false: an absent value) is "".
func (r *reply) str(what string) string {
	switch v := r.take(what).(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		r.fail("%s is %T, not a string", what, v)
		return ""
	}
}

// int reads an integer.
func (r *reply) int(what string) int64 {
	v, ok := r.take(what).(int64)
	if !ok && r.err == nil {
		r.fail("%s is not an integer", what)
	}
	return v
}

// flag reads 1 or 0 as true or false.
func (r *reply) flag(what string) bool { return r.int(what) == 1 }

// list reads a nested list of values.
func (r *reply) list(what string) *reply {
	v, ok := r.take(what).([]any)
	if !ok && r.err == nil {
		r.fail("%s is not a list", what)
	}
	return &reply{queue: r.queue, values: v, now: r.now}
}

// job reads a job: its id (without the queue's name), its stored
// metadata, and its payload.
func (r *reply) job() *Job {
	id, raw, payload := r.str("job id"), r.str("job metadata"), r.str("job payload")
	if r.err != nil {
		return nil
	}
	j, err := decodeJob(globalID(id, r.queue), raw, payload, r.now)
	if err != nil {
		r.err = err
	}
	return j
}

// settings reads the rest as a queue's settings: field, value, ...
func (r *reply) settings() map[string]string {
	m := make(map[string]string, len(r.values)/2)
	for r.more() {
		k := r.str("setting")
		m[k] = r.str("value of " + k)
	}
	return m
}

// more reports whether values are left to read.
func (r *reply) more() bool { return len(r.values) > 0 && r.err == nil }

// done returns the first failure to read the reply, or one for values
// left unread.
func (r *reply) done() error {
	if r.err == nil && len(r.values) > 0 {
		r.fail("%d values more than expected", len(r.values))
	}
	return r.err
}
