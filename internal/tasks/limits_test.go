package tasks

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// skipToLimit enqueues one job more than an operator may skip, and has op
// skip as many as they may.
func (e *env) skipToLimit(op string) {
	e.t.Helper()
	e.enqueueMany(MaxSkips + 1)
	for i := range MaxSkips {
		r := e.claim(op)
		if _, err := e.store.Skip(e.ctx, r.Job.ID, r.Hold()); err != nil {
			e.t.Fatalf("skip %d: %v", i+1, err)
		}
	}
}

func TestSkipLimitKeepsClaimHonest(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.skipToLimit("ann")
		// Claim looks past every skipped job to the one ann has not skipped.
		r := e.claim("ann")
		_, err := e.store.Skip(e.ctx, r.Job.ID, r.Hold())
		wantErr(t, "skip past the limit", err, ErrSkipLimit)
		if got := e.get(r.Job.ID); got.State != StateReserved {
			t.Fatalf("a refused skip changed the job: %s", got.State)
		}
		// Finishing skipped jobs frees room to skip again.
		other := e.claim("bob")
		if _, err := e.store.Complete(e.ctx, other.Job.ID, other.Hold(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Skip(e.ctx, r.Job.ID, r.Hold()); err != nil {
			t.Fatalf("skip after a skipped job finished: %v", err)
		}
	})
}

func TestJobLeaseIsCappedByMaxHold(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b.rdb, Queue{LeaseSeconds: 60, MaxHoldSeconds: 300})
			e.addJob(e.queue, NewJob{Title: "long", LeaseSeconds: 86400})
			r := e.claim("ann")
			if want := e.clock.Now().Add(300 * time.Second); !r.Deadline.Equal(want) {
				t.Fatalf("deadline %v, want the max hold %v", r.Deadline, want)
			}
		})
	}
}

func TestListingAndMaintenanceInputs(t *testing.T) {
	onEachBackend(t, func(e *env) {
		for _, cursor := range []string{"NaN x", "Inf x", "+Inf x", "1", "0x1p-2 x", "5 "} {
			c := base64.RawURLEncoding.EncodeToString([]byte(cursor))
			_, err := e.store.ListJobs(e.ctx, e.queue, StateReady, 10, c)
			if cursor == "0x1p-2 x" {
				// Go reads hex floats; the script gets canonical digits.
				if err != nil {
					t.Errorf("cursor %q: %v", cursor, err)
				}
				continue
			}
			wantErr(t, "cursor "+cursor, err, ErrInvalid)
		}
		for _, limit := range []int{0, MaxMaintainBatch + 1} {
			_, _, err := e.store.ReclaimExpired(e.ctx, e.queue, limit)
			wantErr(t, "reclaim limit", err, ErrInvalid)
		}
		_, _, err := e.store.ReclaimExpired(e.ctx, "no-such-queue", 10)
		wantErr(t, "reclaim in an unknown queue", err, ErrQueueNotFound)
		_, _, err = e.store.PromoteDue(e.ctx, "no-such-queue", 10)
		wantErr(t, "promote in an unknown queue", err, ErrQueueNotFound)
		_, err = e.store.ListJobs(e.ctx, "no-such-queue", StateReady, 10, "")
		wantErr(t, "list an unknown queue", err, ErrQueueNotFound)
		_, err = e.store.Claim(e.ctx, e.queue, "bad\xffname")
		wantErr(t, "operator name that is not UTF-8", err, ErrInvalid)
		big := make([]NewJob, 200)
		for i := range big {
			big[i] = NewJob{Title: "big", Payload: []byte(`{"text":"` + strings.Repeat("x", 60<<10) + `"}`)}
		}
		_, err = e.store.Enqueue(e.ctx, e.queue, "pat", big)
		wantErr(t, "batch over 8 MiB", err, ErrTooLarge)
		if !errors.Is(err, ErrTooLarge) || e.stats().Ready != 0 {
			t.Fatalf("oversized batch changed the queue")
		}
	})
}
