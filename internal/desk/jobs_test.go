package desk_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"claimdesk/internal/audit"
	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Who reads a job: supervisors, the producers of its queue, its holder,
// and whoever completed it while the queue is still theirs.
func TestJob(t *testing.T) {
	f := newFixture(t)
	held := f.held("held")
	done := f.held("done")
	if _, err := f.desk.Complete(f.ctx, desk.Person(f.op), done.Job.ID, done.Token, nil); err != nil {
		t.Fatal(err)
	}
	given := f.held("given back")
	if _, err := f.desk.GiveBack(f.ctx, desk.Person(f.op), given.Job.ID, given.Token); err != nil {
		t.Fatal(err)
	}
	ungranted := f.op
	ungranted.Queues = nil
	for _, tc := range []struct {
		name string
		who  desk.Actor
		id   string
		want error
	}{
		{"its holder", desk.Person(f.op), held.Job.ID, nil},
		{"its holder, no longer granted the queue", desk.Person(ungranted), held.Job.ID, nil},
		{"a supervisor", desk.Person(f.super), held.Job.ID, nil},
		{"the command line", desk.CommandLine, held.Job.ID, nil},
		{"a producer of the queue", desk.Person(f.producer), held.Job.ID, nil},
		{"a producer of every queue", desk.Person(f.person(users.Producer)), held.Job.ID, nil},
		{"a producer of another queue", desk.Person(f.stranger), held.Job.ID, desk.ErrForbidden},
		{"another operator of the queue", desk.Person(f.peer), held.Job.ID, desk.ErrForbidden},
		{"an operator of another queue", desk.Person(f.other), held.Job.ID, desk.ErrForbidden},
		{"who completed it", desk.Person(f.op), done.Job.ID, nil},
		{"who completed it, no longer granted the queue", desk.Person(ungranted), done.Job.ID, desk.ErrForbidden},
		{"who gave it back", desk.Person(f.op), given.Job.ID, desk.ErrForbidden},
		{"a supervisor, a job that is not", desk.Person(f.super), f.queue + ":nosuchjob", tasks.ErrNotFound},
	} {
		j, err := f.desk.Job(f.ctx, tc.who, tc.id)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("%s reads the job: %v, want %v", tc.name, err, tc.want)
		}
		if err == nil && (j == nil || j.ID != tc.id) {
			t.Errorf("%s reads the job: %+v, want %s", tc.name, j, tc.id)
		}
	}
}

// Who reads a job's history: supervisors, the producers of its queue, and
// the operators who held it, while the queue is still theirs; one whose
// reservation ended reads it up to their own part, not a later holder's.
func TestHistory(t *testing.T) {
	f := newFixture(t)
	f.enqueue("one")
	r := f.claim(f.peer)
	if _, err := f.desk.GiveBack(f.ctx, desk.Person(f.peer), r.Job.ID, r.Token); err != nil {
		t.Fatal(err)
	}
	r = f.claim(f.op)
	id := r.Job.ID
	if _, err := f.desk.Complete(f.ctx, desk.Person(f.op), id, r.Token, nil); err != nil {
		t.Fatal(err)
	}
	never := f.person(users.Operator, f.queue)
	ungranted := f.op
	ungranted.Queues = nil
	whole := []string{"enqueued by " + f.producer.Name, "claimed by " + f.peer.Name, "released by " + f.peer.Name,
		"claimed by " + f.op.Name, "completed by " + f.op.Name}
	for _, tc := range []struct {
		name string
		who  desk.Actor
		want error
		// reads is the part of the history the reader gets: whole when nil.
		reads []string
	}{
		{"a supervisor", desk.Person(f.super), nil, nil},
		{"the command line", desk.CommandLine, nil, nil},
		{"a producer of the queue", desk.Person(f.producer), nil, nil},
		{"who completed it", desk.Person(f.op), nil, nil},
		{"who held it and gave it back", desk.Person(f.peer), nil, whole[:3]},
		{"an operator of the queue who never held it", desk.Person(never), desk.ErrForbidden, nil},
		{"an operator of another queue", desk.Person(f.other), desk.ErrForbidden, nil},
		{"a producer of another queue", desk.Person(f.stranger), desk.ErrForbidden, nil},
		{"who completed it, no longer granted the queue", desk.Person(ungranted), desk.ErrForbidden, nil},
	} {
		h, trimmed, err := f.desk.History(f.ctx, tc.who, id)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("%s reads the history: %v, want %v", tc.name, err, tc.want)
			continue
		}
		if err != nil {
			continue
		}
		var got []string
		for _, e := range h {
			got = append(got, string(e.Action)+" by "+e.Actor)
		}
		want := tc.reads
		if want == nil {
			want = whole
		}
		if !slices.Equal(got, want) || trimmed != 0 {
			t.Errorf("%s reads the history: %q, %d trimmed; want %q", tc.name, got, trimmed, want)
		}
	}
	_, _, err := f.desk.History(f.ctx, desk.Person(f.super), f.queue+":nosuchjob")
	refused(t, "the history of a job that is not", err, tasks.ErrNotFound)
}

func TestCancel(t *testing.T) {
	f := newFixture(t)
	held := f.held("held")
	waiting := f.enqueue("waiting")
	for _, tc := range []struct {
		name  string
		who   desk.Actor
		id    string
		force bool
		opts  []tasks.SuperviseOption
		want  error
	}{
		{"an operator", desk.Person(f.op), waiting.ID, false, nil, desk.ErrForbidden},
		{"a producer of another queue", desk.Person(f.stranger), waiting.ID, false, nil, desk.ErrForbidden},
		{"a producer, forcing it", desk.Person(f.producer), held.Job.ID, true, nil, desk.ErrForbidden},
		{"a producer, a reserved job", desk.Person(f.producer), held.Job.ID, false, nil, tasks.ErrInvalidState},
		{"a supervisor, a reserved job unforced", desk.Person(f.super), held.Job.ID, false, nil, tasks.ErrInvalidState},
		{"a supervisor, a job as it was shown before it was claimed", desk.Person(f.super), held.Job.ID, true,
			[]tasks.SuperviseOption{tasks.AsSeen(tasks.StateReady, "")}, tasks.ErrInvalidState},
		{"a producer, a job that is not", desk.Person(f.producer), f.queue + ":nosuchjob", false, nil, tasks.ErrNotFound},
	} {
		_, _, err := f.desk.Cancel(f.ctx, tc.who, tc.id, tc.force, tc.opts...)
		refused(t, tc.name+" cancels", err, tc.want)
	}
	if j := f.get(waiting.ID); j.State != tasks.StateReady {
		t.Errorf("refused cancels changed the waiting job: %s", j.State)
	}
	if j := f.get(held.Job.ID); j.State != tasks.StateReserved {
		t.Errorf("refused cancels changed the held job: %s", j.State)
	}
	f.unaudited(waiting.ID)
	f.unaudited(held.Job.ID)

	j, holder, err := f.desk.Cancel(f.ctx, desk.Person(f.producer), waiting.ID, false)
	if err != nil || j.State != tasks.StateCanceled || holder != "" || f.get(waiting.ID).State != tasks.StateCanceled {
		t.Fatalf("the producer cancels the waiting job: %+v, %q, %v", j, holder, err)
	}
	f.audited(waiting.ID, audit.JobCanceled, f.producer.Name, "“waiting” in "+f.queue)

	j, holder, err = f.desk.Cancel(f.ctx, desk.Person(f.super), held.Job.ID, true)
	if err != nil || j.State != tasks.StateCanceled || holder != f.op.Name {
		t.Fatalf("a supervisor forces the cancel of the held job: %+v, %q, %v", j, holder, err)
	}
	f.audited(held.Job.ID, audit.JobCanceled, f.super.Name, "“held” in "+f.queue+", held by "+f.op.Name)
	f.wantRecent(f.op.Name, "held canceled by "+f.super.Name+" → canceled")

	last := f.enqueue("by the command line")
	if _, _, err := f.desk.Cancel(f.ctx, desk.CommandLine, last.ID, false); err != nil {
		t.Fatal(err)
	}
	f.audited(last.ID, audit.JobCanceled, audit.CommandLine, "“by the command line” in "+f.queue)
}

func TestRequeue(t *testing.T) {
	f := newFixture(t)
	dead := f.enqueueJob(tasks.NewJob{Title: "dead", MaxAttempts: 1})
	r := f.claim(f.op)
	if _, err := f.desk.CantBeDone(f.ctx, desk.Person(f.op), dead.ID, r.Token, "no"); err != nil {
		t.Fatal(err)
	}
	waiting := f.enqueue("waiting")
	for _, who := range []desk.Actor{desk.Person(f.producer), desk.Person(f.op)} {
		_, _, err := f.desk.Requeue(f.ctx, who, dead.ID)
		refused(t, who.Name()+" requeues", err, desk.ErrForbidden)
	}
	_, _, err := f.desk.Requeue(f.ctx, desk.Person(f.super), waiting.ID)
	refused(t, "requeue a waiting job", err, tasks.ErrInvalidState)
	f.unaudited(dead.ID)
	f.unaudited(waiting.ID)

	// A dead job: back in line with fresh attempts.
	j, holder, err := f.desk.Requeue(f.ctx, desk.Person(f.super), dead.ID)
	if err != nil || j.State != tasks.StateReady || j.Attempts != 0 || holder != "" {
		t.Fatalf("requeue the dead job: %+v, %q, %v", j, holder, err)
	}
	f.audited(dead.ID, audit.JobRequeued, f.super.Name, "“dead” in "+f.queue)

	// A reserved job: taken from its holder, whose token dies.
	r = f.claim(f.op)
	j, holder, err = f.desk.Requeue(f.ctx, desk.CommandLine, r.Job.ID)
	if err != nil || j.State != tasks.StateReady || holder != f.op.Name {
		t.Fatalf("requeue the held job: %+v, %q, %v", j, holder, err)
	}
	f.audited(r.Job.ID, audit.JobReleased, audit.CommandLine, "“"+r.Job.Title+"” in "+f.queue+", held by "+f.op.Name)
	f.wantRecent(f.op.Name, r.Job.Title+" force_released by "+audit.CommandLine+" → ready")
	_, err = f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, nil)
	refused(t, "complete with the token of a reservation taken back", err, tasks.ErrReservationLost)
}

// ForceRelease takes a reservation only from the holder named: the one a
// page showed.
func TestForceRelease(t *testing.T) {
	f := newFixture(t)
	r := f.held("held")
	_, err := f.desk.ForceRelease(f.ctx, desk.Person(f.producer), r.Job.ID, f.op.Name)
	refused(t, "a producer force releases", err, desk.ErrForbidden)
	_, err = f.desk.ForceRelease(f.ctx, desk.Person(f.super), r.Job.ID, f.peer.Name)
	refused(t, "force release of a holder the page did not show", err, tasks.ErrInvalidState)
	if j := f.get(r.Job.ID); j.State != tasks.StateReserved || j.ReservedBy != f.op.Name {
		t.Fatalf("refused force releases changed the job: %+v", j)
	}
	f.unaudited(r.Job.ID)
	j, err := f.desk.ForceRelease(f.ctx, desk.Person(f.super), r.Job.ID, f.op.Name)
	if err != nil || j.State != tasks.StateReady || f.get(r.Job.ID).State != tasks.StateReady {
		t.Fatalf("force release: %+v, %v", j, err)
	}
	f.audited(r.Job.ID, audit.JobReleased, f.super.Name, "“held” in "+f.queue+", held by "+f.op.Name)
	f.wantRecent(f.op.Name, "held force_released by "+f.super.Name+" → ready")
	_, err = f.desk.ForceRelease(f.ctx, desk.Person(f.super), r.Job.ID, f.op.Name)
	refused(t, "force release of a job no longer held", err, tasks.ErrInvalidState)
}

// A supervisor's reason for a take-back, requeue or cancel is kept in the
// audit log's entry; a queue that requires one refuses each without it,
// and records nothing.
func TestTakeBackReasons(t *testing.T) {
	f := newFixture(t)
	super := desk.Person(f.super)
	r := f.held("held")
	if _, err := f.desk.ForceRelease(f.ctx, super, r.Job.ID, f.op.Name, tasks.WithReason("customer called")); err != nil {
		t.Fatal(err)
	}
	f.audited(r.Job.ID, audit.JobReleased, f.super.Name, "“held” in "+f.queue+", held by "+f.op.Name+", because “customer called”")

	on := true
	if _, err := f.desk.ChangeQueue(f.ctx, super, f.queue, tasks.QueuePatch{RequireReason: &on}); err != nil {
		t.Fatal(err)
	}
	waiting := f.enqueue("waiting")
	_, _, err := f.desk.Cancel(f.ctx, super, waiting.ID, false)
	refused(t, "a cancel without the reason the queue requires", err, tasks.ErrReasonRequired)
	canceled, failed, err := f.desk.CancelMany(f.ctx, super, []string{waiting.ID}, false)
	if err != nil || len(canceled) != 0 || len(failed) != 1 || !errors.Is(failed[0].Err, tasks.ErrReasonRequired) {
		t.Fatalf("cancel many without a reason: %v %v %v", canceled, failed, err)
	}
	f.unaudited(waiting.ID)
	canceled, _, err = f.desk.CancelMany(f.ctx, super, []string{waiting.ID}, false, tasks.WithReason("duplicate"))
	if err != nil || len(canceled) != 1 {
		t.Fatalf("cancel many with a reason: %v %v", canceled, err)
	}
	f.audited(waiting.ID, audit.JobsCanceled, f.super.Name, "1 job canceled at once, because “duplicate”")
}

func TestRequeueDead(t *testing.T) {
	f := newFixture(t)
	for _, title := range []string{"one", "two", "three"} {
		f.enqueueJob(tasks.NewJob{Title: title, MaxAttempts: 1})
		r := f.claim(f.op)
		if _, err := f.desk.CantBeDone(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, "no"); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := f.desk.RequeueDead(f.ctx, desk.Person(f.op), f.queue, 10)
	refused(t, "an operator requeues the dead", err, desk.ErrForbidden)
	_, _, err = f.desk.RequeueDead(f.ctx, desk.Person(f.producer), f.queue, 10)
	refused(t, "a producer requeues the dead", err, desk.ErrForbidden)
	f.unaudited(f.queue)

	n, left, err := f.desk.RequeueDead(f.ctx, desk.Person(f.super), f.queue, 2)
	if err != nil || n != 2 || left != 1 {
		t.Fatalf("requeue two dead: %d, %d left, %v", n, left, err)
	}
	f.audited(f.queue, audit.DeadRequeued, f.super.Name, "2 dead jobs back in line")
	n, left, err = f.desk.RequeueDead(f.ctx, desk.CommandLine, f.queue, 10)
	if err != nil || n != 1 || left != 0 {
		t.Fatalf("requeue the last dead: %d, %d left, %v", n, left, err)
	}
	f.audited(f.queue, audit.DeadRequeued, audit.CommandLine, "1 dead job back in line")
	if s := f.stats(); s.Dead != 0 || s.Ready != 3 {
		t.Errorf("after requeueing the dead: %+v", s)
	}
	// Nothing dead: nothing done, nothing recorded.
	before := len(f.audits(f.queue))
	if n, left, err := f.desk.RequeueDead(f.ctx, desk.Person(f.super), f.queue, 10); err != nil || n != 0 || left != 0 {
		t.Fatalf("requeue with nothing dead: %d, %d left, %v", n, left, err)
	}
	if after := len(f.audits(f.queue)); after != before {
		t.Errorf("requeueing nothing was recorded: %d entries, then %d", before, after)
	}
}

func TestCancelMany(t *testing.T) {
	f := newFixture(t)
	held := f.held("held")
	a, b := f.enqueue("a"), f.enqueue("b")
	_, _, err := f.desk.CancelMany(f.ctx, desk.Person(f.producer), []string{a.ID}, false)
	refused(t, "a producer cancels many", err, desk.ErrForbidden)
	_, _, err = f.desk.CancelMany(f.ctx, desk.Person(f.op), []string{a.ID}, false)
	refused(t, "an operator cancels many", err, desk.ErrForbidden)
	_, _, err = f.desk.CancelMany(f.ctx, desk.Person(f.super), nil, false)
	refused(t, "cancel none", err, desk.ErrInvalid)
	_, _, err = f.desk.CancelMany(f.ctx, desk.Person(f.super), slices.Repeat([]string{a.ID}, desk.MaxBulk+1), false)
	refused(t, "cancel too many", err, desk.ErrInvalid)
	if j := f.get(a.ID); j.State != tasks.StateReady {
		t.Fatalf("refused cancels changed the job: %s", j.State)
	}

	// A job the engine refuses is a failure, not an error.
	gone := f.queue + ":nosuchjob"
	canceled, failed, err := f.desk.CancelMany(f.ctx, desk.Person(f.super), []string{a.ID, gone, held.Job.ID, b.ID}, false)
	if err != nil || !slices.Equal(canceled, []string{a.ID, b.ID}) || len(failed) != 2 ||
		failed[0].ID != gone || !errors.Is(failed[0].Err, tasks.ErrNotFound) ||
		failed[1].ID != held.Job.ID || !errors.Is(failed[1].Err, tasks.ErrInvalidState) {
		t.Fatalf("cancel many: %v, %+v, %v", canceled, failed, err)
	}
	for _, id := range []string{a.ID, b.ID} {
		if j := f.get(id); j.State != tasks.StateCanceled {
			t.Errorf("job %s: %s, want canceled", id, j.State)
		}
	}
	f.audited(a.ID+" "+b.ID, audit.JobsCanceled, f.super.Name, "2 jobs canceled at once")
	// Forced, a reserved job too.
	canceled, failed, err = f.desk.CancelMany(f.ctx, desk.Person(f.super), []string{held.Job.ID}, true)
	if err != nil || !reflect.DeepEqual(canceled, []string{held.Job.ID}) || len(failed) != 0 {
		t.Fatalf("cancel many, forced: %v, %+v, %v", canceled, failed, err)
	}
	f.audited(held.Job.ID, audit.JobsCanceled, f.super.Name, "1 job canceled at once")
	f.wantRecent(f.op.Name, "held canceled by "+f.super.Name+" → canceled")
}

// What a job's page shows whoever opens it: the holder, their job and
// token; an operator who held it, what it was and why their reservation
// ended, or all of it with its history once they completed it; other
// operators of the queue, what it is; supervisors, the job with its
// history.
func TestOpen(t *testing.T) {
	f := newFixture(t)
	held := f.held("held")
	done := f.held("done")
	if _, err := f.desk.Complete(f.ctx, desk.Person(f.op), done.Job.ID, done.Token, []byte(`{"k":"v"}`)); err != nil {
		t.Fatal(err)
	}
	taken := f.held("taken back")
	if _, err := f.desk.ForceRelease(f.ctx, desk.Person(f.super), taken.Job.ID, f.op.Name); err != nil {
		t.Fatal(err)
	}
	ungranted := f.op
	ungranted.Queues = nil

	o, err := f.desk.Open(f.ctx, desk.Person(f.op), held.Job.ID)
	if err != nil || o.Token != held.Token || o.Job.ID != held.Job.ID || o.Lost || len(o.History) != 2 {
		t.Errorf("the holder opens their job: %+v, %v", o, err)
	}
	o, err = f.desk.Open(f.ctx, desk.Person(f.op), done.Job.ID)
	if err != nil || o.Token != "" || o.Lost || string(o.Job.Result) != `{"k":"v"}` || len(o.History) != 3 {
		t.Errorf("who completed it opens it: %+v, %v", o, err)
	}
	o, err = f.desk.Open(f.ctx, desk.Person(f.op), taken.Job.ID)
	if err != nil || !o.Lost || o.Token != "" || o.History != nil || string(o.Job.Payload) != "{}" || o.Job.Title != "taken back" {
		t.Errorf("who held it opens it after it was taken back: %+v, %v", o, err)
	} else if o.Ended == nil || o.Ended.Action != tasks.ActionForceReleased || o.Ended.Actor != f.super.Name {
		t.Errorf("who held it is told what ended their reservation: %+v", o.Ended)
	}
	o, err = f.desk.Open(f.ctx, desk.Person(f.super), held.Job.ID)
	if err != nil || o.Token != "" || o.Lost || len(o.History) != 2 {
		t.Errorf("a supervisor opens a held job: %+v, %v", o, err)
	}
	o, err = f.desk.Open(f.ctx, desk.Person(f.peer), held.Job.ID)
	if err != nil || !o.Lost || o.Ended != nil || o.Token != "" || string(o.Job.Payload) != "{}" {
		t.Errorf("another operator of the queue opens a held job: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		name string
		who  desk.Actor
		id   string
		want error
	}{
		{"an operator of another queue", desk.Person(f.other), taken.Job.ID, tasks.ErrNotFound},
		{"who completed it, no longer granted the queue", desk.Person(ungranted), done.Job.ID, tasks.ErrNotFound},
		{"a producer of the queue", desk.Person(f.producer), held.Job.ID, desk.ErrForbidden},
		{"a supervisor, a job that is not", desk.Person(f.super), f.queue + ":nosuchjob", tasks.ErrNotFound},
	} {
		if o, err := f.desk.Open(f.ctx, tc.who, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("%s opens the job: %+v, %v, want %v", tc.name, o, err, tc.want)
		}
	}
}

func TestRequeueMany(t *testing.T) {
	f := newFixture(t)
	if _, _, err := f.tasks.PatchQueue(f.ctx, f.queue, tasks.QueuePatch{MaxAttempts: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	var dead []string
	for _, title := range []string{"a", "b"} {
		r := f.held(title)
		if _, err := f.tasks.Fail(f.ctx, r.Job.ID, r.Hold(), "404"); err != nil {
			t.Fatal(err)
		}
		dead = append(dead, r.Job.ID)
	}
	held := f.held("held")
	_, _, err := f.desk.RequeueMany(f.ctx, desk.Person(f.op), dead)
	refused(t, "an operator requeues many", err, desk.ErrForbidden)
	_, _, err = f.desk.RequeueMany(f.ctx, desk.Person(f.super), nil)
	refused(t, "requeue none", err, desk.ErrInvalid)
	_, _, err = f.desk.RequeueMany(f.ctx, desk.Person(f.super), dead, tasks.WithReason(strings.Repeat("x", 2001)))
	refused(t, "a reason too long", err, tasks.ErrInvalid)
	if j := f.get(dead[0]); j.State != tasks.StateDead {
		t.Fatalf("refused requeues changed the job: %s", j.State)
	}

	// A job not dead is a failure, never taken from its holder.
	requeued, failed, err := f.desk.RequeueMany(f.ctx, desk.Person(f.super), []string{dead[0], held.Job.ID, dead[1]}, tasks.WithReason("resent"))
	if err != nil || !slices.Equal(requeued, dead) || len(failed) != 1 || failed[0].ID != held.Job.ID || !errors.Is(failed[0].Err, tasks.ErrInvalidState) {
		t.Fatalf("requeue many: %v, %+v, %v", requeued, failed, err)
	}
	if j := f.get(held.Job.ID); j.State != tasks.StateReserved || j.ReservedBy != f.op.Name {
		t.Fatalf("the held job: %s by %s", j.State, j.ReservedBy)
	}
	for _, id := range dead {
		j := f.get(id)
		h, _, err := j.History()
		if err != nil || j.State != tasks.StateReady || h[len(h)-1].Reason != "resent" {
			t.Errorf("job %s: %s, history ends %+v (%v), want ready, requeued for the reason", id, j.State, h[len(h)-1], err)
		}
		f.audited(id, audit.JobRequeued, f.super.Name, audit.WithReason(audit.JobDetail(j, ""), "resent"))
	}
}

// A holder reads the answers others gave a job (overlap) only once it is
// completed, or while they hold it to review it; the rest of the job as
// it is.
func TestAsHolderReads(t *testing.T) {
	answers := []tasks.Answer{{By: "ann", Result: []byte(`{"n":1}`)}}
	agreement := map[string]tasks.Agreed{"n": {Share: 1}}
	review := &tasks.Review{Reason: "sample", Author: "ann"}
	for _, c := range []struct {
		name  string
		job   tasks.Job
		reads bool
	}{
		{"held", tasks.Job{State: tasks.StateReserved, ReservedBy: "bob"}, false},
		{"held to review it", tasks.Job{State: tasks.StateReserved, ReservedBy: "bob", Review: review}, true},
		{"in review, held by another", tasks.Job{State: tasks.StateReserved, ReservedBy: "cy", Review: review}, false},
		{"answered, waiting for the next answer", tasks.Job{State: tasks.StateReady}, false},
		{"answered, waiting for review", tasks.Job{State: tasks.StateReady, Review: review}, false},
		{"completed", tasks.Job{State: tasks.StateCompleted}, true},
	} {
		j := c.job
		j.Title, j.Answers, j.Agreement = "Label the photo", answers, agreement
		got := desk.AsHolderReads(&j, "bob")
		if read := got.Answers != nil || got.Agreement != nil; read != c.reads || got.Title != j.Title {
			t.Errorf("%s: bob reads answers %v, agreement %v, title %q; want answers read: %v", c.name, got.Answers, got.Agreement, got.Title, c.reads)
		}
		if j.Answers == nil || j.Agreement == nil {
			t.Errorf("%s: the job read changed", c.name)
		}
	}
	if desk.AsHolderReads(nil, "bob") != nil {
		t.Error("no job read as a job")
	}
}
