package tasks

import (
	"context"
	"errors"
	"regexp"
	"testing"
)

// Every status a script answers is turned into Go at one place
// (Store.outcome): "ok" and "empty" answer values, "form" a changed outcome
// form, and every other one its error of statusErrors.
func TestEveryStatusHasItsError(t *testing.T) {
	t.Parallel()
	statuses := map[string]bool{}
	literal := regexp.MustCompile(`\b(?:answer|plain)\('(\w+)'`)
	for file := range library.names {
		for _, m := range literal.FindAllStringSubmatch(luaCode(t, file), -1) {
			statuses[m[1]] = true
		}
	}
	lib := libFunctions(t)
	for _, m := range literal.FindAllStringSubmatch(luaCode(t, "lib"), -1) {
		statuses[m[1]] = true
	}
	// claim_for's statuses are answered as they are (claim.lua).
	for _, m := range regexp.MustCompile(`return '(\w+)'`).FindAllStringSubmatch(lib["claim_for"], -1) {
		statuses[m[1]] = true
	}
	if len(statuses) < 10 {
		t.Fatalf("found only the statuses %v", statuses)
	}
	for st := range statuses {
		if _, ok := statusErrors[st]; !ok && st != "ok" && st != "empty" && st != "form" && st != "answers" {
			t.Errorf("scripts answer the status %q, which statusErrors lacks", st)
		}
	}
}

// A reply of another shape than its script's is an error (errReply), not
// zero values nor a panic: a value of another type, one missing, one too
// many; and so is a status nobody knows.
func TestReplyShape(t *testing.T) {
	t.Parallel()
	s := New(nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		res  []any
		read func(r *reply)
	}{
		{"a string for an integer", []any{"ok", "", "1", int64(2)}, func(r *reply) { r.int("more"); r.int("jobs") }},
		{"a value missing", []any{"ok", "", int64(1)}, func(r *reply) { r.flag("more"); r.int("jobs") }},
		{"a value too many", []any{"ok", "", int64(1), int64(2), int64(3)}, func(r *reply) { r.flag("more"); r.int("jobs") }},
		{"a list for a string", []any{"ok", "", []any{"x"}}, func(r *reply) { r.str("batch") }},
		{"metadata that is not", []any{"ok", "", "01ID", "\xc1", "{}"}, func(r *reply) { r.job() }},
	} {
		r, err := s.outcome(ctx, "q", tc.res, nil)
		if err != nil {
			t.Fatalf("%s: outcome: %v", tc.name, err)
		}
		tc.read(r)
		if err := r.done(); err == nil {
			t.Errorf("%s: read without an error", tc.name)
		}
	}
	if _, err := s.outcome(ctx, "q", []any{"surprise", ""}, nil); !errors.Is(err, errReply) {
		t.Errorf("an unknown status: %v, want errReply", err)
	}
	if _, err := s.outcome(ctx, "q", []any{"hold_limit", ""}, nil); !errors.Is(err, ErrHoldLimit) {
		t.Errorf("hold_limit: %v, want ErrHoldLimit", err)
	}
	for _, fx := range []any{[]any{"not", "effects"}, "\xc1", "\x01\x02"} {
		if _, err := s.outcome(ctx, "q", []any{"ok", fx}, nil); !errors.Is(err, errReply) {
			t.Errorf("malformed effects %q: %v, want errReply", fx, err)
		}
	}
	r, err := s.outcome(ctx, "q", []any{"ok", "", int64(1), int64(7)}, nil)
	if err != nil || !r.flag("more") || r.int("jobs") != 7 || r.done() != nil {
		t.Errorf("a well-formed reply: %v, %v", r, err)
	}
}
