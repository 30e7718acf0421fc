package tasks

import (
	"encoding/json"
	"testing"

	"claimdesk/internal/keys"
)

// Complete and next: one call completes the held job and claims the next
// for the same person; its retry answers the same, and claims no more.
func TestCompleteNext(t *testing.T) {
	onEachBackend(t, func(e *env) {
		a, b := e.add("first", 50), e.add("second", 50)
		r := e.claim("olga")
		if r.Job.ID != a.ID {
			t.Fatalf("claimed %s, want %s", r.Job.ID, a.ID)
		}
		var done *Job
		var next *Reservation
		ts := e.did(func(Transition) bool { return true }, func() {
			var err error
			done, next, _, err = e.store.CompleteNext(e.ctx, a.ID, r.Hold(), json.RawMessage(`{"ok":true}`))
			if err != nil {
				t.Fatal(err)
			}
		})
		if done.State != StateCompleted || done.CompletedBy != "olga" || string(done.Result) != `{"ok":true}` {
			t.Fatalf("completed = %+v", done)
		}
		if next == nil || next.Job.ID != b.ID || next.Job.ReservedBy != "olga" || next.Token == "" || next.Token == r.Token {
			t.Fatalf("next = %+v, want %s reserved by olga with a new token", next, b.ID)
		}
		if len(ts) != 2 || ts[0].Action != ActionCompleted || ts[0].JobID != a.ID || ts[1].Action != ActionClaimed || ts[1].JobID != b.ID {
			t.Fatalf("transitions = %+v, want a completion then a claim", ts)
		}

		// Its claim key is the engine's own: nothing is filed for it.
		if n, err := e.rdb.HLen(e.ctx, keys.ForQueue(e.queue).Claims()).Result(); err != nil || n != 0 {
			t.Fatalf("claims filed: %d, %v; want none", n, err)
		}

		// A retry whose answer was lost: the same answer, nothing new,
		// found among olga's reservations (she holds another too).
		e.add("other", 90)
		other := e.claim("olga")
		e.add("third", 50)
		again, nextAgain, _, err := e.store.CompleteNext(e.ctx, a.ID, r.Hold(), json.RawMessage(`{"ok":false}`))
		if err != nil || again.State != StateCompleted || string(again.Result) != `{"ok":true}` {
			t.Fatalf("retried: %+v, %v", again, err)
		}
		if nextAgain == nil || nextAgain.Job.ID != b.ID || nextAgain.Token != next.Token {
			t.Fatalf("retried next = %+v, want the same reservation of %s", nextAgain, b.ID)
		}
		if s := e.stats(); s.Reserved != 2 || s.Ready != 1 {
			t.Fatalf("after a retry: %d reserved, %d ready; want 2 and 1", s.Reserved, s.Ready)
		}
		if _, err := e.store.Complete(e.ctx, other.Job.ID, other.Hold(), nil); err != nil {
			t.Fatal(err)
		}

		// The next one, then the last: nothing more to claim.
		_, third, _, err := e.store.CompleteNext(e.ctx, b.ID, next.Hold(), nil)
		if err != nil || third == nil {
			t.Fatalf("complete and next = %v, %v", third, err)
		}
		last, none, _, err := e.store.CompleteNext(e.ctx, third.Job.ID, third.Hold(), nil)
		if err != nil || last.State != StateCompleted || none != nil {
			t.Fatalf("the last: %+v, next %+v, %v; want completed and nothing next", last, none, err)
		}
		// Its retry claims nothing, even with a job now waiting.
		e.add("fourth", 50)
		if _, none, _, err = e.store.CompleteNext(e.ctx, third.Job.ID, third.Hold(), nil); err != nil || none != nil {
			t.Fatalf("the last retried: next %+v, %v; want nothing", none, err)
		}

		// Only the live reservation's token works, as for Complete.
		r = e.claim("olga")
		_, _, _, err = e.store.CompleteNext(e.ctx, r.Job.ID, Hold{Holder: "olga", Token: "0123456789abcdef0123456789abcdef"}, nil)
		wantErr(t, "stale token", err, ErrReservationLost)
		_, _, _, err = e.store.CompleteNext(e.ctx, r.Job.ID, Hold{Holder: "petra", Token: r.Token}, nil)
		wantErr(t, "someone else's token", err, ErrForbidden)
	})
}
