package tasks

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"claimdesk/internal/skills"
)

// claimAs claims from the env's queue as operator with skills have (""
// for none), and returns the title claimed, "" for nothing.
func (e *env) claimAs(operator, have string, opts ...ClaimOption) string {
	e.t.Helper()
	set, err := skills.Parse(have)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := e.store.Claim(e.ctx, e.queue, operator, append(opts, WithSkills(set))...)
	if err != nil {
		e.t.Fatalf("Claim(%s): %v", operator, err)
	}
	if r == nil {
		return ""
	}
	return r.Job.Title
}

// routed enqueues a job of priority p with routing fields from j.
func (e *env) routed(title string, p int, j NewJob) *Job {
	e.t.Helper()
	j.Title, j.Priority = title, &p
	return e.addJob(e.queue, j)
}

// Jobs asking for skills go only to people who have them, at their level
// or above; a job assigned to a person goes to them alone; among all the
// jobs a person may take, the claim takes them in the queue's one order,
// whatever line each waits in. Counts count every ready job.
func TestRoutingBySkillsAndAssignee(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.routed("open", 50, NewJob{})
		e.routed("german", 60, NewJob{Skills: []string{"de"}})
		e.routed("big contract", 70, NewJob{Skills: []string{"contracts:3"}})
		e.routed("german contract", 80, NewJob{Skills: []string{"de", "contracts:2"}})
		e.routed("for ann", 40, NewJob{Assignee: "ann"})
		e.routed("for ann too", 90, NewJob{Assignee: "ann", Skills: []string{"fr"}})
		if st := e.stats(); st.Ready != 6 {
			t.Fatalf("ready %d, want 6", st.Ready)
		}
		// What each may claim: the counts, and their own jobs, best first.
		for _, c := range []struct {
			who, have string
			n         int64
			mine      []string
		}{
			{"bo", "", 1, nil},
			{"cy", "de, contracts:2", 3, nil},
			{"ann", "contracts:5", 4, []string{"for ann too", "for ann"}},
		} {
			have, _ := skills.Parse(c.have)
			_, got, err := e.store.Mine(e.ctx, c.who, have, []string{e.queue, "no-such-queue"})
			if err != nil {
				t.Fatal(err)
			}
			f := got[e.queue]
			var mine []string
			for _, j := range f.Mine {
				mine = append(mine, j.Title)
			}
			if none := got["no-such-queue"]; !f.Routed || f.Claimable != c.n || !slices.Equal(mine, c.mine) || none.Routed || none.Claimable != 0 {
				t.Fatalf("Mine(%s) = %+v (own %q), want %d claimable, own %q", c.who, f, mine, c.n, c.mine)
			}
		}
		// The lines that hold jobs, each with its count.
		lines, err := e.store.Lines(e.ctx, []string{e.queue})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lines {
			got = append(got, fmt.Sprintf("%s%s %d", l.Person, l.Skills.String(), l.Waiting))
		}
		slices.Sort(got)
		if want := []string{"ann 2", "contracts:2,de:1 1", "contracts:3 1", "de:1 1"}; !slices.Equal(got, want) {
			t.Fatalf("Lines = %q, want %q", got, want)
		}
		// bo has no skills: the open job, then nothing.
		if got := e.claimAs("bo", ""); got != "open" {
			t.Fatalf("bo claimed %q, want open", got)
		}
		if got := e.claimAs("bo", ""); got != "" {
			t.Fatalf("bo claimed %q, want nothing", got)
		}
		// cy reads German and handles contracts up to level 2.
		for _, want := range []string{"german contract", "german", ""} {
			if got := e.claimAs("cy", "de, contracts:2"); got != want {
				t.Fatalf("cy claimed %q, want %q", got, want)
			}
		}
		// ann's own jobs need no skills of hers, and come in rank order
		// with the rest she may take.
		for _, want := range []string{"for ann too", "big contract", "for ann", ""} {
			if got := e.claimAs("ann", "contracts:5"); got != want {
				t.Fatalf("ann claimed %q, want %q", got, want)
			}
		}
		if st := e.stats(); st.Ready != 0 || st.Reserved != 6 {
			t.Fatalf("ready %d, reserved %d; want 0, 6", st.Ready, st.Reserved)
		}
	})
}

// A routed job given back, expired or requeued waits in its own line
// again; naming it in a claim takes it only for someone who may.
func TestRoutedJobsStayRouted(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.routed("german", 50, NewJob{Skills: []string{"de:2"}})
		if _, err := e.store.Claim(e.ctx, e.queue, "cy", WithSkills(skills.Set{"de": 1}), OnlyJob(j.ID)); !errors.Is(err, ErrNotReady) {
			t.Fatalf("cy (de:1) claiming it by id: %v, want ErrNotReady", err)
		}
		r, err := e.store.Claim(e.ctx, e.queue, "dee", WithSkills(skills.Set{"de": 2}))
		if err != nil || r == nil {
			t.Fatalf("dee's claim: %v, %v", r, err)
		}
		if _, err := e.store.Release(e.ctx, j.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		if got := e.claimAs("bo", ""); got != "" {
			t.Fatalf("bo claimed %q after the give-back", got)
		}
		if got := e.claimAs("dee", "de:3", OnlyJob(j.ID)); got != "german" {
			t.Fatalf("dee claimed %q by id, want german", got)
		}
		e.clock.Advance(time.Hour)
		if _, _, err := e.reclaim(10); err != nil {
			t.Fatal(err)
		}
		if got := e.claimAs("bo", ""); got != "" {
			t.Fatalf("bo claimed %q after it expired", got)
		}
		if got := e.claimAs("dee", "de:2"); got != "german" {
			t.Fatalf("dee claimed %q after it expired, want german", got)
		}
	})
}

// A preferred job waits for its people alone until its fallback time;
// then anyone with its skills may claim it: found by the claim itself, or
// by the cron job first. Each fallback is in the job's history.
func TestPreferredFallsBack(t *testing.T) {
	onEachBackend(t, func(e *env) {
		a := e.routed("a", 50, NewJob{Preferred: []string{"ann", "al"}, FallbackAfterSeconds: 60})
		b := e.routed("b", 50, NewJob{Preferred: []string{"ann"}, FallbackAfterSeconds: 120, Skills: []string{"de"}})
		if j := e.get(a.ID); !slices.Equal(j.Preferred, []string{"ann", "al"}) || j.FallbackAt == nil ||
			!j.FallbackAt.Equal(e.clock.Now().Add(time.Minute).Truncate(time.Millisecond)) {
			t.Fatalf("job a: preferred %q, fallback %v", j.Preferred, j.FallbackAt)
		}
		if got := e.claimAs("bo", "de"); got != "" {
			t.Fatalf("bo claimed %q before any fallback", got)
		}
		e.clock.Advance(61 * time.Second)
		fell := e.during(ActionFellBack, func() {
			if got := e.claimAs("bo", "de"); got != "a" {
				t.Fatalf("bo claimed %q, want a", got)
			}
		})
		if !slices.Equal(jobIDs(fell), []string{a.ID}) {
			t.Fatalf("fell back %q, want a only", jobIDs(fell))
		}
		e.clock.Advance(time.Minute)
		fell = e.during(ActionFellBack, func() {
			if _, _, err := e.promote(10); err != nil {
				t.Fatal(err)
			}
		})
		if !slices.Equal(jobIDs(fell), []string{b.ID}) {
			t.Fatalf("the cron job fell back %q, want b", jobIDs(fell))
		}
		if got := e.claimAs("cy", ""); got != "" {
			t.Fatalf("cy, without German, claimed %q", got)
		}
		j := e.get(b.ID)
		if j.Preferred != nil || j.FallbackAt != nil || !slices.Equal(j.Skills, []string{"de"}) {
			t.Fatalf("b after its fallback: preferred %q at %v, skills %q", j.Preferred, j.FallbackAt, j.Skills)
		}
		h, _, err := j.History()
		if err != nil {
			t.Fatal(err)
		}
		if last := h[len(h)-1]; last.Action != ActionFellBack || last.Actor != System || last.To != StateReady {
			t.Fatalf("b's last entry: %+v", last)
		}
		if got := e.claimAs("dee", "de"); got != "b" {
			t.Fatalf("dee claimed %q, want b", got)
		}
	})
}

// A supervisor assigns a waiting job to a person, or transfers a held one:
// its holder's reservation ends, and the job waits for the person alone,
// in its place. The history says who to, by whom, and why.
func TestAssignAndTransfer(t *testing.T) {
	onEachBackend(t, func(e *env) {
		waiting := e.routed("waiting", 50, NewJob{Preferred: []string{"al"}, FallbackAfterSeconds: 60})
		held := e.routed("held", 60, NewJob{})
		r := e.claim("bo")
		if r.Job.ID != held.ID {
			t.Fatalf("bo claimed %s", r.Job.Title)
		}
		j, holder, err := e.store.Assign(e.ctx, waiting.ID, "ann", "sam")
		if err != nil || holder != "" || j.Assignee != "ann" || j.Preferred != nil {
			t.Fatalf("Assign(waiting) = %+v, %q, %v", j, holder, err)
		}
		moved := e.during(ActionTransferred, func() {
			j, holder, err = e.store.Assign(e.ctx, held.ID, "ann", "sam", AsSeen(StateReserved, "bo"), WithReason("she knows them"))
		})
		if err != nil || holder != "bo" || j.State != StateReady || j.Assignee != "ann" {
			t.Fatalf("Assign(held) = %+v, %q, %v", j, holder, err)
		}
		if len(moved) != 1 || moved[0].Holder != "bo" || moved[0].Assignee != "ann" || moved[0].Reason != "she knows them" {
			t.Fatalf("transfer's transitions: %+v", moved)
		}
		if _, err := e.store.Complete(e.ctx, held.ID, r.Hold(), nil); !errors.Is(err, ErrReservationLost) {
			t.Fatalf("bo completing after the transfer: %v", err)
		}
		// The fallback of the job preferred before is gone with it.
		e.clock.Advance(2 * time.Minute)
		for _, op := range []string{"bo", "al"} {
			if got := e.claimAs(op, ""); got != "" {
				t.Fatalf("%s claimed %q", op, got)
			}
		}
		for _, want := range []string{"held", "waiting"} {
			if got := e.claimAs("ann", ""); got != want {
				t.Fatalf("ann claimed %q, want %q", got, want)
			}
		}
		h, _, err := e.get(held.ID).History()
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(h, func(x Entry) bool { return x.Action == ActionTransferred }); i < 0 ||
			h[i].Actor != "sam" || h[i].Assignee != "ann" || h[i].Holder != "bo" || h[i].Reason != "she knows them" {
			t.Fatalf("history: %+v", h)
		}
		// Finished jobs, and a job not as the supervisor saw it, stay.
		if _, _, err := e.store.Assign(e.ctx, held.ID, "bo", "sam", AsSeen(StateReady, "")); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("Assign of a job no longer as seen: %v", err)
		}
		done := e.add("done", 50)
		dr := e.claim("bo")
		if _, err := e.store.Complete(e.ctx, done.ID, dr.Hold(), nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.store.Assign(e.ctx, done.ID, "ann", "sam"); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("Assign of a completed job: %v", err)
		}
	})
}

// What a job asks for is checked when it is enqueued: a bad one is refused
// with the field named, and nothing is made.
func TestRoutingInput(t *testing.T) {
	onEachBackend(t, func(e *env) {
		for _, c := range []struct {
			job   NewJob
			field string
		}{
			{NewJob{Skills: []string{"DE"}}, "skills"},
			{NewJob{Skills: []string{"de:6"}}, "skills"},
			{NewJob{Skills: []string{"de", "de:2"}}, "skills"},
			{NewJob{Assignee: "ann", Preferred: []string{"bo"}, FallbackAfterSeconds: 5}, "assignee"},
			{NewJob{Assignee: "ann", FallbackAfterSeconds: 5}, "fallback_after_seconds"},
			{NewJob{Assignee: "a|b"}, "assignee"},
			{NewJob{Preferred: []string{"bo"}}, "fallback_after_seconds"},
			{NewJob{Preferred: []string{}, FallbackAfterSeconds: 5}, "preferred"},
			{NewJob{Preferred: []string{"bo", "bo"}, FallbackAfterSeconds: 5}, "preferred"},
			{NewJob{FallbackAfterSeconds: 5}, "fallback_after_seconds"},
		} {
			c.job.Title = "x"
			_, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{c.job})
			var v *ValidationError
			if !errors.As(err, &v) || v.Field != c.field {
				t.Errorf("Enqueue(%+v): %v, want a problem with %s", c.job, err, c.field)
			}
		}
		if st := e.stats(); st.Ready != 0 {
			t.Fatalf("%d jobs made", st.Ready)
		}
	})
}

// A claim is handed the skills lines its Store last read; when a new line
// came meanwhile (another instance enqueued a job asking for new skills)
// the claim is refused, the lines are read again and the claim made
// again: a claim, the next claim of a completion, and the look of a claim
// across queues each find the new job.
func TestNewSkillsLinesAreSeen(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.routed("first", 50, NewJob{Skills: []string{"fr"}})
		if got := e.claimAs("dee", "de"); got != "" {
			t.Fatalf("dee claimed %q", got)
		}
		e.routed("german", 50, NewJob{Skills: []string{"de"}})
		if got := e.claimAs("dee", "de"); got != "german" {
			t.Fatalf("dee claimed %q after a new line came, want german", got)
		}
		open := e.routed("open", 50, NewJob{})
		r := e.claim("dee")
		if r.Job.ID != open.ID {
			t.Fatalf("dee claimed %s", r.Job.Title)
		}
		e.routed("german contract", 50, NewJob{Skills: []string{"de", "contracts"}})
		_, next, why, err := e.store.CompleteNext(e.ctx, r.Job.ID, r.Hold(), nil, WithSkills(skills.Set{"de": 1, "contracts": 2}))
		if err != nil || why != nil || next == nil || next.Job.Title != "german contract" {
			t.Fatalf("CompleteNext after a new line came: %+v, %v, %v", next, why, err)
		}
		e.routed("german fast", 50, NewJob{Skills: []string{"de:2"}})
		got, err := e.store.ClaimAny(e.ctx, []string{e.queue}, "dee", WithSkills(skills.Set{"de": 2}))
		if err != nil || got == nil || got.Job.Title != "german fast" {
			t.Fatalf("ClaimAny after a new line came: %+v, %v", got, err)
		}
	})
}

// A job assigned to someone who skips it, or says it can't be done, is
// theirs no longer: it goes to anyone with its skills, never back to them.
func TestAssigneeGivesItUp(t *testing.T) {
	onEachBackend(t, func(e *env) {
		skipped := e.routed("skipped", 60, NewJob{Assignee: "ann"})
		failed := e.routed("failed", 50, NewJob{Assignee: "ann", Skills: []string{"de"}})
		r := e.claim("ann")
		if r.Job.ID != skipped.ID {
			t.Fatalf("ann claimed %s", r.Job.Title)
		}
		if _, err := e.store.Skip(e.ctx, skipped.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		r = e.claim("ann")
		if r.Job.ID != failed.ID {
			t.Fatalf("ann claimed %s", r.Job.Title)
		}
		if _, err := e.store.Fail(e.ctx, failed.ID, r.Hold(), "I don't read German"); err != nil {
			t.Fatal(err)
		}
		if got := e.claimAs("ann", "de"); got != "" {
			t.Fatalf("ann was given %q again", got)
		}
		for _, want := range []string{"skipped", "failed"} {
			if got := e.claimAs("bo", "de"); got != want {
				t.Fatalf("bo claimed %q, want %q", got, want)
			}
		}
		if j := e.get(failed.ID); j.Assignee != "" || !slices.Equal(j.Skills, []string{"de"}) {
			t.Fatalf("the failed job: assignee %q, skills %q", j.Assignee, j.Skills)
		}
	})
}
