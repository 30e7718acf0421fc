package tasks

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"claimdesk/internal/keys"
)

// The fuzz targets of the engine's edges: what turns Go values into script
// arguments (enqueue.go, store.go, batch.go, list.go, id.go) and what reads
// the scripts' MessagePack back (msgpack.go, transition.go). Whatever the
// input, nothing panics; input the engine refuses gets a *ValidationError
// (or, for an id, "not found") and changes nothing; input it takes comes
// back from Redis as it went in. Their seed corpora in testdata/fuzz run
// with every go test.

// fuzzEnv is an env on the standalone Redis whose queue is deleted when the
// test ends, so that a long fuzzing run does not fill the Redis.
func fuzzEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, backends[0].rdb, Queue{})
	t.Cleanup(func() {
		e.rdb.Del(e.ctx, keysFor(e.queue).All()...)
		e.rdb.SRem(e.ctx, keys.Queues, e.queue)
	})
	return e
}

// mustBeValidation fails the test unless err is a *ValidationError.
func mustBeValidation(t *testing.T, what string, err error) {
	t.Helper()
	var v *ValidationError
	if !errors.As(err, &v) || !(errors.Is(err, ErrInvalid) || errors.Is(err, ErrTooLarge)) {
		t.Fatalf("%s: error %v (%T), want a *ValidationError", what, err, err)
	}
}

// strictText fails the test if the engine took text that is not UTF-8,
// or a title with an invisible formatting character.
func strictText(t *testing.T, title string, texts ...[]byte) {
	t.Helper()
	if strings.ContainsFunc(title, func(r rune) bool { return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) }) {
		t.Fatalf("took the title %q", title)
	}
	for _, text := range append(texts, []byte(title)) {
		if !utf8.Valid(text) {
			t.Fatalf("took %q, which is not UTF-8", text)
		}
	}
}

// compacted is how the engine keeps a JSON object it took: compacted, and
// "" for none.
func compacted(t *testing.T, raw []byte) string {
	t.Helper()
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatalf("the engine took %q, which is not JSON: %v", raw, err)
	}
	return buf.String()
}

func FuzzEnqueueArgs(f *testing.F) {
	f.Fuzz(func(t *testing.T, title string, payload []byte, priority, delay, lease, attempts int, runAtMs int64, key string) {
		e := fuzzEnv(t)
		nj := NewJob{Title: title, Payload: payload, Priority: &priority, DelaySeconds: delay,
			LeaseSeconds: lease, MaxAttempts: attempts, IdempotencyKey: key}
		if runAtMs != 0 {
			at := time.UnixMilli(runAtMs)
			nj.RunAt = &at
		}
		out, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{nj})
		if err != nil {
			mustBeValidation(t, "enqueue", err)
			if s := e.stats(); s != (Stats{Queue: e.queue}) {
				t.Fatalf("a refused enqueue changed the queue: %+v", s)
			}
			return
		}
		strictText(t, title, payload, []byte(key))
		now := e.clock.Now()
		due := now
		if delay > 0 {
			due = now.Add(time.Duration(delay) * time.Second)
		} else if runAtMs > ms(now) {
			due = msTime(runAtMs)
		}
		state := StateReady
		if due.After(now) {
			state = StateScheduled
		}
		got := e.get(out[0].Job.ID)
		want := compacted(t, payload)
		if want == "" {
			want = "{}"
		}
		if !out[0].Created || got.Title != strings.TrimSpace(title) || string(got.Payload) != want ||
			got.Priority != priority || got.State != state || !got.RunAt.Equal(due) || !got.CreatedAt.Equal(now) ||
			got.LeaseSeconds != cmp.Or(lease, 300) || got.MaxAttempts != cmp.Or(attempts, 5) || got.IdempotencyKey != key {
			t.Fatalf("enqueued %+v (run_at %d)\nstored as %+v", nj, runAtMs, got)
		}
		if sent := out[0].Job; sent.Title != got.Title || string(sent.Payload) != want || sent.State != state {
			t.Fatalf("enqueue answered %+v, stored %+v", sent, got)
		}
		h, _, err := got.History()
		if err != nil || len(h) != 1 || h[0].Action != ActionEnqueued || h[0].Actor != "pat" || h[0].To != state || !h[0].At.Equal(now) {
			t.Fatalf("history %+v, %v", h, err)
		}
	})
}

func FuzzHolderArgs(f *testing.F) {
	f.Fuzz(func(t *testing.T, operator, reason string, result []byte, seconds int) {
		e := fuzzEnv(t)
		j := e.add("work", 50)
		r, err := e.store.Claim(e.ctx, e.queue, operator)
		if err != nil {
			mustBeValidation(t, "claim", err)
			if s := e.stats(); s.Reserved != 0 || s.Ready != 1 {
				t.Fatalf("a refused claim changed the queue: %+v", s)
			}
			return
		}
		if r.Job.ReservedBy != operator {
			t.Fatalf("claimed by %q, want %q", r.Job.ReservedBy, operator)
		}
		extended, err := e.store.Extend(e.ctx, j.ID, r.Hold(), seconds)
		switch {
		case errors.Is(err, ErrExtensionLimit):
		case err != nil:
			mustBeValidation(t, "extend", err)
		case extended.Deadline.Before(*r.Job.Deadline):
			t.Fatalf("extend by %d moved the deadline back: %v", seconds, extended.Deadline)
		}
		failed, err := e.store.Fail(e.ctx, j.ID, r.Hold(), reason)
		if err != nil {
			mustBeValidation(t, "fail", err)
			if got := e.get(j.ID); got.State != StateReserved || got.LastError != "" || got.Attempts != 0 {
				t.Fatalf("a refused fail changed the job: %+v", got)
			}
			return
		}
		strictText(t, "", []byte(operator), []byte(reason))
		if failed.LastError != reason || failed.State != StateReady || len(failed.SkippedBy) != 1 || failed.SkippedBy[0] != operator {
			t.Fatalf("failed with %q: %+v", reason, failed)
		}
		// Someone else takes it: it is not offered to whoever failed it.
		e.claimNone(operator)
		other := "next"
		if operator == other {
			other = "after"
		}
		r = e.claim(other)
		done, err := e.store.Complete(e.ctx, j.ID, r.Hold(), result)
		if err != nil {
			mustBeValidation(t, "complete", err)
			if got := e.get(j.ID); got.State != StateReserved || got.Result != nil {
				t.Fatalf("a refused complete changed the job: %+v", got)
			}
			return
		}
		strictText(t, "", result)
		got := e.get(j.ID)
		if want := compacted(t, result); string(got.Result) != want || done.CompletedBy != other || got.CompletedBy != other {
			t.Fatalf("completed with %q by %q: %+v", result, other, got)
		}
		h, _, err := got.History()
		if err != nil {
			t.Fatal(err)
		}
		for i, entry := range h[1:] {
			want := operator
			if i >= len(h)-3 { // the second claim and the completion
				want = other
			}
			if entry.Actor != want {
				t.Fatalf("history entry %+v, want the actor %q", entry, want)
			}
		}
		if failure := h[len(h)-3]; failure.Action != ActionFailed || failure.Reason != reason {
			t.Fatalf("history %+v, want the failure's reason %q", h, reason)
		}
	})
}

func FuzzBatchRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, title string, priority, maxConcurrent int, open bool) {
		e := fuzzEnv(t)
		nb := NewBatch{Title: title, Priority: &priority, Open: open}
		if maxConcurrent != 0 {
			nb.MaxConcurrent = &maxConcurrent
		}
		if !open {
			nb.Jobs = []NewJob{{Title: "job"}}
		}
		b, _, err := e.store.CreateBatch(e.ctx, e.queue, "pat", nb)
		if err != nil {
			mustBeValidation(t, "create batch", err)
			if list, err := e.store.ListBatches(e.ctx, e.queue, 0); err != nil || len(list) != 0 {
				t.Fatalf("a refused batch was made: %v %v", list, err)
			}
			return
		}
		strictText(t, title)
		got, err := e.store.GetBatch(e.ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		state := BatchSealed
		if open {
			state = BatchOpen
		}
		limit := 0
		if got.MaxConcurrent != nil {
			limit = *got.MaxConcurrent
		}
		if got.Title != strings.TrimSpace(title) || got.Priority != priority || limit != maxConcurrent ||
			got.State != state || got.Title != b.Title {
			t.Fatalf("created %+v\nstored as %+v", nb, got)
		}
	})
}

func FuzzCursor(f *testing.F) {
	f.Fuzz(func(t *testing.T, cursor string) {
		score, id, err := decodeCursor(cursor)
		if err != nil {
			mustBeValidation(t, "cursor", err)
			return
		}
		// The cursor's canonical form reads back as itself ("" is the start).
		if s, i, err := decodeCursor(encodeCursor(score, id)); cursor != "" && (err != nil || s != score || i != id) {
			t.Fatalf("cursor %q read as %q %q, then as %q %q (%v)", cursor, score, id, s, i, err)
		}
		e := fuzzEnv(t)
		e.add("listed", 50)
		if _, err := e.store.ListJobs(e.ctx, e.queue, StateReady, 10, cursor); err != nil {
			t.Fatalf("list after cursor %q: %v", cursor, err)
		}
	})
}

func FuzzJobID(f *testing.F) {
	f.Fuzz(func(t *testing.T, id string) {
		q, ok := queueOf(id)
		if ok && globalID(localID(id), q) != id {
			t.Fatalf("id %q is %q of queue %q", id, localID(id), q)
		}
		e := fuzzEnv(t)
		j := e.add("known", 50)
		probe := id
		if ok {
			// The id's ULID in the env's queue: a job, or no job.
			probe = globalID(localID(id), e.queue)
		}
		got, err := e.store.Get(e.ctx, probe)
		if probe == j.ID {
			if err != nil || got.ID != j.ID {
				t.Fatalf("Get(%q) = %v, %v", probe, got, err)
			}
			return
		}
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q) of no job = %v, %v; want ErrNotFound", probe, got, err)
		}
		if _, _, err := e.store.Cancel(e.ctx, probe, "sam", false); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Cancel(%q) of no job: %v, want ErrNotFound", probe, err)
		}
	})
}

// Metadata and history that are not what the scripts store give a
// malformed-metadata error, never a panic or a huge allocation.
func FuzzDecodeMeta(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw string) {
		m, err := decodeMeta(raw)
		if err != nil {
			if !errors.Is(err, errMsgpack) {
				t.Fatalf("decodeMeta(%q): %v, not a malformed-metadata error", raw, err)
			}
			return
		}
		if len(m.SkippedBy) > len(raw) {
			t.Fatalf("%d skips from %d bytes", len(m.SkippedBy), len(raw))
		}
		h, err := decodeHistory(m.History, m.CreatedAt)
		if err != nil && !errors.Is(err, errMsgpack) {
			t.Fatalf("decodeHistory(%q): %v, not a malformed-metadata error", m.History, err)
		}
		if len(h)*historyValues > len(m.History) {
			t.Fatalf("%d history entries from %d bytes", len(h), len(m.History))
		}
	})
}
