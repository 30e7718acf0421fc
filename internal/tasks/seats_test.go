package tasks

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// withSeats gives the env's queue overlap n, overlapForm, and lets that
// many hold a job at once.
func (e *env) withSeats(n int) {
	e.t.Helper()
	on := true
	if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{Overlap: &n, OverlapAtOnce: &on, Outcome: overlapForm}); err != nil {
		e.t.Fatal(err)
	}
}

// seatMembers returns the queue's members of the seat lines, and of their
// firsts.
func (e *env) seatMembers() (members, heads []string) {
	e.t.Helper()
	k := keysFor(e.queue)
	all, err := e.rdb.ZRange(e.ctx, k.Routed(), 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, m := range all {
		if strings.HasPrefix(m[1:], seatLine) {
			members = append(members, m)
		}
	}
	fields, err := e.rdb.HKeys(e.ctx, k.Heads()).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range fields {
		if strings.HasPrefix(f[1:], seatLine) {
			heads = append(heads, f)
		}
	}
	return members, heads
}

// noSeats fails the test if the queue's seat lines hold anything.
func (e *env) noSeats(when string) {
	e.t.Helper()
	if m, heads := e.seatMembers(); len(m) != 0 || len(heads) != 0 {
		e.t.Fatalf("%s: seat lines %q, firsts %q", when, m, heads)
	}
}

// A job with overlap 3 is held by up to three people at once, each with a
// reservation of their own (fenced, extended, given back, run out each
// alone), never twice by one person, and completes once, with the third
// answer.
func TestOverlapSeatsHeldAtOnce(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withSeats(3)
		job := e.add("label me", 50)

		ann, bob, cy := e.claim("ann"), e.claim("bob"), e.claim("cy")
		for _, r := range []*Reservation{ann, bob, cy} {
			if r.Job.ID != job.ID || r.Job.ReservedBy != r.Hold().Holder {
				t.Fatalf("%s claimed %s held by %s", r.Hold().Holder, r.Job.Title, r.Job.ReservedBy)
			}
		}
		if ann.Token == bob.Token || bob.Token == cy.Token {
			t.Fatal("two reservations share a token")
		}
		got := e.get(job.ID)
		if h := got.HolderNames(); !slices.Equal(h, []string{"ann", "bob", "cy"}) || got.State != StateReserved {
			t.Fatalf("held by %q in %s", h, got.State)
		}
		if s := e.stats(); s.Reserved != 1 || s.Ready != 0 {
			t.Fatalf("counts %+v: one job held", s)
		}
		// Three hold it, as many as it needs: nobody gets it now.
		e.claimNone("dee")
		e.noSeats("no seat free")
		// One's token is theirs alone.
		if _, err := e.store.Release(e.ctx, job.ID, Hold{Holder: "bob", Token: ann.Token}); !errors.Is(err, ErrForbidden) {
			t.Fatalf("bob with ann's token: %v, want ErrForbidden", err)
		}
		// Each holder finds it among the jobs they hold, and reads their
		// own reservation.
		for _, who := range []string{"ann", "bob", "cy"} {
			if p, _, err := e.store.FindJobs(e.ctx, e.queue, StateReserved, Filter{Person: who}, 10, ""); err != nil || len(p.Jobs) != 1 {
				t.Fatalf("jobs %s holds: %d, %v", who, len(p.Jobs), err)
			}
		}
		mine, err := e.store.Held(e.ctx, job.ID, "cy")
		if err != nil || mine.Token != cy.Token || mine.Job.ReservedBy != "cy" {
			t.Fatalf("cy's reservation: %+v %v", mine, err)
		}

		// Bob gives it back: his seat is free for someone else, never him.
		released := e.during(ActionReleased, func() {
			if j, err := e.store.Release(e.ctx, job.ID, bob.Hold()); err != nil || j.State != StateReserved {
				t.Fatalf("bob's give-back: %v, job %+v", err, j)
			}
		})
		if len(released) != 1 || released[0].Holder != "bob" || !released[0].EndsReservation() || released[0].To != StateReserved {
			t.Fatalf("give-back transitions %+v", released)
		}
		if m, heads := e.seatMembers(); len(m) != 1 || len(heads) != 1 {
			t.Fatalf("one seat free: seat lines %q, firsts %q", m, heads)
		}
		e.claimNone("bob")
		eve := e.claim("eve")
		if eve.Job.ID != job.ID {
			t.Fatalf("eve claimed %s", eve.Job.Title)
		}

		// Ann answers: the job stays with cy and eve. A retry of her
		// answer answers as the first did, and adds none.
		answered := e.answer(ann, `{"decision":"approve","amount":10,"comment":"fine"}`)
		if answered.State != StateReserved || len(answered.Answers) != 1 {
			t.Fatalf("after ann's answer: %s with %d answers", answered.State, len(answered.Answers))
		}
		if again := e.answer(ann, `{"decision":"reject"}`); len(again.Answers) != 1 {
			t.Fatalf("a retried answer made %d answers", len(again.Answers))
		}
		if h := e.get(job.ID).HolderNames(); !slices.Equal(h, []string{"cy", "eve"}) {
			t.Fatalf("held by %q after ann's answer", h)
		}

		// Cy extends hers; eve's runs out: eve's alone ends, one attempt
		// spent, and cy's goes on.
		if _, err := e.store.Extend(e.ctx, job.ID, cy.Hold(), 600); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Duration(job.LeaseSeconds)*time.Second + time.Second)
		expired, _, err := e.reclaim(10)
		if err != nil || len(expired) != 1 || expired[0].Holder != "eve" || expired[0].JobID != job.ID {
			t.Fatalf("reclaimed %+v, %v: want eve's reservation alone", expired, err)
		}
		got = e.get(job.ID)
		if h := got.HolderNames(); !slices.Equal(h, []string{"cy"}) || got.Attempts != 1 {
			t.Fatalf("after eve's ran out: held by %q, %d attempts", h, got.Attempts)
		}
		if _, err := e.store.Complete(e.ctx, job.ID, eve.Hold(), nil); !errors.Is(err, ErrReservationLost) {
			t.Fatalf("eve completing after hers ran out: %v", err)
		}

		// Cy answers; the job goes back in line; fay gives the third.
		if j := e.answer(cy, `{"decision":"approve","amount":12,"comment":"fine"}`); j.State != StateReady {
			t.Fatalf("after cy's answer: %s", j.State)
		}
		fay := e.claim("fay")
		done := e.answer(fay, `{"decision":"reject","amount":10,"comment":"no"}`)
		if done.State != StateCompleted || len(done.Answers) != 3 || string(done.Result) != `{"amount":10,"decision":"approve"}` {
			t.Fatalf("after the last answer: %s, %d answers, result %s", done.State, len(done.Answers), done.Result)
		}
		e.noSeats("after the job finished")
	})
}

// What ends a job held by several ends every reservation of it: a cancel,
// or a force release that names no holder; one that names a holder ends
// theirs alone. Each holder's draft is their own.
func TestOverlapSeatsEndTogether(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withSeats(3)
		job := e.add("label me", 50)
		ann, bob := e.claim("ann"), e.claim("bob")
		e.claim("cy")
		e.saveDraft(ann, `{"comment":"ann's"}`)
		e.saveDraft(bob, `{"comment":"bob's"}`)
		for _, r := range []*Reservation{ann, bob} {
			mine, err := e.store.Held(e.ctx, job.ID, r.Hold().Holder)
			if err != nil {
				t.Fatal(err)
			}
			live, _, err := e.store.Drafts(e.ctx, mine.Job)
			if err != nil || live == nil || !strings.Contains(string(live.Values), r.Hold().Holder) {
				t.Fatalf("%s's live draft: %+v %v", r.Hold().Holder, live, err)
			}
		}

		// Bob's alone is taken back.
		taken := e.during(ActionForceReleased, func() {
			if _, _, err := e.store.Requeue(e.ctx, job.ID, "sam", AsSeen(StateReserved, "bob")); err != nil {
				t.Fatal(err)
			}
		})
		if len(taken) != 1 || taken[0].Holder != "bob" {
			t.Fatalf("taking bob's back: %+v", taken)
		}
		if h := e.get(job.ID).HolderNames(); !slices.Equal(h, []string{"ann", "cy"}) {
			t.Fatalf("held by %q", h)
		}
		// Naming nobody takes it from everyone.
		all := e.during(ActionForceReleased, func() {
			j, _, err := e.store.Requeue(e.ctx, job.ID, "sam")
			if err != nil || j.State != StateReady {
				t.Fatalf("force release: %v, %+v", err, j)
			}
		})
		if len(all) != 2 {
			t.Fatalf("force release ended %d reservations, want 2", len(all))
		}
		if _, kept := e.drafts(job.ID); len(kept) != 2 {
			t.Fatalf("%d drafts kept, want ann's and bob's", len(kept))
		}

		dee, eve := e.claim("dee"), e.claim("eve")
		canceled := e.during(ActionCanceled, func() {
			if _, _, err := e.store.Cancel(e.ctx, job.ID, "sam", true); err != nil {
				t.Fatal(err)
			}
		})
		if len(canceled) != 2 || e.get(job.ID).State != StateCanceled {
			t.Fatalf("cancel: %+v", canceled)
		}
		for _, r := range []*Reservation{dee, eve} {
			if _, err := e.store.Complete(e.ctx, job.ID, r.Hold(), nil); !errors.Is(err, ErrReservationLost) {
				t.Fatalf("%s completing a canceled job: %v", r.Hold().Holder, err)
			}
			if held, err := e.holding(r.Hold().Holder, []string{e.queue}); err != nil || len(held) != 0 {
				t.Fatalf("%s still holds %d: %v", r.Hold().Holder, len(held), err)
			}
		}
		e.noSeats("after the cancel")
	})
}

// A job's free seats count among what others may claim; turned off, a
// queue's seats are taken no more: a job someone holds waits for them;
// turned on again, it has its seats again.
func TestOverlapSeatsTurnedOff(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withSeats(3)
		job := e.add("label me", 50)
		e.claim("ann")
		// Its free seats count among what bob may claim, not ann.
		for who, want := range map[string]int64{"ann": 0, "bob": 1} {
			_, f, err := e.store.Mine(e.ctx, who, nil, []string{e.queue})
			if err != nil || f[e.queue].Claimable != want {
				t.Fatalf("%s may claim %d, want %d (%v)", who, f[e.queue].Claimable, want, err)
			}
		}
		off, on := false, true
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{OverlapAtOnce: &off}); err != nil {
			t.Fatal(err)
		}
		e.claimNone("bob")
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{OverlapAtOnce: &on}); err != nil {
			t.Fatal(err)
		}
		if r := e.claim("bob"); r.Job.ID != job.ID {
			t.Fatalf("bob claimed %s", r.Job.Title)
		}
	})
}

// Each of several holders is known by their own token and key alone: a
// retried claim answers the claimer's own reservation, a retried
// extension spends no second one, a token of a reservation taken back
// works no more, and nobody holds the job twice, not even one who held
// it before the queue let several hold it at once.
func TestOverlapSeatsRetries(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withOverlap(3)
		job := e.add("label me", 50)
		ann := e.claim("ann")
		on := true
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{OverlapAtOnce: &on}); err != nil {
			t.Fatal(err)
		}
		// (Her extension saves the job: from then on it has seats.)
		if _, err := e.store.Extend(e.ctx, job.ID, ann.Hold(), 600, WithExtendKey("x1")); err != nil {
			t.Fatal(err)
		}
		e.claimNone("ann") // she holds it already
		bob, err := e.store.Claim(e.ctx, e.queue, "bob", WithClaimKey("k1"))
		if err != nil || bob == nil || bob.Job.ID != job.ID {
			t.Fatalf("bob's claim: %+v %v", bob, err)
		}
		e.claim("cy")
		again, err := e.store.Claim(e.ctx, e.queue, "bob", WithClaimKey("k1"))
		if err != nil || again == nil || again.Token != bob.Token || again.Job.ReservedBy != "bob" || again.Job.Holders != nil {
			t.Fatalf("bob's retried claim: %+v %v, want his own reservation", again, err)
		}
		e.clock.Advance(10 * time.Second)
		j, err := e.store.Extend(e.ctx, job.ID, ann.Hold(), 600, WithExtendKey("x1"))
		if err != nil || j.Extensions != 1 || j.ReservedBy != "ann" {
			t.Fatalf("ann's retried extension: %+v %v, want one extension of hers", j, err)
		}
		if h := e.get(job.ID).HolderNames(); !slices.Equal(h, []string{"ann", "bob", "cy"}) {
			t.Fatalf("held by %q", h)
		}

		// A page that saw other holders takes nothing; one that saw them
		// all takes the job from everyone.
		if _, _, err := e.store.Requeue(e.ctx, job.ID, "sam", AsSeen(StateReserved, "ann\nbob")); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("a stale page's force release: %v", err)
		}
		if _, _, err := e.store.Requeue(e.ctx, job.ID, "sam", AsSeen(StateReserved, "ann")); err != nil {
			t.Fatal(err)
		}
		for _, tok := range []string{ann.Token, "nonsense"} {
			if _, err := e.store.Extend(e.ctx, job.ID, Hold{Holder: "ann", Token: tok}, 60); !errors.Is(err, ErrReservationLost) {
				t.Fatalf("ann extending after hers was taken back: %v", err)
			}
		}
		// (As a browser sends the page's list: CRLF between names.)
		every := strings.ReplaceAll(EveryHolder(e.get(job.ID)), "\n", "\r\n")
		if _, _, err := e.store.Cancel(e.ctx, job.ID, "sam", true, AsSeen(StateReserved, "bob")); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("a cancel from a page that saw bob alone: %v", err)
		}
		if _, _, err := e.store.Requeue(e.ctx, job.ID, "sam", AsSeen(StateReserved, every)); err != nil {
			t.Fatal(err)
		}
		if got := e.get(job.ID); got.State != StateReady {
			t.Fatalf("after a force release of everyone: %s", got.State)
		}
	})
}

// A job that dies of one holder's failure takes the others' reservations
// back, in the system's name; a retried answer of one whose reservation
// ended before is answered as it was, also once the job completed.
func TestOverlapSeatsDieTogether(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withSeats(3)
		one := 1
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{MaxAttempts: &one}); err != nil {
			t.Fatal(err)
		}
		job := e.add("label me", 50)
		ann := e.claim("ann")
		e.claim("bob")
		dropped := e.during(ActionForceReleased, func() {
			if j, err := e.store.Fail(e.ctx, job.ID, ann.Hold(), "blurred"); err != nil || j.State != StateDead {
				t.Fatalf("ann's failure: %+v %v", j, err)
			}
		})
		if len(dropped) != 1 || dropped[0].Holder != "bob" || dropped[0].Actor != System {
			t.Fatalf("bob's reservation ended as %+v", dropped)
		}
		e.noSeats("after the job died")

		e.add("label me too", 50)
		dee, eve := e.claim("dee"), e.claim("eve")
		e.answer(dee, `{"decision":"approve","amount":1,"comment":"ok"}`)
		e.answer(eve, `{"decision":"approve","amount":1,"comment":"ok"}`)
		e.answer(e.claim("fay"), `{"decision":"approve","amount":1,"comment":"ok"}`)
		if again := e.answer(dee, `{"decision":"reject"}`); again.State != StateCompleted || len(again.Answers) != 3 {
			t.Fatalf("dee's retried answer after the job completed: %s, %d answers", again.State, len(again.Answers))
		}
	})
}
