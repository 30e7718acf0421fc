package tasks

import (
	"testing"
	"time"
)

// A job its holder reported failed goes back in line for everyone but
// them, as after a skip; a reservation that ran out marks nobody; the job
// dead after its last failure keeps no marks.
func TestFailIsNotOfferedToItsReporter(t *testing.T) {
	onEachBackend(t, func(e *env) {
		hard := e.addJob(e.queue, NewJob{Title: "hard", Priority: new(90), MaxAttempts: 3})
		easy := e.add("easy", 10)
		r := e.claim("ann")
		got, err := e.store.Fail(e.ctx, hard.ID, r.Hold(), "scan URL 404s")
		if err != nil || got.State != StateReady || len(got.SkippedBy) != 1 || got.SkippedBy[0] != "ann" {
			t.Fatalf("Fail = %+v, %v", got, err)
		}
		if re := e.claim("ann"); re.Job.ID != easy.ID {
			t.Fatalf("ann got %q after reporting hard failed", re.Job.Title)
		} else if _, err := e.store.Complete(e.ctx, easy.ID, re.Hold(), nil); err != nil {
			t.Fatal(err)
		}
		e.claimNone("ann")
		// Its retry answers it as it is, and marks nothing twice.
		if again, err := e.store.Fail(e.ctx, hard.ID, r.Hold(), "scan URL 404s"); err != nil || again.Attempts != 1 || len(again.SkippedBy) != 1 {
			t.Fatalf("retried Fail = %+v, %v", again, err)
		}
		// bob's reservation runs out: he is offered it again.
		rb := e.claim("bob")
		if rb.Job.ID != hard.ID {
			t.Fatalf("bob got %q, want the job ann failed", rb.Job.Title)
		}
		e.clock.Advance(time.Duration(rb.Job.LeaseSeconds) * time.Second)
		if moved, _, err := e.reclaim(10); err != nil || len(moved) != 1 {
			t.Fatalf("reclaim = %v, %v", moved, err)
		}
		if got := e.get(hard.ID).SkippedBy; len(got) != 1 || got[0] != "ann" {
			t.Fatalf("skipped_by after an expiry = %v, want only ann", got)
		}
		rb = e.claim("bob")
		if rb.Job.ID != hard.ID {
			t.Fatalf("bob got %q after his reservation ran out, want hard again", rb.Job.Title)
		}
		// The last attempt: dead, and nobody's marks stay.
		got, err = e.store.Fail(e.ctx, hard.ID, rb.Hold(), "still 404")
		if err != nil || got.State != StateDead || got.SkippedBy != nil {
			t.Fatalf("last Fail = %+v, %v", got, err)
		}
		k := keysFor(e.queue)
		if n, _ := e.rdb.SCard(e.ctx, k.Skips()).Result(); n != 0 {
			t.Fatalf("%d skip records left on a dead job", n)
		}
		if n, _ := e.rdb.HLen(e.ctx, k.SkipCount()).Result(); n != 0 {
			t.Fatalf("%d skip counters left on a dead job", n)
		}
	})
}

// A holder at the skip limit may still report a job failed: it goes back
// in line without the mark (claim could not look past one more), and may
// come back to them.
func TestFailAtTheSkipLimit(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.skipToLimit("ann")
		r := e.claim("ann")
		got, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "cannot read it")
		if err != nil || got.State != StateReady || got.Attempts != 1 || len(got.SkippedBy) != 0 {
			t.Fatalf("Fail at the skip limit = %+v, %v", got, err)
		}
		if again := e.claim("ann"); again.Job.ID != r.Job.ID {
			t.Fatalf("ann got %s, want the job she failed at the skip limit", again.Job.ID)
		}
	})
}

// A retried request for more time with the key of the reservation's
// latest extension spends no second extension; another key does.
func TestExtendWithKeyIsRetrySafe(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.store.PutQueue(e.ctx, Queue{Name: e.queue, LeaseSeconds: 60, MaxExtensions: 2, MaxHoldSeconds: 3600})
		j := e.add("long read", 50)
		r := e.claim("ann")
		first, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 600, WithExtendKey("more-1"))
		if err != nil || first.Extensions != 1 {
			t.Fatalf("Extend = %+v, %v", first, err)
		}
		e.clock.Advance(30 * time.Second)
		again, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 600, WithExtendKey("more-1"))
		if err != nil || again.Extensions != 1 || !again.Deadline.Equal(*first.Deadline) {
			t.Fatalf("retried Extend = %+v, %v: want the first answer", again, err)
		}
		second, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 900, WithExtendKey("more-2"))
		if err != nil || second.Extensions != 2 {
			t.Fatalf("Extend with a new key = %+v, %v", second, err)
		}
		if _, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 900, WithExtendKey("more-2")); err != nil {
			t.Fatalf("retry at the extension limit: %v", err)
		}
		_, err = e.store.Extend(e.ctx, j.ID, r.Hold(), 1200, WithExtendKey("more-3"))
		wantErr(t, "a third extension", err, ErrExtensionLimit)
		_, err = e.store.Extend(e.ctx, j.ID, r.Hold(), 60, WithExtendKey("has space"))
		wantErr(t, "a key with a space", err, ErrInvalid)
		// The key is the client's: the history does not show it.
		h, _, err := e.get(j.ID).History()
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range h {
			if en.Reason != "" {
				t.Fatalf("history entry %s shows %q", en.Action, en.Reason)
			}
		}
	})
}

// A requeued dead job waits from its requeue: its run_at, the queue's
// oldest wait and the next job's wait count from then. It keeps when it
// was made.
func TestRequeuedJobWaitsFromItsRequeue(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.addJob(e.queue, NewJob{Title: "poison", MaxAttempts: 1})
		created := e.get(j.ID).CreatedAt
		r := e.claim("ann")
		if _, err := e.store.Fail(e.ctx, j.ID, r.Hold(), "broken"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(18 * time.Hour)
		requeuedAt := e.clock.Now()
		got, _, err := e.store.Requeue(e.ctx, j.ID, "sam")
		if err != nil || !got.RunAt.Equal(requeuedAt) || !got.CreatedAt.Equal(created) {
			t.Fatalf("Requeue = run_at %v created_at %v (%v), want run_at %v created_at %v", got.RunAt, got.CreatedAt, err, requeuedAt, created)
		}
		e.clock.Advance(5 * time.Minute)
		s := e.stats()
		if s.OldestWaitingSince == nil || !s.OldestWaitingSince.Equal(requeuedAt) {
			t.Fatalf("oldest waiting since %v, want the requeue at %v", s.OldestWaitingSince, requeuedAt)
		}
		if s.NextWaitingSince == nil || !s.NextWaitingSince.Equal(requeuedAt) {
			t.Fatalf("next waiting since %v, want the requeue at %v", s.NextWaitingSince, requeuedAt)
		}
	})
}
