package tasks

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"
)

// claimReview claims the next review of the env's queue for the reviewer;
// nil when none waits for them.
func (e *env) claimReview(reviewer string) *Reservation {
	e.t.Helper()
	r, err := e.store.Claim(e.ctx, e.queue, reviewer, ForReview())
	if err != nil {
		e.t.Fatalf("review claim by %s: %v", reviewer, err)
	}
	return r
}

// actions lists the actions of the job's history, oldest first.
func (e *env) actions(id string) []Action {
	e.t.Helper()
	h, _, err := e.get(id).History()
	if err != nil {
		e.t.Fatal(err)
	}
	var out []Action
	for _, en := range h {
		out = append(out, en.Action)
	}
	return out
}

// A completion by someone in training waits for review: its author may
// not review it, nobody claims it as work, a reviewer claims it with a
// review claim, may not complete it, and approves it: the job completes
// with the author's result, once, and the author's approval counts.
func TestReviewOfWorkInTraining(t *testing.T) {
	onEachBackend(t, func(e *env) {
		job := e.add("check me", 50)
		r := e.claim("ann")
		h := r.Hold()
		h.Training = true
		got, err := e.store.Complete(e.ctx, job.ID, h, json.RawMessage(`{"ok":true}`))
		if err != nil || got.State != StateReady || got.Review == nil || got.Review.Reason != ReviewTraining ||
			got.Review.Author != "ann" || string(got.Review.Result) != `{"ok":true}` || got.Result != nil {
			t.Fatalf("a completion in training: %+v (review %+v), %v", got, got.Review, err)
		}
		if st := e.stats(); st.Ready != 1 || st.Completed != 0 {
			t.Fatalf("stats %+v, want the job ready", st)
		}
		// It waits in no line of routing (the Team page's), but in the
		// review backlog.
		if lines, err := e.store.Lines(e.ctx, []string{e.queue}); err != nil || len(lines) != 0 {
			t.Fatalf("lines %+v, %v", lines, err)
		}
		if backlog, err := e.store.ReviewBacklog(e.ctx, []string{e.queue}, 10); err != nil || len(backlog) != 1 || backlog[0].ID != job.ID {
			t.Fatalf("backlog %+v, %v", backlog, err)
		}
		if n, err := e.store.ReviewsWaiting(e.ctx, []string{e.queue}); err != nil || n[e.queue] != 1 {
			t.Fatalf("reviews waiting %v, %v", n, err)
		}
		if r := e.claimReview("ann"); r != nil {
			t.Fatal("ann claimed her own work for review")
		}
		e.claimNone("bob")
		if _, err := e.store.Claim(e.ctx, e.queue, "bob", OnlyJob(job.ID)); !errors.Is(err, ErrNotReady) {
			t.Fatalf("claiming the job under review as work: %v, want ErrNotReady", err)
		}
		if _, _, err := e.store.Assign(e.ctx, job.ID, "cy", "sam"); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("assigning a job under review: %v", err)
		}
		rev := e.claimReview("bob")
		if rev == nil || rev.Job.ID != job.ID {
			t.Fatalf("bob's review claim: %+v", rev)
		}
		if _, err := e.store.Complete(e.ctx, job.ID, rev.Hold(), nil); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("completing a review: %v, want ErrInvalidState", err)
		}
		done, err := e.store.Approve(e.ctx, job.ID, rev.Hold(), nil)
		if err != nil || done.State != StateCompleted || string(done.Result) != `{"ok":true}` || done.Review != nil {
			t.Fatalf("approve: %+v, %v", done, err)
		}
		// A retry of the approval answers the job as it is.
		if again, err := e.store.Approve(e.ctx, job.ID, rev.Hold(), nil); err != nil || again.State != StateCompleted {
			t.Fatalf("a retried approval: %+v, %v", again, err)
		}
		want := []Action{ActionEnqueued, ActionClaimed, ActionSubmitted, ActionClaimed, ActionApproved}
		if got := e.actions(job.ID); !slices.Equal(got, want) {
			t.Fatalf("history %v, want %v", got, want)
		}
		tallies, err := e.store.Tallies(e.ctx, []string{e.queue})
		if err != nil {
			t.Fatal(err)
		}
		if ann := tallies["ann"]; ann == nil || ann.Today.Approved != 1 || ann.Today.SentBack != 0 {
			t.Fatalf("ann's tally %+v", ann)
		}
		// Approving work not held for review is refused.
		other := e.add("plain", 10)
		r = e.claim("bob")
		if _, err := e.store.Approve(e.ctx, other.ID, r.Hold(), nil); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("approving a plain reservation: %v", err)
		}
	})
}

// A queue may review a share of its completions; a reviewer may send one
// back with a note: it goes to its author first, and their next
// completion is theirs again. A review whose reservation runs out waits
// for a reviewer again.
func TestReviewSendBack(t *testing.T) {
	onEachBackend(t, func(e *env) {
		all := 1.0
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{ReviewFraction: &all}); err != nil {
			t.Fatal(err)
		}
		job := e.add("sampled", 50)
		r := e.claim("ann")
		if got, err := e.store.Complete(e.ctx, job.ID, r.Hold(), json.RawMessage(`{"v":1}`)); err != nil || got.Review == nil || got.Review.Reason != ReviewSample {
			t.Fatalf("a sampled completion: %+v, %v", got, err)
		}
		rev := e.claimReview("bob")
		e.clock.Advance(time.Hour)
		if _, _, err := e.reclaim(10); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.SendBack(e.ctx, job.ID, rev.Hold(), "no", true); !errors.Is(err, ErrReservationLost) {
			t.Fatalf("send back after the deadline: %v", err)
		}
		rev = e.claimReview("cy")
		if rev == nil || rev.Job.ID != job.ID {
			t.Fatalf("the reclaimed review: %+v", rev)
		}
		if _, err := e.store.SendBack(e.ctx, job.ID, rev.Hold(), " ", true); !errors.Is(err, ErrInvalid) {
			t.Fatalf("send back without a note: %v", err)
		}
		back, err := e.store.SendBack(e.ctx, job.ID, rev.Hold(), "Use the gross amount.", true)
		if err != nil || back.State != StateReady || back.Review != nil || len(back.Preferred) != 1 || back.Preferred[0] != "ann" {
			t.Fatalf("sent back: %+v, %v", back, err)
		}
		e.claimNone("bob") // ann's first
		none := 0.0
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{ReviewFraction: &none}); err != nil {
			t.Fatal(err)
		}
		again := e.claim("ann")
		if done := e.answer(again, `{"v":2}`); done.State != StateCompleted || string(done.Result) != `{"v":2}` {
			t.Fatalf("ann's second completion: %+v", done)
		}
		h, _, err := e.get(job.ID).History()
		if err != nil {
			t.Fatal(err)
		}
		var note string
		for _, en := range h {
			if en.Action == ActionSentBack {
				note = en.Actor + ": " + en.Reason
			}
		}
		if note != "cy: Use the gross amount." {
			t.Fatalf("the send-back in the history: %q", note)
		}
		tallies, err := e.store.Tallies(e.ctx, []string{e.queue})
		if err != nil {
			t.Fatal(err)
		}
		if ann := tallies["ann"]; ann.Today.SentBack != 1 || ann.Today.Approved != 0 {
			t.Fatalf("ann's tally %+v", ann.Today)
		}
	})
}

// Answers that agree less than the queue's min_agreement send their job
// to review; sent back, it asks one more person; approved, it completes
// with the reviewer's result. Each answer counts as agreeing with the
// majority or not.
func TestReviewOfDisagreement(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withOverlap(2)
		most := 0.6
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{MinAgreement: &most}); err != nil {
			t.Fatal(err)
		}
		job := e.add("label", 50)
		e.answer(e.claim("ann"), `{"decision":"approve"}`)
		split := e.answer(e.claim("bob"), `{"decision":"reject"}`)
		if split.Review == nil || split.Review.Reason != ReviewDisagreement || split.State != StateReady || split.Agreement == nil {
			t.Fatalf("split answers: %+v", split)
		}
		for _, op := range []string{"ann", "bob"} {
			if r := e.claimReview(op); r != nil {
				t.Fatalf("%s reviewed a job they answered", op)
			}
		}
		rev := e.claimReview("cy")
		if _, err := e.store.SendBack(e.ctx, job.ID, rev.Hold(), "Look at the logo again.", false); err != nil {
			t.Fatal(err)
		}
		third := e.claim("dee")
		done := e.answer(third, `{"decision":"approve"}`)
		if done.State != StateCompleted || len(done.Answers) != 3 || string(done.Result) != `{"decision":"approve"}` {
			t.Fatalf("a third answer that agrees: %+v", done)
		}
		tallies, err := e.store.Tallies(e.ctx, []string{e.queue})
		if err != nil {
			t.Fatal(err)
		}
		// Judged twice (with two answers, then three), ann agreed both times.
		for op, want := range map[string][2]int64{"ann": {2, 2}, "bob": {2, 0}, "dee": {1, 1}} {
			if got := tallies[op].Today; got.Judged != want[0] || got.Agreed != want[1] {
				t.Errorf("%s judged %d agreed %d, want %v", op, got.Judged, got.Agreed, want)
			}
		}
		// Approved with the reviewer's own result.
		job = e.add("label 2", 50)
		e.answer(e.claim("ann"), `{"decision":"approve"}`)
		e.answer(e.claim("bob"), `{"decision":"reject"}`)
		rev = e.claimReview("cy")
		ok, err := e.store.Approve(e.ctx, job.ID, rev.Hold(), json.RawMessage(`{"decision":"reject","comment":"a fake"}`))
		if err != nil || ok.State != StateCompleted || string(ok.Result) != `{"decision":"reject","comment":"a fake"}` {
			t.Fatalf("approved with a result: %+v, %v", ok, err)
		}
	})
}

// A reviewer approves without a result of their own even when the queue's
// outcome form requires fields: the result that waits fit it when it came.
func TestApproveWithARequiredForm(t *testing.T) {
	onEachBackend(t, func(e *env) {
		form := &Outcome{Fields: []OutcomeField{{Name: "verdict", Type: FieldText, Required: true}}}
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{Outcome: form}); err != nil {
			t.Fatal(err)
		}
		job := e.add("job", 50)
		r := e.claim("ann")
		h := r.Hold()
		h.Training = true
		if _, err := e.store.Complete(e.ctx, job.ID, h, json.RawMessage(`{"verdict":"fine"}`)); err != nil {
			t.Fatal(err)
		}
		rev := e.claimReview("bob")
		if _, err := e.store.Approve(e.ctx, job.ID, rev.Hold(), json.RawMessage(`{"other":1}`)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("approve with a result that does not fit: %v", err)
		}
		done, err := e.store.Approve(e.ctx, job.ID, rev.Hold(), nil)
		if err != nil || string(done.Result) != `{"verdict":"fine"}` {
			t.Fatalf("approve: %+v, %v", done, err)
		}
	})
}

// A review's reservation answers nothing: its reviewer may give it back
// and claim it again, it spends none of the job's attempts when it runs
// out, and "can't be done" is refused. A job with overlap that died and
// is requeued still goes to nobody who answered it.
func TestReviewReservationsAndRequeuedAnswers(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withOverlap(2)
		most := 0.9
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{MinAgreement: &most}); err != nil {
			t.Fatal(err)
		}
		job := e.add("label", 50)
		e.answer(e.claim("ann"), `{"decision":"approve"}`)
		e.answer(e.claim("bob"), `{"decision":"reject"}`)
		rev := e.claimReview("cy")
		if _, err := e.store.Fail(e.ctx, job.ID, rev.Hold(), "no"); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("fail of a review: %v", err)
		}
		if _, err := e.store.Release(e.ctx, job.ID, rev.Hold()); err != nil {
			t.Fatal(err)
		}
		if again := e.claimReview("cy"); again == nil || again.Job.ID != job.ID {
			t.Fatalf("cy's review claim after giving it back: %+v", again)
		}
		e.clock.Advance(time.Hour)
		if _, _, err := e.reclaim(10); err != nil {
			t.Fatal(err)
		}
		if j := e.get(job.ID); j.Attempts != 0 || j.Review == nil || j.State != StateReady {
			t.Fatalf("after the review ran out: %+v", j)
		}

		// Another job dies with one answer; requeued, ann may not answer again.
		dead := e.addJob(e.queue, NewJob{Title: "dies", MaxAttempts: 1})
		e.answer(e.claim("ann"), `{"decision":"approve"}`)
		r := e.claim("bob")
		if r.Job.ID != dead.ID {
			t.Fatalf("bob claimed %s", r.Job.Title)
		}
		if _, err := e.store.Fail(e.ctx, dead.ID, r.Hold(), "gone"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.store.Requeue(e.ctx, dead.ID, "sam"); err != nil {
			t.Fatal(err)
		}
		if j := e.get(dead.ID); !slices.Contains(j.SkippedBy, "ann") || j.State != StateReady {
			t.Fatalf("requeued: %+v", j)
		}
		if _, err := e.store.Claim(e.ctx, e.queue, "ann", OnlyJob(dead.ID)); !errors.Is(err, ErrNotReady) {
			t.Fatalf("ann claiming the job she answered: %v", err)
		}
	})
}
