package tasks

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// overlapForm is the outcome form of the overlap tests' queues.
var overlapForm = &Outcome{Choices: []string{"approve", "reject"}, Fields: []OutcomeField{
	{Name: "amount", Type: FieldNumber}, {Name: "comment", Type: FieldText},
}}

// withOverlap gives the env's queue overlap n and overlapForm.
func (e *env) withOverlap(n int) {
	e.t.Helper()
	if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{Overlap: &n, Outcome: overlapForm}); err != nil {
		e.t.Fatal(err)
	}
}

// answer completes the reservation with the result, failing the test on
// error.
func (e *env) answer(r *Reservation, result string) *Job {
	e.t.Helper()
	j, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), json.RawMessage(result))
	if err != nil {
		e.t.Fatalf("Complete by %s: %v", r.Job.ReservedBy, err)
	}
	return j
}

// In a queue with overlap 3, each job is answered by three different
// people, one after another: nobody gets it twice, not even after giving
// it back; each answer but the last puts it back in its place, and the
// last completes it, once, with what the answers agree on.
func TestOverlapAnswersByDistinctPeople(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withOverlap(3)
		job := e.add("label me", 50)
		later := e.add("after", 10)

		ann := e.claim("ann")
		if ann.Job.ID != job.ID || ann.Job.Overlap != 3 {
			t.Fatalf("ann claimed %s (overlap %d), want %s with overlap 3", ann.Job.Title, ann.Job.Overlap, job.Title)
		}
		answered := e.during(ActionAnswered, func() {
			got := e.answer(ann, `{"decision":"approve","amount":10,"comment":"fine"}`)
			if got.State != StateReady || len(got.Answers) != 1 || got.Answers[0].By != "ann" || got.Result != nil {
				t.Fatalf("after the first answer: %+v", got)
			}
		})
		if len(answered) != 1 || answered[0].To != StateReady || answered[0].Actor != "ann" {
			t.Fatalf("answered transitions %+v", answered)
		}
		// A retry of ann's answer answers the job as it is: no second answer.
		if again := e.answer(ann, `{"decision":"reject"}`); len(again.Answers) != 1 {
			t.Fatalf("a retried answer made %d answers", len(again.Answers))
		}
		// Ann is past it now: she gets the next job, not this one again.
		if r := e.claim("ann"); r.Job.ID != later.ID {
			t.Fatalf("ann claimed %s again", r.Job.Title)
		}
		// Bob gives it back: he is not offered it again either.
		bob := e.claim("bob")
		if bob.Job.ID != job.ID {
			t.Fatalf("bob claimed %s", bob.Job.Title)
		}
		if _, err := e.store.Release(e.ctx, job.ID, bob.Hold()); err != nil {
			t.Fatal(err)
		}
		e.claimNone("bob")
		// Nor may a supervisor assign it to him.
		if _, _, err := e.store.Assign(e.ctx, job.ID, "bob", "sam"); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("assigning to bob: %v, want ErrInvalidState", err)
		}

		cy := e.claim("cy")
		e.answer(cy, `{"decision":"approve","amount":12,"comment":"fine"}`)
		dee := e.claim("dee")
		if dee.Job.ID != job.ID {
			t.Fatalf("dee claimed %s", dee.Job.Title)
		}
		e.clock.Advance(time.Second)
		completed := e.during(ActionCompleted, func() {
			done := e.answer(dee, `{"decision":"reject","amount":10,"comment":"no"}`)
			if done.State != StateCompleted || len(done.Answers) != 3 || done.CompletedBy != "dee" {
				t.Fatalf("after the last answer: %+v", done)
			}
		})
		if len(completed) != 1 {
			t.Fatalf("%d completions, want 1", len(completed))
		}
		got := e.get(job.ID)
		var by []string
		for _, a := range got.Answers {
			by = append(by, a.By)
		}
		if len(by) != 3 || by[0] != "ann" || by[1] != "cy" || by[2] != "dee" || !got.Answers[2].At.After(got.Answers[0].At) {
			t.Fatalf("answers by %q at %v", by, got.Answers)
		}
		if string(got.Result) != `{"amount":10,"decision":"approve"}` {
			t.Fatalf("result %s", got.Result)
		}
		want := map[string]string{"decision": `"approve" 0.67`, "amount": `10 0.67`, "comment": `null 0.67`}
		for name, w := range want {
			a := got.Agreement[name]
			if s := string(a.Value) + " " + formatShare(a.Share); s != w {
				t.Fatalf("agreement on %s: %s, want %s", name, s, w)
			}
		}
		// Its marks went with it: nobody is kept from anything now.
		if len(got.SkippedBy) != 0 {
			t.Fatalf("skipped by %q after completion", got.SkippedBy)
		}
		if n, err := e.rdb.Exists(e.ctx, keysFor(e.queue).SkipCount()).Result(); err != nil || n != 0 {
			t.Fatalf("skip counts left: %d %v", n, err)
		}
	})
}

// formatShare writes a share to two places, as the tests compare them.
func formatShare(f float64) string {
	b, _ := json.Marshal(float64(int(f*100+0.5)) / 100)
	return string(b)
}

// Complete & next on a job with overlap answers it and claims another
// job, never the one just answered; the webhook event of the completion
// carries the answers and their agreement.
func TestOverlapCompleteNextAndEvent(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withOverlap(2)
		if err := e.store.SetOutbox(e.ctx, e.queue, true); err != nil {
			t.Fatal(err)
		}
		first := e.add("first", 50)
		second := e.add("second", 10)
		ann := e.claim("ann")
		_, next, _, err := e.store.CompleteNext(e.ctx, first.ID, ann.Hold(), json.RawMessage(`{"decision":"approve","comment":"same"}`))
		if err != nil || next == nil || next.Job.ID != second.ID {
			t.Fatalf("CompleteNext: next %+v, %v; want %s", next, err, second.Title)
		}
		bob := e.claim("bob")
		done, _, _, err := e.store.CompleteNext(e.ctx, first.ID, bob.Hold(), json.RawMessage(`{"decision":"approve","comment":"same"}`))
		if err != nil || done.State != StateCompleted || len(done.Answers) != 2 || done.Agreement["comment"].Share != 1 {
			t.Fatalf("the last answer: %+v, %v", done, err)
		}
		events, err := e.store.ReadOutbox(e.ctx, e.queue, "test", 10, 0)
		if err != nil || len(events) != 1 {
			t.Fatalf("events %d, %v", len(events), err)
		}
		j := events[0].Job
		if j.ID != first.ID || len(j.Answers) != 2 || j.Answers[1].By != "bob" || string(j.Agreement["comment"].Value) != `"same"` ||
			string(j.Result) != `{"comment":"same","decision":"approve"}` {
			t.Fatalf("event job %+v", j)
		}
	})
}

// Each way a reservation of a job with overlap ends keeps it from its
// holder: a skip, a failure, a deadline that passed.
func TestOverlapEveryEndingKeepsTheHolderOff(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.withOverlap(2)
		job := e.add("job", 50)
		r := e.claim("ann")
		if _, err := e.store.Skip(e.ctx, job.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		r = e.claim("bob")
		if _, err := e.store.Fail(e.ctx, job.ID, r.Hold(), "cannot"); err != nil {
			t.Fatal(err)
		}
		e.claim("cy")
		e.clock.Advance(time.Hour)
		if _, _, err := e.reclaim(10); err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"ann", "bob", "cy"} {
			e.claimNone(op)
		}
		if j := e.get(job.ID); len(j.SkippedBy) != 3 || j.State != StateReady {
			t.Fatalf("job %+v", j)
		}
	})
}
