package desk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/internal/desk"
	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"

	"github.com/redis/go-redis/v9"
)

// rdb is the package's Redis, shared by its tests: each test has queues
// and people of its own names.
var rdb redis.UniversalClient

func TestMain(m *testing.M) {
	srv, err := taskstest.NewServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "desk tests:", err)
		os.Exit(1)
	}
	rdb = srv.Client()
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var seq atomic.Int64

// fixture is a desk over the shared Redis, with a queue and people of the
// test's own.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	desk  *desk.Desk
	tasks *tasks.Store
	users *users.Store
	queue string
	// changed lists the queues whose settings the desk said changed.
	mu      sync.Mutex
	changed []string
	// super, producer, op and other act: other is an operator not
	// granted the queue, stranger a producer of another queue.
	super, producer, op, other, stranger users.User
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	t.Parallel()
	n := seq.Add(1)
	f := &fixture{t: t, ctx: context.Background(), tasks: tasks.New(rdb), users: users.New(rdb), queue: fmt.Sprintf("d%d", n)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.desk = desk.New(desk.Config{Redis: rdb, Tasks: f.tasks, Users: f.users, Bus: notify.NewBus(rdb, log), Log: log,
		SettingsChanged: func(q string) { f.mu.Lock(); f.changed = append(f.changed, q); f.mu.Unlock() }})
	if _, err := f.tasks.PutQueue(f.ctx, tasks.Queue{Name: f.queue}); err != nil {
		t.Fatal(err)
	}
	f.super = f.person(users.Supervisor)
	f.producer = f.person(users.Producer, f.queue)
	f.op = f.person(users.Operator, f.queue)
	f.other = f.person(users.Operator, "elsewhere")
	f.stranger = f.person(users.Producer, "elsewhere")
	return f
}

// person adds a user of the role, granted the queues.
func (f *fixture) person(role users.Role, queues ...string) users.User {
	f.t.Helper()
	u := users.User{Name: fmt.Sprintf("%s%d", role, seq.Add(1)), Role: role, Queues: queues}
	if err := f.users.Put(f.ctx, u, "password-"+u.Name); err != nil {
		f.t.Fatal(err)
	}
	return u
}

// enqueue adds a job to the fixture's queue, as its producer.
func (f *fixture) enqueue(title string) *tasks.Job {
	f.t.Helper()
	out, err := f.desk.Enqueue(f.ctx, desk.Person(f.producer), f.queue, []tasks.NewJob{{Title: title}})
	if err != nil {
		f.t.Fatal(err)
	}
	return out[0].Job
}

// claim claims the next job of the queue as u.
func (f *fixture) claim(u users.User) *tasks.Reservation {
	f.t.Helper()
	r, err := f.desk.Claim(f.ctx, desk.Person(u), f.queue, "")
	if err != nil || r == nil {
		f.t.Fatalf("claim as %s: %v, %v", u.Name, r, err)
	}
	return r
}

// audited returns the newest audit entry about target.
func (f *fixture) audited(target string) audit.Entry {
	f.t.Helper()
	entries, _, err := audit.New(rdb).List(f.ctx, "", 1000)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range entries {
		if e.Target == target {
			return e
		}
	}
	f.t.Fatalf("no audit entry about %s", target)
	return audit.Entry{}
}

// refused fails the test unless err is the refusal want.
func refused(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

func TestEnqueueAndClaimFollowRolesAndGrants(t *testing.T) {
	f := newFixture(t)
	f.enqueue("one")
	_, err := f.desk.Enqueue(f.ctx, desk.Person(f.stranger), f.queue, []tasks.NewJob{{Title: "x"}})
	refused(t, "a producer of another queue enqueues", err, desk.ErrForbidden)
	_, err = f.desk.Enqueue(f.ctx, desk.Person(f.op), f.queue, []tasks.NewJob{{Title: "x"}})
	refused(t, "an operator enqueues", err, desk.ErrForbidden)

	_, err = f.desk.Claim(f.ctx, desk.Person(f.other), f.queue, "")
	refused(t, "an operator not granted the queue claims", err, desk.ErrForbidden)
	_, err = f.desk.Claim(f.ctx, desk.Person(f.super), f.queue, "")
	refused(t, "a supervisor claims", err, desk.ErrForbidden)
	_, err = f.desk.ClaimAny(f.ctx, desk.Person(f.op), []string{}, "")
	refused(t, "claim any of no queue", err, desk.ErrInvalid)
	_, err = f.desk.ClaimAny(f.ctx, desk.Person(f.op), []string{f.queue, "elsewhere"}, "")
	refused(t, "claim any of a queue not granted", err, desk.ErrForbidden)

	j := f.enqueue("two")
	_, err = f.desk.ClaimJob(f.ctx, desk.Person(f.other), j.ID)
	refused(t, "claim a job of a queue not granted", err, tasks.ErrNotFound)
	r, err := f.desk.ClaimJob(f.ctx, desk.Person(f.op), j.ID)
	if err != nil || r.Job.ID != j.ID {
		t.Fatalf("claim the job named: %v, %v", r, err)
	}
	r, err = f.desk.ClaimAny(f.ctx, desk.Person(f.op), nil, "")
	if err != nil || r == nil || r.Job.Title != "one" {
		t.Fatalf("claim any of the granted queues: %v, %v", r, err)
	}
	if r, err = f.desk.ClaimAny(f.ctx, desk.Person(f.op), nil, ""); err != nil || r != nil {
		t.Fatalf("claim any with nothing waiting: %v, %v, want nothing", r, err)
	}
}

func TestCompleteRefusesAResultThatDoesNotFitTheForm(t *testing.T) {
	f := newFixture(t)
	o, err := tasks.ParseOutcome(`{"fields": [{"name": "category", "type": "one_of", "options": ["a", "b"], "required": true}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.desk.ChangeQueue(f.ctx, desk.Person(f.super), f.queue, tasks.QueuePatch{Outcome: o}); err != nil {
		t.Fatal(err)
	}
	f.enqueue("one")
	r := f.claim(f.op)
	bad := json.RawMessage(`{"category": "c"}`)
	_, err = f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, bad)
	var oe *tasks.OutcomeError
	if !errors.As(err, &oe) || oe.Fields["category"] == "" {
		t.Fatalf("complete with a result off the form: %v, want an OutcomeError on category", err)
	}
	// Someone else is told what the engine tells them, not of the form.
	_, err = f.desk.Complete(f.ctx, desk.Person(f.other), r.Job.ID, r.Token, bad)
	if errors.As(err, &oe) || err == nil {
		t.Fatalf("complete by another with a result off the form: %v, want the engine's refusal", err)
	}
	j, err := f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, json.RawMessage(`{"category": "a"}`))
	if err != nil || j.State != tasks.StateCompleted {
		t.Fatalf("complete with a result on the form: %v, %v", j, err)
	}
}

// A person whose grant of the queue was taken away may finish what they
// hold, but claims nothing next: not after a completion, nor after a skip.
func TestGrantRemovedMayFinishButClaimNothingNext(t *testing.T) {
	f := newFixture(t)
	for _, title := range []string{"one", "two", "three"} {
		f.enqueue(title)
	}
	r1, r2 := f.claim(f.op), f.claim(f.op)
	ungranted := f.op
	ungranted.Queues = nil

	done, next, why, err := f.desk.CompleteNext(f.ctx, desk.Person(ungranted), r1.Job.ID, r1.Token, nil)
	if err != nil || done.State != tasks.StateCompleted || next != nil || why != nil {
		t.Fatalf("complete and next without the grant: %v, %v, %v, %v; want completed, nothing next", done, next, why, err)
	}
	skipped, next, why, err := f.desk.SkipNext(f.ctx, desk.Person(ungranted), r2.Job.ID, r2.Token)
	if err != nil || skipped.State != tasks.StateReady || next != nil || !errors.Is(why, desk.ErrForbidden) {
		t.Fatalf("skip and next without the grant: %v, %v, %v, %v; want skipped, nothing next (forbidden)", skipped, next, why, err)
	}
	if st, _ := f.tasks.Stats(f.ctx, f.queue); st.Reserved != 0 {
		t.Errorf("%d jobs reserved, want none", st.Reserved)
	}
}

// The claim that follows a skip carries the skip's key: the same next job
// for a skip sent twice, never the one skipped.
func TestSkipNextClaimsTheNextJob(t *testing.T) {
	f := newFixture(t)
	f.enqueue("one")
	f.enqueue("two")
	r := f.claim(f.op)
	skipped, next, why, err := f.desk.SkipNext(f.ctx, desk.Person(f.op), r.Job.ID, r.Token)
	if err != nil || why != nil || next == nil || next.Job.ID == skipped.ID {
		t.Fatalf("skip and next: %v, %v, %v, %v; want the other job", skipped, next, why, err)
	}
	_, again, why, err := f.desk.SkipNext(f.ctx, desk.Person(f.op), r.Job.ID, r.Token)
	if err != nil || why != nil || again == nil || again.Job.ID != next.Job.ID {
		t.Fatalf("the skip sent again: %v, %v, %v; want the same next job", again, why, err)
	}
}

func TestHolderActions(t *testing.T) {
	f := newFixture(t)
	f.enqueue("one")
	r := f.claim(f.op)
	me := desk.Person(f.op)
	_, err := f.desk.MoreTime(f.ctx, desk.Person(f.other), r.Job.ID, r.Token, 60)
	refused(t, "more time by another", err, tasks.ErrForbidden)
	j, err := f.desk.MoreTime(f.ctx, me, r.Job.ID, r.Token, 600)
	if err != nil || j.Deadline == nil || !j.Deadline.After(*r.Job.Deadline) {
		t.Fatalf("more time: %v, %v", j, err)
	}
	if j, err = f.desk.GiveBack(f.ctx, me, r.Job.ID, r.Token); err != nil || j.State != tasks.StateReady {
		t.Fatalf("give back: %v, %v", j, err)
	}
	r = f.claim(f.op)
	if j, err = f.desk.CantBeDone(f.ctx, me, r.Job.ID, r.Token, "the file is empty"); err != nil || j.LastError != "the file is empty" {
		t.Fatalf("can't be done: %v, %v", j, err)
	}
}

func TestWhoReadsAJobAndItsHistory(t *testing.T) {
	f := newFixture(t)
	f.enqueue("one")
	r := f.claim(f.op)
	id := r.Job.ID
	for _, tc := range []struct {
		name     string
		who      users.User
		job, his error
	}{
		{"its holder", f.op, nil, nil},
		{"a supervisor", f.super, nil, nil},
		{"a producer of the queue", f.producer, nil, nil},
		{"a producer of another queue", f.stranger, desk.ErrForbidden, desk.ErrForbidden},
		{"another operator", f.other, desk.ErrForbidden, desk.ErrForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.desk.Job(f.ctx, desk.Person(tc.who), id)
			if !errors.Is(err, tc.job) {
				t.Errorf("read the job: %v, want %v", err, tc.job)
			}
			_, _, err = f.desk.History(f.ctx, desk.Person(tc.who), id)
			if !errors.Is(err, tc.his) {
				t.Errorf("read its history: %v, want %v", err, tc.his)
			}
		})
	}
	if _, err := f.desk.GiveBack(f.ctx, desk.Person(f.op), id, r.Token); err != nil {
		t.Fatal(err)
	}
	_, err := f.desk.Job(f.ctx, desk.Person(f.op), id)
	refused(t, "the holder who gave it back reads the job", err, desk.ErrForbidden)
	if _, _, err := f.desk.History(f.ctx, desk.Person(f.op), id); err != nil {
		t.Errorf("who held it reads its history: %v", err)
	}
	ungranted := f.op
	ungranted.Queues = nil
	_, _, err = f.desk.History(f.ctx, desk.Person(ungranted), id)
	refused(t, "who held it reads its history once the queue is no longer theirs", err, desk.ErrForbidden)
}

func TestCancelAndRequeue(t *testing.T) {
	f := newFixture(t)
	waiting := f.enqueue("waiting")
	_, _, err := f.desk.Cancel(f.ctx, desk.Person(f.stranger), waiting.ID, false)
	refused(t, "a producer of another queue cancels", err, desk.ErrForbidden)
	_, _, err = f.desk.Cancel(f.ctx, desk.Person(f.producer), waiting.ID, true)
	refused(t, "a producer forces a cancel", err, desk.ErrForbidden)
	j, holder, err := f.desk.Cancel(f.ctx, desk.Person(f.producer), waiting.ID, false)
	if err != nil || j.State != tasks.StateCanceled || holder != "" {
		t.Fatalf("the producer cancels: %v, %q, %v", j, holder, err)
	}
	if e := f.audited(waiting.ID); e.Action != audit.JobCanceled || e.Actor != f.producer.Name || e.Detail != "“waiting” in "+f.queue {
		t.Errorf("audit entry of the cancel: %+v", e)
	}

	f.enqueue("held")
	r := f.claim(f.op)
	_, _, err = f.desk.Requeue(f.ctx, desk.Person(f.producer), r.Job.ID)
	refused(t, "a producer requeues", err, desk.ErrForbidden)
	_, err = f.desk.ForceRelease(f.ctx, desk.Person(f.super), r.Job.ID, "someone else")
	refused(t, "force release of a holder the page did not show", err, tasks.ErrInvalidState)
	if j, err = f.desk.ForceRelease(f.ctx, desk.Person(f.super), r.Job.ID, f.op.Name); err != nil || j.State != tasks.StateReady {
		t.Fatalf("force release: %v, %v", j, err)
	}
	if e := f.audited(r.Job.ID); e.Action != audit.JobReleased || e.Detail != "“held” in "+f.queue+", held by "+f.op.Name {
		t.Errorf("audit entry of the force release: %+v", e)
	}
}

func TestCancelMany(t *testing.T) {
	f := newFixture(t)
	a, b := f.enqueue("a"), f.enqueue("b")
	_, _, err := f.desk.CancelMany(f.ctx, desk.Person(f.producer), []string{a.ID}, false)
	refused(t, "a producer cancels many", err, desk.ErrForbidden)
	_, _, err = f.desk.CancelMany(f.ctx, desk.Person(f.super), nil, false)
	refused(t, "cancel none", err, desk.ErrInvalid)
	gone := f.queue + ":nosuchjob"
	canceled, failed, err := f.desk.CancelMany(f.ctx, desk.Person(f.super), []string{a.ID, gone, b.ID}, false)
	if err != nil || !slices.Equal(canceled, []string{a.ID, b.ID}) || len(failed) != 1 || failed[0].ID != gone || !errors.Is(failed[0].Err, tasks.ErrNotFound) {
		t.Fatalf("cancel many: %v, %+v, %v", canceled, failed, err)
	}
	if e := f.audited(a.ID + " " + b.ID); e.Action != audit.JobsCanceled || e.Detail != "2 jobs canceled at once" {
		t.Errorf("audit entry: %+v", e)
	}
}

func TestRequeueDead(t *testing.T) {
	f := newFixture(t)
	one := 1
	if _, err := f.desk.ChangeQueue(f.ctx, desk.Person(f.super), f.queue, tasks.QueuePatch{MaxAttempts: &one}); err != nil {
		t.Fatal(err)
	}
	f.enqueue("doomed")
	r := f.claim(f.op)
	if j, err := f.desk.CantBeDone(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, "no"); err != nil || j.State != tasks.StateDead {
		t.Fatalf("fail its one attempt: %v, %v", j, err)
	}
	_, _, err := f.desk.RequeueDead(f.ctx, desk.Person(f.op), f.queue, 10)
	refused(t, "an operator requeues the dead", err, desk.ErrForbidden)
	n, left, err := f.desk.RequeueDead(f.ctx, desk.Person(f.super), f.queue, 10)
	if err != nil || n != 1 || left != 0 {
		t.Fatalf("requeue dead: %d, %d, %v", n, left, err)
	}
	if e := f.audited(f.queue); e.Action != audit.DeadRequeued || e.Detail != "1 dead job back in line" {
		t.Errorf("audit entry: %+v", e)
	}
}

func TestBatches(t *testing.T) {
	f := newFixture(t)
	nb := tasks.NewBatch{Title: "import", Open: true, Jobs: []tasks.NewJob{{Title: "a"}}}
	_, _, err := f.desk.CreateBatch(f.ctx, desk.Person(f.stranger), f.queue, nb)
	refused(t, "a producer of another queue makes a batch", err, desk.ErrForbidden)
	b, _, err := f.desk.CreateBatch(f.ctx, desk.Person(f.producer), f.queue, nb)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.desk.Batch(f.ctx, desk.Person(f.stranger), b.ID)
	refused(t, "a producer of another queue reads the batch", err, desk.ErrForbidden)
	_, err = f.desk.AddToBatch(f.ctx, desk.Person(f.stranger), b.ID, []tasks.NewJob{{Title: "b"}})
	refused(t, "a producer of another queue adds to the batch", err, desk.ErrForbidden)
	if out, err := f.desk.AddToBatch(f.ctx, desk.Person(f.producer), b.ID, []tasks.NewJob{{Title: "b"}}); err != nil || len(out) != 1 {
		t.Fatalf("add to the batch: %v, %v", out, err)
	}
	if b, err = f.desk.SealBatch(f.ctx, desk.Person(f.producer), b.ID); err != nil || b.State != tasks.BatchSealed {
		t.Fatalf("seal: %+v, %v", b, err)
	}
	if b, err = f.desk.CancelBatch(f.ctx, desk.Person(f.super), b.ID); err != nil || b.State != tasks.BatchCanceled {
		t.Fatalf("cancel: %+v, %v", b, err)
	}
	if e := f.audited(b.ID); e.Action != audit.BatchCanceled || e.Detail != "“import” in "+f.queue+", 2 jobs" {
		t.Errorf("audit entry: %+v", e)
	}
}

func TestQueueSettings(t *testing.T) {
	f := newFixture(t)
	name := f.queue + "-new"
	_, err := f.desk.CreateQueue(f.ctx, desk.Person(f.op), tasks.Queue{Name: name}, false)
	refused(t, "an operator makes a queue", err, desk.ErrForbidden)
	q := tasks.Queue{Name: name}.WithDefaults()
	q.MaxExtensions = 0
	q, err = f.desk.CreateQueue(f.ctx, desk.Person(f.super), q, true)
	if err != nil || q.MaxExtensions != 0 {
		t.Fatalf("create as given: %+v, %v", q, err)
	}
	if e := f.audited(name); e.Action != audit.QueueCreated || e.Actor != f.super.Name {
		t.Errorf("audit entry of the creation: %+v", e)
	}
	lease := 600
	if _, err := f.desk.ChangeQueue(f.ctx, desk.CommandLine, name, tasks.QueuePatch{LeaseSeconds: &lease}); err != nil {
		t.Fatal(err)
	}
	if e := f.audited(name); e.Action != audit.QueueChanged || e.Actor != audit.CommandLine {
		t.Errorf("audit entry of the change: %+v", e)
	}
	if q, err = f.desk.PauseQueue(f.ctx, desk.Person(f.super), name); err != nil || !q.Paused {
		t.Fatalf("pause: %+v, %v", q, err)
	}
	if q, err = f.desk.ResumeQueue(f.ctx, desk.Person(f.super), name); err != nil || q.Paused {
		t.Fatalf("resume: %+v, %v", q, err)
	}
	if e := f.audited(name); e.Action != audit.QueueResumed {
		t.Errorf("audit entry of the resume: %+v", e)
	}
	if err := f.desk.DeleteQueue(f.ctx, desk.Person(f.super), name); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := slices.Repeat([]string{name}, 5); !slices.Equal(f.changed[len(f.changed)-5:], want) {
		t.Errorf("settings changed told of %v, want the new queue five times", f.changed)
	}
}

func TestPeople(t *testing.T) {
	f := newFixture(t)
	me := desk.Person(f.super)
	ann := users.User{Name: fmt.Sprintf("ann%d", seq.Add(1)), Role: users.Operator, Queues: []string{f.queue}}
	refused(t, "an operator adds a person", f.desk.AddPerson(f.ctx, desk.Person(f.op), ann, "password-ann"), desk.ErrForbidden)
	if err := f.desk.AddPerson(f.ctx, me, ann, "password-ann"); err != nil {
		t.Fatal(err)
	}
	refused(t, "a person added twice", f.desk.AddPerson(f.ctx, me, ann, "password-ann"), users.ErrExists)
	if e := f.audited(ann.Name); e.Action != audit.UserAdded || e.Detail != "role operator, queues "+f.queue+", new password" {
		t.Errorf("audit entry: %+v", e)
	}

	super := users.Supervisor
	_, err := f.desk.ChangePerson(f.ctx, me, f.super.Name, desk.Change{Role: &super})
	if err != nil {
		t.Errorf("a supervisor's own change that keeps the role: %v", err)
	}
	op := users.Operator
	_, err = f.desk.ChangePerson(f.ctx, me, f.super.Name, desk.Change{Role: &op})
	refused(t, "a supervisor changes their own role", err, desk.ErrForbidden)
	_, err = f.desk.Disable(f.ctx, me, f.super.Name)
	refused(t, "a supervisor disables themselves", err, desk.ErrForbidden)
	none := []string{}
	if u, err := f.desk.ChangePerson(f.ctx, me, ann.Name, desk.Change{Queues: &none}); err != nil || len(u.Queues) != 0 {
		t.Fatalf("take ann's grants away: %+v, %v", u, err)
	}
	if u, err := f.desk.Disable(f.ctx, desk.CommandLine, ann.Name); err != nil || !u.Disabled {
		t.Fatalf("the command line disables ann: %+v, %v", u, err)
	}
	if u, err := f.desk.Enable(f.ctx, me, ann.Name); err != nil || u.Disabled {
		t.Fatalf("enable ann: %+v, %v", u, err)
	}
	if err := f.desk.Unlock(f.ctx, desk.CommandLine, ann.Name); err != nil {
		t.Fatal(err)
	}
	if e := f.audited(ann.Name); e.Action != audit.UserUnlocked || e.Actor != audit.CommandLine {
		t.Errorf("audit entry: %+v", e)
	}
}

// A token's revocation is recorded alike from a page and from the command
// line, which knows only its id: the user as the target, the id in the
// detail, as its making is.
func TestTokensAreAuditedAlikeWhoeverRevokes(t *testing.T) {
	f := newFixture(t)
	me := desk.Person(f.super)
	var ids []string
	for range 2 {
		token, err := f.desk.NewToken(f.ctx, me, f.op.Name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, users.TokenID(token))
	}
	if e := f.audited(f.op.Name); e.Action != audit.TokenAdded || e.Detail != "token "+ids[1] {
		t.Errorf("audit entry of the token made: %+v", e)
	}
	err := f.desk.RevokeToken(f.ctx, me, f.producer.Name, ids[0])
	refused(t, "revoke a token as another's", err, users.ErrTokenNotFound)
	for i, who := range []desk.Actor{me, desk.CommandLine} {
		name := f.op.Name
		if i == 1 {
			name = "" // the command line knows only the id
		}
		if err := f.desk.RevokeToken(f.ctx, who, name, ids[i]); err != nil {
			t.Fatalf("revoke as %s: %v", who.Name(), err)
		}
		if e := f.audited(f.op.Name); e.Action != audit.TokenRevoked || e.Actor != who.Name() || e.Detail != "token "+ids[i] {
			t.Errorf("audit entry of the revocation by %s: %+v", who.Name(), e)
		}
	}
	if ts, err := f.desk.Tokens(f.ctx, me, f.op.Name); err != nil || len(ts) != 0 {
		t.Errorf("tokens left: %v, %v", ts, err)
	}
	refused(t, "revoke a token nobody has", f.desk.RevokeToken(f.ctx, desk.CommandLine, "", ids[0]), users.ErrTokenNotFound)
}

func TestSetAway(t *testing.T) {
	f := newFixture(t)
	refused(t, "a supervisor says they are away", f.desk.SetAway(f.ctx, desk.Person(f.super), true), desk.ErrForbidden)
	if err := f.desk.SetAway(f.ctx, desk.Person(f.op), true); err != nil {
		t.Fatal(err)
	}
	if u, err := f.users.Reload(f.ctx, f.op.Name); err != nil || !u.Away {
		t.Errorf("the operator after saying they are away: %+v, %v", u, err)
	}
}

// What a change keeps of people is written before the change is answered,
// whoever ends the reservation: the holder, a supervisor, or cron's
// reclaim of an expired one.
func TestRecentWorkAndLastActionAreWrittenWithTheChange(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := tasks.New(rdb, tasks.WithClock(clock))
	d := desk.New(desk.Config{Redis: rdb, Tasks: ts, Users: f.users, Bus: notify.NewBus(rdb, log), Log: log})
	op := desk.Person(f.op)
	for _, title := range []string{"done", "taken back", "expired"} {
		if _, err := d.Enqueue(f.ctx, desk.Person(f.producer), f.queue, []tasks.NewJob{{Title: title}}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func() *tasks.Reservation {
		r, err := d.Claim(f.ctx, op, f.queue, "")
		if err != nil || r == nil {
			t.Fatalf("claim: %v, %v", r, err)
		}
		return r
	}
	r := claim()
	if _, err := d.Complete(f.ctx, op, r.Job.ID, r.Token, nil); err != nil {
		t.Fatal(err)
	}
	if at, err := rdb.HGet(f.ctx, keys.LastAction, f.op.Name).Int64(); err != nil || at != now.UnixMilli() {
		t.Errorf("the operator's last action: %d, %v; want %d", at, err, now.UnixMilli())
	}
	r = claim()
	if _, err := d.ForceRelease(f.ctx, desk.Person(f.super), r.Job.ID, f.op.Name); err != nil {
		t.Fatal(err)
	}
	tick := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	claim()           // the job taken back comes first again
	tick(time.Second) // its reservation ends first
	r = claim()
	tick(time.Duration(r.Job.LeaseSeconds+1) * time.Second)
	if n, _, err := ts.ReclaimExpired(f.ctx, f.queue, 10); err != nil || n != 2 {
		t.Fatalf("reclaim: %d, %v; want both held jobs", n, err)
	}

	recent, err := notify.RecentWork(f.ctx, rdb, f.op.Name)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range recent {
		got = append(got, w.Title+" "+string(w.Action)+" by "+w.Actor)
	}
	want := []string{"expired expired by system", "taken back expired by system",
		"taken back force_released by " + f.super.Name, "done completed by " + f.op.Name}
	if !slices.Equal(got, want) {
		t.Errorf("recent work = %q, want %q", got, want)
	}
}
