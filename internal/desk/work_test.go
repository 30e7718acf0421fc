package desk_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

func TestMayProduce(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		who  desk.Actor
		want error
	}{
		{"a producer of the queue", desk.Person(f.producer), nil},
		{"a producer of every queue", desk.Person(f.person(users.Producer)), nil},
		{"a supervisor", desk.Person(f.super), nil},
		{"the command line", desk.CommandLine, nil},
		{"a producer of another queue", desk.Person(f.stranger), desk.ErrForbidden},
		{"an operator of the queue", desk.Person(f.op), desk.ErrForbidden},
	} {
		if err := f.desk.MayProduce(f.ctx, tc.who, f.queue); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestEnqueue(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		who  desk.Actor
	}{
		{"a producer of another queue", desk.Person(f.stranger)},
		{"an operator of the queue", desk.Person(f.op)},
	} {
		_, err := f.desk.Enqueue(f.ctx, tc.who, f.queue, []tasks.NewJob{{Title: "x"}})
		refused(t, tc.name+" enqueues", err, desk.ErrForbidden)
	}
	_, err := f.desk.Enqueue(f.ctx, desk.Person(f.super), f.queue+"-none", []tasks.NewJob{{Title: "x"}})
	refused(t, "enqueue into no queue", err, tasks.ErrQueueNotFound)
	_, err = f.desk.Enqueue(f.ctx, desk.Person(f.producer), f.queue, []tasks.NewJob{{Title: "ok"}, {Title: ""}})
	refused(t, "enqueue a job without a title", err, tasks.ErrInvalid)
	if s := f.stats(); s.Ready != 0 {
		t.Fatalf("refused enqueues left %d jobs", s.Ready)
	}

	for _, who := range []desk.Actor{desk.Person(f.producer), desk.Person(f.super), desk.CommandLine} {
		out, err := f.desk.Enqueue(f.ctx, who, f.queue, []tasks.NewJob{{Title: "by " + who.Name(), IdempotencyKey: key(who)}})
		if err != nil || len(out) != 1 || !out[0].Created {
			t.Fatalf("%s enqueues: %+v, %v", who.Name(), out, err)
		}
		j := f.get(out[0].Job.ID)
		h, _, err := j.History()
		if err != nil || j.State != tasks.StateReady || j.Queue != f.queue || len(h) != 1 || h[0].Action != tasks.ActionEnqueued || h[0].Actor != who.Name() {
			t.Errorf("the job %s enqueued: %+v, history %+v, %v", who.Name(), j, h, err)
		}
		if who.Name() != desk.CommandLine.Name() { // the command line's is shared by the tests
			f.actedNow(who.Name())
		}
		f.unaudited(j.ID)
		// Sent again with its key, it is the job there is.
		again, err := f.desk.Enqueue(f.ctx, who, f.queue, []tasks.NewJob{{Title: "again", IdempotencyKey: key(who)}})
		if err != nil || again[0].Created || again[0].Job.ID != j.ID {
			t.Errorf("%s enqueues again with the key: %+v, %v; want the job there is", who.Name(), again, err)
		}
	}
	if s := f.stats(); s.Ready != 3 {
		t.Errorf("%d jobs ready, want 3", s.Ready)
	}
}

func TestClaim(t *testing.T) {
	f := newFixture(t)
	j := f.enqueue("one")
	for _, tc := range []struct {
		name string
		who  desk.Actor
	}{
		{"an operator not granted the queue", desk.Person(f.other)},
		{"a supervisor", desk.Person(f.super)},
		{"a producer of the queue", desk.Person(f.producer)},
		{"the command line", desk.CommandLine},
	} {
		_, err := f.desk.Claim(f.ctx, tc.who, f.queue, "")
		refused(t, tc.name+" claims", err, desk.ErrForbidden)
	}
	if s := f.stats(); s.Reserved != 0 {
		t.Fatalf("refused claims reserved %d jobs", s.Reserved)
	}

	f.tick(time.Minute)
	r, err := f.desk.Claim(f.ctx, desk.Person(f.op), f.queue, "k-1")
	if err != nil || r == nil || r.Job.ID != j.ID || r.Token == "" {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	if want := f.now().Add(300 * time.Second); r.Deadline.UnixMilli() != want.UnixMilli() {
		t.Errorf("deadline %v, want the lease from now, %v", r.Deadline, want)
	}
	if got := f.get(j.ID); got.State != tasks.StateReserved || got.ReservedBy != f.op.Name {
		t.Errorf("the job claimed: %+v", got)
	}
	f.actedNow(f.op.Name)
	f.unaudited(j.ID)
	// The same key answers the same reservation while it is held.
	if again, err := f.desk.Claim(f.ctx, desk.Person(f.op), f.queue, "k-1"); err != nil || again == nil || again.Token != r.Token {
		t.Errorf("the claim sent again with its key: %+v, %v; want the same reservation", again, err)
	}
	if r, err := f.desk.Claim(f.ctx, desk.Person(f.op), f.queue, ""); err != nil || r != nil {
		t.Errorf("a claim with nothing waiting: %+v, %v; want nothing", r, err)
	}
	// A key is its operator's own.
	two := f.enqueue("two")
	if peers, err := f.desk.Claim(f.ctx, desk.Person(f.peer), f.queue, "k-1"); err != nil || peers == nil || peers.Job.ID != two.ID {
		t.Errorf("another operator's claim with the key: %+v, %v; want %s", peers, err, two.ID)
	}
	// Once the reservation ends the key claims anew.
	if _, err := f.desk.GiveBack(f.ctx, desk.Person(f.op), j.ID, r.Token); err != nil {
		t.Fatal(err)
	}
	if anew, err := f.desk.Claim(f.ctx, desk.Person(f.op), f.queue, "k-1"); err != nil || anew == nil || anew.Token == r.Token || anew.Job.ID != j.ID {
		t.Errorf("the key's claim once its reservation ended: %+v, %v; want a new reservation of %s", anew, err, j.ID)
	}
	// The engine's refusals pass through.
	f.enqueue("three")
	if _, err := f.tasks.SetPaused(f.ctx, f.queue, true); err != nil {
		t.Fatal(err)
	}
	_, err = f.desk.Claim(f.ctx, desk.Person(f.op), f.queue, "")
	refused(t, "a claim of a paused queue", err, tasks.ErrQueuePaused)
}

func TestClaimAny(t *testing.T) {
	f := newFixture(t)
	second := f.queue + "-second"
	if _, err := f.tasks.PutQueue(f.ctx, tasks.Queue{Name: second}); err != nil {
		t.Fatal(err)
	}
	op := f.person(users.Operator, f.queue, second)
	me := desk.Person(op)
	low := f.enqueueJob(tasks.NewJob{Title: "low", Priority: ptr(20)})
	out, err := f.desk.Enqueue(f.ctx, desk.Person(f.super), second, []tasks.NewJob{{Title: "high", Priority: ptr(90)}})
	if err != nil {
		t.Fatal(err)
	}
	high := out[0].Job

	for _, tc := range []struct {
		name   string
		who    desk.Actor
		queues []string
		want   error
	}{
		{"of no queue", me, []string{}, desk.ErrInvalid},
		{"of a queue that does not exist", me, []string{f.queue, "elsewhere"}, tasks.ErrQueueNotFound},
		{"of a queue not granted", desk.Person(f.other), []string{f.queue}, desk.ErrForbidden},
		{"by a supervisor", desk.Person(f.super), nil, desk.ErrForbidden},
		{"by a producer", desk.Person(f.producer), []string{f.queue}, desk.ErrForbidden},
	} {
		_, err := f.desk.ClaimAny(f.ctx, tc.who, tc.queues, "")
		refused(t, "a claim of any "+tc.name, err, tc.want)
	}

	// The queues named, only.
	r, err := f.desk.ClaimAny(f.ctx, me, []string{f.queue}, "")
	if err != nil || r == nil || r.Job.ID != low.ID {
		t.Fatalf("a claim of any of %s: %+v, %v; want %s", f.queue, r, err, low.ID)
	}
	// Nil: every queue granted, ranked across them.
	f.enqueueJob(tasks.NewJob{Title: "middle", Priority: ptr(50)})
	r, err = f.desk.ClaimAny(f.ctx, me, nil, "k-1")
	if err != nil || r == nil || r.Job.ID != high.ID || r.Job.ReservedBy != op.Name {
		t.Fatalf("a claim of any granted queue: %+v, %v; want %s", r, err, high.ID)
	}
	f.actedNow(op.Name)
	if again, err := f.desk.ClaimAny(f.ctx, me, nil, "k-1"); err != nil || again == nil || again.Token != r.Token {
		t.Errorf("the claim sent again with its key: %+v, %v; want the same reservation", again, err)
	}
	if _, err := f.desk.ClaimAny(f.ctx, me, nil, ""); err != nil {
		t.Fatal(err)
	}
	if r, err := f.desk.ClaimAny(f.ctx, me, nil, ""); err != nil || r != nil {
		t.Errorf("a claim of any with nothing waiting: %+v, %v; want nothing", r, err)
	}
}

func TestClaimJob(t *testing.T) {
	f := newFixture(t)
	f.enqueue("first in line")
	named := f.enqueue("named")
	for _, tc := range []struct {
		name, id string
		who      desk.Actor
	}{
		{"an operator not granted its queue", named.ID, desk.Person(f.other)},
		{"a supervisor", named.ID, desk.Person(f.super)},
		{"an operator, by a malformed id", "no-such-id", desk.Person(f.op)},
	} {
		_, err := f.desk.ClaimJob(f.ctx, tc.who, tc.id)
		refused(t, tc.name+" claims the job", err, tasks.ErrNotFound)
	}
	r, err := f.desk.ClaimJob(f.ctx, desk.Person(f.op), named.ID)
	if err != nil || r.Job.ID != named.ID || f.get(named.ID).ReservedBy != f.op.Name {
		t.Fatalf("claim the job named: %+v, %v", r, err)
	}
	f.actedNow(f.op.Name)
	_, err = f.desk.ClaimJob(f.ctx, desk.Person(f.peer), named.ID)
	refused(t, "claim the job named once it is held", err, tasks.ErrNotReady)
}

// holderActions are the holder's actions, each run as who on the job id
// with the token.
var holderActions = []struct {
	name string
	run  func(f *fixture, who desk.Actor, id, token string) error
}{
	{"Complete", func(f *fixture, who desk.Actor, id, token string) error {
		_, err := f.desk.Complete(f.ctx, who, id, token, nil)
		return err
	}},
	{"CompleteNext", func(f *fixture, who desk.Actor, id, token string) error {
		_, _, _, err := f.desk.CompleteNext(f.ctx, who, id, token, nil)
		return err
	}},
	{"GiveBack", func(f *fixture, who desk.Actor, id, token string) error {
		_, err := f.desk.GiveBack(f.ctx, who, id, token)
		return err
	}},
	{"Skip", func(f *fixture, who desk.Actor, id, token string) error {
		_, err := f.desk.Skip(f.ctx, who, id, token)
		return err
	}},
	{"SkipNext", func(f *fixture, who desk.Actor, id, token string) error {
		_, _, _, err := f.desk.SkipNext(f.ctx, who, id, token)
		return err
	}},
	{"MoreTime", func(f *fixture, who desk.Actor, id, token string) error {
		_, err := f.desk.MoreTime(f.ctx, who, id, token, 600, "")
		return err
	}},
	{"CantBeDone", func(f *fixture, who desk.Actor, id, token string) error {
		_, err := f.desk.CantBeDone(f.ctx, who, id, token, "not mine")
		return err
	}},
}

// A holder's actions are the holder's alone, with the token of the live
// reservation: anyone else with it is refused (tasks.ErrForbidden), a
// token that is not the live one is lost, and a refusal changes nothing.
func TestHolderActionsAreTheHoldersAlone(t *testing.T) {
	f := newFixture(t)
	for _, h := range holderActions {
		r := f.held(h.name)
		before := f.get(r.Job.ID)
		for _, tc := range []struct {
			name, token string
			who         desk.Actor
			want        error
		}{
			{"another operator of the queue", r.Token, desk.Person(f.peer), tasks.ErrForbidden},
			{"an operator of another queue", r.Token, desk.Person(f.other), tasks.ErrForbidden},
			{"a producer of the queue", r.Token, desk.Person(f.producer), tasks.ErrForbidden},
			{"a supervisor", r.Token, desk.Person(f.super), tasks.ErrForbidden},
			{"the holder with another token", "0123456789abcdef0123456789abcdef", desk.Person(f.op), tasks.ErrReservationLost},
		} {
			refused(t, h.name+" by "+tc.name, h.run(f, tc.who, r.Job.ID, tc.token), tc.want)
		}
		if after := f.get(r.Job.ID); !reflect.DeepEqual(after, before) {
			t.Errorf("refused %s changed the job:\n  before %+v\n  after  %+v", h.name, before, after)
		}
		// Past its deadline, not yet taken back: the token is dead.
		f.tick(time.Duration(r.Job.LeaseSeconds+1) * time.Second)
		refused(t, h.name+" past the deadline", h.run(f, desk.Person(f.op), r.Job.ID, r.Token), tasks.ErrReservationLost)
		if s := f.stats(); s.Completed != 0 || s.Dead != 0 {
			t.Fatalf("refused %s: %+v", h.name, s)
		}
		if _, _, err := f.tasks.ReclaimExpired(f.ctx, f.queue, 10); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.desk.Cancel(f.ctx, desk.Person(f.super), r.Job.ID, false); err != nil {
			t.Fatal(err) // out of the way of the next
		}
	}
}

func TestComplete(t *testing.T) {
	f := newFixture(t)
	r := f.held("to complete")
	f.tick(time.Minute)
	j, err := f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, json.RawMessage(`{"verdict":"ok"}`))
	if err != nil || j.State != tasks.StateCompleted || j.CompletedBy != f.op.Name || string(j.Result) != `{"verdict":"ok"}` {
		t.Fatalf("complete: %+v, %v", j, err)
	}
	if got := f.get(r.Job.ID); got.State != tasks.StateCompleted || string(got.Result) != `{"verdict":"ok"}` {
		t.Errorf("the job completed: %+v", got)
	}
	f.wantRecent(f.op.Name, "to complete completed by "+f.op.Name+" → completed")
	f.actedNow(f.op.Name)
	f.unaudited(r.Job.ID)
	// A retry whose answer was lost is answered the job as completed, its
	// first result kept.
	again, err := f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, json.RawMessage(`{"verdict":"twice"}`))
	if err != nil || !reflect.DeepEqual(again, j) {
		t.Errorf("the retry: %+v, %v; want the first answer %+v", again, err, j)
	}
}

// A result must fit the queue's outcome form; only the holder is told how
// it does not.
func TestCompleteHoldsTheResultToTheForm(t *testing.T) {
	f := newFixture(t)
	o, err := tasks.ParseOutcome(`{"fields": [{"name": "category", "type": "one_of", "options": ["a", "b"], "required": true}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.tasks.PatchQueue(f.ctx, f.queue, tasks.QueuePatch{Outcome: o}); err != nil {
		t.Fatal(err)
	}
	r := f.held("one")
	bad := json.RawMessage(`{"category": "c"}`)
	var oe *tasks.OutcomeError
	_, err = f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, bad)
	if !errors.As(err, &oe) || oe.Fields["category"] == "" {
		t.Fatalf("complete with a result off the form: %v, want an OutcomeError on category", err)
	}
	_, _, _, err = f.desk.CompleteNext(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, bad)
	if !errors.As(err, &oe) {
		t.Fatalf("complete and next with a result off the form: %v, want an OutcomeError", err)
	}
	_, err = f.desk.Complete(f.ctx, desk.Person(f.peer), r.Job.ID, r.Token, bad)
	if errors.As(err, &oe) || !errors.Is(err, tasks.ErrForbidden) {
		t.Fatalf("complete by another with a result off the form: %v, want the engine's refusal", err)
	}
	if got := f.get(r.Job.ID); got.State != tasks.StateReserved || got.Result != nil {
		t.Fatalf("refused results changed the job: %+v", got)
	}
	j, err := f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, json.RawMessage(`{"category": "a"}`))
	if err != nil || j.State != tasks.StateCompleted {
		t.Fatalf("complete with a result on the form: %v, %v", j, err)
	}
}

func TestCompleteNext(t *testing.T) {
	f := newFixture(t)
	r := f.held("first")
	second := f.enqueue("second")
	done, next, why, err := f.desk.CompleteNext(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, json.RawMessage(`{"ok":true}`))
	if err != nil || why != nil || done.State != tasks.StateCompleted || next == nil || next.Job.ID != second.ID || next.Job.ReservedBy != f.op.Name {
		t.Fatalf("complete and next: %+v, %+v, %v, %v; want %s next", done, next, why, err, second.ID)
	}
	f.wantRecent(f.op.Name, "first completed by "+f.op.Name+" → completed")
	if got := f.get(second.ID); got.State != tasks.StateReserved || got.ReservedBy != f.op.Name {
		t.Errorf("the next job: %+v", got)
	}
	// Nothing left: nothing next, and no reason.
	done, last, why, err := f.desk.CompleteNext(f.ctx, desk.Person(f.op), next.Job.ID, next.Token, nil)
	if err != nil || why != nil || last != nil || done.State != tasks.StateCompleted {
		t.Fatalf("complete and next with nothing left: %+v, %+v, %v, %v", done, last, why, err)
	}
	// Paused: completed, nothing next, and why.
	r = f.held("third")
	f.enqueue("fourth")
	if _, err := f.tasks.SetPaused(f.ctx, f.queue, true); err != nil {
		t.Fatal(err)
	}
	done, next, why, err = f.desk.CompleteNext(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, nil)
	if err != nil || !errors.Is(why, tasks.ErrQueuePaused) || next != nil || done.State != tasks.StateCompleted {
		t.Fatalf("complete and next in a paused queue: %+v, %+v, %v, %v", done, next, why, err)
	}
}

// A person whose grant of the queue was taken away may finish what they
// hold, but claims nothing next, and is given no reason (the API's next
// is null).
func TestCompleteNextWithoutTheGrant(t *testing.T) {
	f := newFixture(t)
	r := f.held("one")
	f.enqueue("two")
	ungranted := f.op
	ungranted.Queues = nil
	done, next, why, err := f.desk.CompleteNext(f.ctx, desk.Person(ungranted), r.Job.ID, r.Token, nil)
	if err != nil || done.State != tasks.StateCompleted || next != nil || why != nil {
		t.Fatalf("complete and next without the grant: %v, %v, %v, %v; want completed, nothing next", done, next, why, err)
	}
	if s := f.stats(); s.Reserved != 0 || s.Ready != 1 {
		t.Errorf("after complete and next without the grant: %+v, want the other job waiting", s)
	}
}

func TestGiveBack(t *testing.T) {
	f := newFixture(t)
	r := f.held("first")
	f.enqueue("second")
	f.tick(time.Minute)
	j, err := f.desk.GiveBack(f.ctx, desk.Person(f.op), r.Job.ID, r.Token)
	if err != nil || j.State != tasks.StateReady || j.ReservedBy != "" || j.Attempts != 0 {
		t.Fatalf("give back: %+v, %v", j, err)
	}
	f.wantRecent(f.op.Name, "first released by "+f.op.Name+" → ready")
	f.unaudited(r.Job.ID)
	// A retry is answered again until someone claims the job; another
	// action with the token is no retry.
	if again, err := f.desk.GiveBack(f.ctx, desk.Person(f.op), r.Job.ID, r.Token); err != nil || again.State != tasks.StateReady {
		t.Errorf("the give back sent again: %+v, %v", again, err)
	}
	_, err = f.desk.Skip(f.ctx, desk.Person(f.op), r.Job.ID, r.Token)
	refused(t, "a skip with the token given back", err, tasks.ErrReservationLost)
	// Back in its place: first in line.
	if next := f.claim(f.peer); next.Job.ID != r.Job.ID {
		t.Errorf("after the give back %s was claimed, want %s", next.Job.ID, r.Job.ID)
	}
	_, err = f.desk.GiveBack(f.ctx, desk.Person(f.op), r.Job.ID, r.Token)
	refused(t, "the give back sent again after another claimed the job", err, tasks.ErrReservationLost)
}

func TestSkip(t *testing.T) {
	f := newFixture(t)
	r := f.held("skipped")
	j, err := f.desk.Skip(f.ctx, desk.Person(f.op), r.Job.ID, r.Token)
	if err != nil || j.State != tasks.StateReady || j.ReservedBy != "" {
		t.Fatalf("skip: %+v, %v", j, err)
	}
	f.wantRecent(f.op.Name, "skipped skipped by "+f.op.Name+" → ready")
	// Never offered to the holder again; to others, yes.
	if again, err := f.desk.Claim(f.ctx, desk.Person(f.op), f.queue, ""); err != nil || again != nil {
		t.Errorf("the skipper's next claim: %+v, %v; want nothing", again, err)
	}
	if next := f.claim(f.peer); next.Job.ID != r.Job.ID {
		t.Errorf("another's claim: %s, want the job skipped", next.Job.ID)
	}
}

// SkipNext claims the next job of the queue under the skip's key: the
// same next job for a skip sent twice, never the one skipped. The skip
// stands whatever the claim did.
func TestSkipNext(t *testing.T) {
	f := newFixture(t)
	r := f.held("one")
	two := f.enqueue("two")
	f.enqueue("three")
	skipped, next, why, err := f.desk.SkipNext(f.ctx, desk.Person(f.op), r.Job.ID, r.Token)
	if err != nil || why != nil || skipped.State != tasks.StateReady || next == nil || next.Job.ID != two.ID {
		t.Fatalf("skip and next: %v, %v, %v, %v; want %s next", skipped, next, why, err, two.ID)
	}
	f.wantRecent(f.op.Name, "one skipped by "+f.op.Name+" → ready")
	_, again, why, err := f.desk.SkipNext(f.ctx, desk.Person(f.op), r.Job.ID, r.Token)
	if err != nil || why != nil || again == nil || again.Token != next.Token {
		t.Fatalf("the skip sent again: %v, %v, %v; want the same next reservation", again, why, err)
	}
	if s := f.stats(); s.Reserved != 1 {
		t.Errorf("%d jobs reserved after one skip sent twice, want 1", s.Reserved)
	}
	// A skip refused claims nothing.
	_, none, why, err := f.desk.SkipNext(f.ctx, desk.Person(f.op), next.Job.ID, "0123456789abcdef0123456789abcdef")
	if !errors.Is(err, tasks.ErrReservationLost) || none != nil || why != nil {
		t.Errorf("a skip with a wrong token: %v, %v, %v", none, why, err)
	}
	// The claim refused: the skip stands, and why.
	if _, err := f.tasks.SetPaused(f.ctx, f.queue, true); err != nil {
		t.Fatal(err)
	}
	skipped, next, why, err = f.desk.SkipNext(f.ctx, desk.Person(f.op), next.Job.ID, next.Token)
	if err != nil || skipped.State != tasks.StateReady || next != nil || !errors.Is(why, tasks.ErrQueuePaused) {
		t.Errorf("skip and next in a paused queue: %v, %v, %v, %v", skipped, next, why, err)
	}
}

// A person whose grant of the queue was taken away may skip what they
// hold, and is told why nothing came next.
func TestSkipNextWithoutTheGrant(t *testing.T) {
	f := newFixture(t)
	r := f.held("one")
	f.enqueue("two")
	ungranted := f.op
	ungranted.Queues = nil
	skipped, next, why, err := f.desk.SkipNext(f.ctx, desk.Person(ungranted), r.Job.ID, r.Token)
	if err != nil || skipped.State != tasks.StateReady || next != nil || !errors.Is(why, desk.ErrForbidden) {
		t.Errorf("skip and next without the grant: %v, %v, %v, %v; want skipped, nothing next (forbidden)", skipped, next, why, err)
	}
	if s := f.stats(); s.Reserved != 0 {
		t.Errorf("%d jobs reserved, want none", s.Reserved)
	}
}

func TestMoreTime(t *testing.T) {
	f := newFixture(t)
	if _, _, err := f.tasks.PatchQueue(f.ctx, f.queue, tasks.QueuePatch{MaxExtensions: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	r := f.held("slow")
	f.tick(time.Minute)
	_, err := f.desk.MoreTime(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, 0, "")
	refused(t, "no more time", err, tasks.ErrInvalid)
	j, err := f.desk.MoreTime(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, 600, "k1")
	if want := f.now().Add(600 * time.Second); err != nil || j.Deadline == nil || j.Deadline.UnixMilli() != want.UnixMilli() {
		t.Fatalf("more time: %+v, %v; want the deadline at %v", j, err, want)
	}
	if got := f.get(r.Job.ID); got.Deadline == nil || !got.Deadline.Equal(*j.Deadline) || got.Extensions != 1 {
		t.Errorf("the job given more time: %+v", got)
	}
	f.actedNow(f.op.Name)
	f.tick(time.Minute)
	// Its retry, the answer lost, is answered as it is: no second extension.
	again, err := f.desk.MoreTime(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, 600, "k1")
	if err != nil || !again.Deadline.Equal(*j.Deadline) || again.Extensions != 1 {
		t.Fatalf("more time again with its key: %+v, %v", again, err)
	}
	_, err = f.desk.MoreTime(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, 1200, "k2")
	refused(t, "more time past the queue's extensions", err, tasks.ErrExtensionLimit)
}

// AddTime adds the amount to the time left, from the start of the
// reservation; a form sent twice with its key is one extension.
func TestAddTime(t *testing.T) {
	f := newFixture(t)
	r := f.held("long")
	j, err := f.desk.AddTime(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, 15*time.Minute, "form-1")
	if want := r.Deadline.Add(15 * time.Minute); err != nil || !j.Deadline.Equal(want) || j.Extensions != 1 {
		t.Fatalf("add 15 min: %+v, %v; want the deadline at %v", j, err, want)
	}
	j, err = f.desk.AddTime(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, 15*time.Minute, "form-1")
	if want := r.Deadline.Add(15 * time.Minute); err != nil || !j.Deadline.Equal(want) || j.Extensions != 1 {
		t.Fatalf("the same form again: %+v, %v; want the deadline still at %v", j, err, want)
	}
	_, err = f.desk.AddTime(f.ctx, desk.Person(f.peer), r.Job.ID, r.Token, 5*time.Minute, "form-2")
	refused(t, "more time by someone else", err, tasks.ErrForbidden)
}

func TestCantBeDone(t *testing.T) {
	f := newFixture(t)
	r := f.held("retried")
	j, err := f.desk.CantBeDone(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, "the file is empty")
	if err != nil || j.State != tasks.StateReady || j.LastError != "the file is empty" || j.Attempts != 1 {
		t.Fatalf("can't be done, attempts left: %+v, %v", j, err)
	}
	f.wantRecent(f.op.Name, "retried failed by "+f.op.Name+" → ready")
	f.unaudited(r.Job.ID)
	// The last attempt: dead.
	if _, _, err := f.desk.Cancel(f.ctx, desk.Person(f.super), r.Job.ID, false); err != nil {
		t.Fatal(err)
	}
	f.enqueueJob(tasks.NewJob{Title: "once", MaxAttempts: 1})
	r = f.claim(f.op)
	f.tick(time.Second)
	j, err = f.desk.CantBeDone(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, "no")
	if err != nil || j.State != tasks.StateDead {
		t.Fatalf("can't be done, the last attempt: %+v, %v", j, err)
	}
	f.wantRecent(f.op.Name, "once failed by "+f.op.Name+" → dead")
}

func ptr(n int) *int { return &n }

// key is an idempotency key of the actor's own.
func key(a desk.Actor) string { return "k-" + strings.ReplaceAll(a.Name(), " ", "-") }
