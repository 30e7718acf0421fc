package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// saveDraft saves values as r's live draft.
func (e *env) saveDraft(r *Reservation, values string) time.Time {
	e.t.Helper()
	at, err := e.store.SaveDraft(e.ctx, r.Job.ID, r.Hold(), json.RawMessage(values))
	if err != nil {
		e.t.Fatalf("save draft %s: %v", values, err)
	}
	return at
}

// drafts reads the job's drafts as it is now.
func (e *env) drafts(id string) (*Draft, []Draft) {
	e.t.Helper()
	j, err := e.store.Get(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	live, kept, err := e.store.Drafts(e.ctx, j)
	if err != nil {
		e.t.Fatal(err)
	}
	return live, kept
}

// draftFields are the job's fields in the queue's drafts hash.
func (e *env) draftFields(id string) []string {
	e.t.Helper()
	fields, err := e.rdb.HKeys(e.ctx, keysFor(e.queue).Drafts()).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, f := range fields {
		if f[:ulidLen] == localID(id) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

func TestDraftKeptWhenTakenBack(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("invoice", 50)
		r := e.claim("ann")
		e.saveDraft(r, `{"notes":"half"}`)
		e.clock.Advance(time.Second)
		saved := e.saveDraft(r, `{"notes":"half way, checked the total"}`)
		h, _, err := mustGet(e, j.ID).History()
		if err != nil {
			t.Fatal(err)
		}
		if n := countEntries(h, ActionDrafted); n != 1 {
			t.Fatalf("two saves of one reservation made %d drafted entries, want 1: %+v", n, h)
		}
		live, kept := e.drafts(j.ID)
		if live == nil || live.By != "ann" || !live.SavedAt.Equal(saved) || string(live.Values) != `{"notes":"half way, checked the total"}` || len(kept) != 0 {
			t.Fatalf("while held: live %+v, kept %+v", live, kept)
		}
		e.clock.Advance(time.Minute)
		if _, _, err := e.store.Requeue(e.ctx, j.ID, "sam", WithReason("needed elsewhere")); err != nil {
			t.Fatal(err)
		}
		live, kept = e.drafts(j.ID)
		if live != nil || len(kept) != 1 {
			t.Fatalf("after a force release: live %+v, kept %+v", live, kept)
		}
		k := kept[0]
		if k.By != "ann" || string(k.Values) != `{"notes":"half way, checked the total"}` || !k.SavedAt.Equal(saved) ||
			k.Ended == nil || k.Ended.Action != ActionForceReleased || k.Ended.By != "sam" || !k.Ended.At.Equal(e.clock.Now()) {
			t.Fatalf("kept draft %+v, ended %+v", k, k.Ended)
		}
		// The next holder reads it, and starts their own.
		r2 := e.claim("bob")
		live, kept = e.drafts(j.ID)
		if live != nil || len(kept) != 1 {
			t.Fatalf("claimed again: live %+v, kept %+v", live, kept)
		}
		e.saveDraft(r2, `{"notes":"bob's"}`)
		live, kept = e.drafts(j.ID)
		if live == nil || live.By != "bob" || len(kept) != 1 {
			t.Fatalf("bob typing: live %+v, kept %+v", live, kept)
		}
		// A completion drops the live draft; the kept one stays with the job.
		e.complete(r2)
		live, kept = e.drafts(j.ID)
		if live != nil || len(kept) != 1 {
			t.Fatalf("completed: live %+v, kept %+v", live, kept)
		}
		if got := e.draftFields(j.ID); !slices.Equal(got, []string{localID(j.ID) + "\nkept"}) {
			t.Fatalf("completed: drafts fields %q", got)
		}
	})
}

func TestDraftKeptOnExpiryAndCancel(t *testing.T) {
	onEachBackend(t, func(e *env) {
		a := e.add("a", 50)
		ra := e.claim("ann")
		e.saveDraft(ra, `{"notes":"ran out"}`)
		e.clock.Advance(time.Duration(ra.Job.LeaseSeconds+1) * time.Second)
		if _, _, err := e.reclaim(10); err != nil {
			t.Fatal(err)
		}
		if _, kept := e.drafts(a.ID); len(kept) != 1 || kept[0].Ended.Action != ActionExpired || kept[0].Ended.By != System {
			t.Fatalf("expired: kept %+v", kept)
		}
		rb := e.claim("ann")
		if rb.Job.ID != a.ID {
			t.Fatalf("claimed %s, want %s again", rb.Job.ID, a.ID)
		}
		e.saveDraft(rb, `{"notes":"again"}`)
		if _, _, err := e.store.Cancel(e.ctx, a.ID, "sam", true); err != nil {
			t.Fatal(err)
		}
		_, kept := e.drafts(a.ID)
		if len(kept) != 2 || kept[1].Ended.Action != ActionCanceled || string(kept[1].Values) != `{"notes":"again"}` {
			t.Fatalf("canceled: kept %+v", kept)
		}
	})
}

// A holder's own give-back, skip or failure drops the draft: their page
// tells them so before they leave.
func TestDraftDroppedByHolder(t *testing.T) {
	onEachBackend(t, func(e *env) {
		for _, leave := range []struct {
			name string
			do   func(r *Reservation) error
		}{
			{"release", func(r *Reservation) error { _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); return err }},
			{"skip", func(r *Reservation) error { _, err := e.store.Skip(e.ctx, r.Job.ID, r.Hold()); return err }},
			{"fail", func(r *Reservation) error { _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "no"); return err }},
		} {
			j := e.add(leave.name, 50)
			r := e.claim("ann")
			e.saveDraft(r, `{"notes":"x"}`)
			if err := leave.do(r); err != nil {
				t.Fatal(err)
			}
			if live, kept := e.drafts(j.ID); live != nil || len(kept) != 0 {
				t.Fatalf("%s: live %+v, kept %+v", leave.name, live, kept)
			}
			if got := e.draftFields(j.ID); len(got) != 0 {
				t.Fatalf("%s left %q", leave.name, got)
			}
			if _, _, err := e.store.Cancel(e.ctx, j.ID, "sam", false); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestDraftFenced(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("a", 50)
		r := e.claim("ann")
		for _, c := range []struct {
			name   string
			hold   Hold
			values string
			want   error
		}{
			{"another token", Hold{Holder: "ann", Token: "nope"}, `{}`, ErrReservationLost},
			{"someone else", Hold{Holder: "bob", Token: r.Token}, `{}`, ErrForbidden},
			{"not an object", r.Hold(), `["x"]`, ErrInvalid},
			{"not JSON", r.Hold(), `{"x":`, ErrInvalid},
			{"too large", r.Hold(), fmt.Sprintf(`{"x":%q}`, make([]byte, MaxPayloadBytes)), ErrTooLarge},
		} {
			if _, err := e.store.SaveDraft(e.ctx, j.ID, c.hold, json.RawMessage(c.values)); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		if got := e.draftFields(j.ID); len(got) != 0 {
			t.Fatalf("refused saves left %q", got)
		}
		if _, err := e.store.Release(e.ctx, j.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.SaveDraft(e.ctx, j.ID, r.Hold(), json.RawMessage(`{}`)); !errors.Is(err, ErrReservationLost) {
			t.Fatalf("saved after the reservation ended: %v", err)
		}
		if _, err := e.store.SaveDraft(e.ctx, "01ARZ3NDEKTSV4RRFFQ69G5FAV."+e.queue, r.Hold(), json.RawMessage(`{}`)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("saved on no job: %v", err)
		}
	})
}

// A job keeps the latest DraftsKept drafts taken back, and its drafts go
// with it when retention deletes it.
func TestDraftsCappedAndPurged(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("a", 50)
		for i := range DraftsKept + 2 {
			r := e.claim("ann")
			e.saveDraft(r, fmt.Sprintf(`{"n":%d}`, i))
			if _, _, err := e.store.Requeue(e.ctx, j.ID, "sam"); err != nil {
				t.Fatal(err)
			}
		}
		_, kept := e.drafts(j.ID)
		if len(kept) != DraftsKept || string(kept[0].Values) != `{"n":2}` || string(kept[DraftsKept-1].Values) != fmt.Sprintf(`{"n":%d}`, DraftsKept+1) {
			t.Fatalf("kept %d drafts, first %s", len(kept), kept[0].Values)
		}
		if _, _, err := e.store.Cancel(e.ctx, j.ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(31 * 24 * time.Hour)
		if _, _, err := e.store.Purge(e.ctx, e.queue, 100); err != nil {
			t.Fatal(err)
		}
		if got := e.draftFields(j.ID); len(got) != 0 {
			t.Fatalf("purged job left drafts %q", got)
		}
	})
}

// What drafts cost the end of a reservation: one command on the drafts
// key whether it saved one or not (an HDEL for its holder's own end, an
// HMGET for a take-back, which keeps what it finds), cheaper than reading
// the history to know; one that saved a draft and is taken back pays the
// writes that keep it.
func TestDraftBudget(t *testing.T) {
	t.Parallel()
	rdb, mon := monitoredServer(t)
	for _, c := range []struct {
		name string
		end  func(e *env, r *Reservation)
		// none is what the end runs on the drafts key without a draft;
		// more is what a saved draft adds.
		none, more []string
	}{
		{"complete", func(e *env, r *Reservation) { e.complete(r) }, []string{"HDEL drafts"}, nil},
		{"release", func(e *env, r *Reservation) {
			if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
				e.t.Fatal(err)
			}
		}, []string{"HDEL drafts"}, nil},
		{"expire", func(e *env, r *Reservation) {
			e.clock.Advance(time.Duration(r.Job.LeaseSeconds+1) * time.Second)
			if _, _, err := e.reclaim(10); err != nil {
				e.t.Fatal(err)
			}
		}, []string{"HMGET drafts"}, []string{"HDEL drafts", "HSET drafts"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sent [2][]string // without a draft, with one
			for i, draft := range []bool{false, true} {
				e := newEnv(t, rdb, Queue{})
				e.add("one", 50)
				r := e.claim("ann")
				if draft {
					e.saveDraft(r, `{"notes":"x"}`)
				}
				sent[i] = mon.during(t, func() { c.end(e, r) })
			}
			var none []string
			for _, cmd := range sent[0] {
				if strings.Contains(cmd, " drafts") {
					none = append(none, cmd)
				}
			}
			if !slices.Equal(none, c.none) {
				t.Errorf("without a draft, %s ran %q on drafts, want %q", c.name, none, c.none)
			}
			more := extra(sent[1], sent[0])
			if !slices.Equal(more, c.more) {
				t.Errorf("a draft added %q, want %q\nwithout: %q\nwith:    %q", more, c.more, sent[0], sent[1])
			}
		})
	}
}

func mustGet(e *env, id string) *Job {
	e.t.Helper()
	j, err := e.store.Get(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

func countEntries(h []Entry, a Action) int {
	n := 0
	for _, e := range h {
		if e.Action == a {
			n++
		}
	}
	return n
}
