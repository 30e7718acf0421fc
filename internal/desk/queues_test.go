package desk_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"claimdesk/internal/audit"
	"claimdesk/internal/desk"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// nonSupervisors are those who may not change queues.
func (f *fixture) nonSupervisors() []desk.Actor {
	return []desk.Actor{desk.Person(f.op), desk.Person(f.producer)}
}

// The queues each may see, read through the desk's Queues (a server's
// cache).
func TestVisibleQueues(t *testing.T) {
	f := newFixture(t)
	second := f.queue + "-second"
	if _, err := f.tasks.PutQueue(f.ctx, tasks.Queue{Name: second}); err != nil {
		t.Fatal(err)
	}
	f.enqueue("counted")
	var reads atomic.Int64
	d := desk.New(desk.Config{Redis: rdb, Tasks: tasks.New(rdb), Users: f.users, Bus: notify.NewBus(rdb, discard), Log: discard,
		Queues: func(ctx context.Context) ([]tasks.QueueStats, error) {
			reads.Add(1)
			return f.tasks.Queues(ctx)
		}})
	names := func(qs []tasks.QueueStats) []string {
		var out []string
		for _, q := range qs {
			if q.Queue.Name == f.queue || q.Queue.Name == second {
				out = append(out, q.Queue.Name)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		who  desk.Actor
		want []string
	}{
		{"an operator of the queue", desk.Person(f.op), []string{f.queue}},
		{"an operator of another queue", desk.Person(f.other), nil},
		{"a producer of the second queue", desk.Person(f.person(users.Producer, second)), []string{second}},
		{"a producer of every queue", desk.Person(f.person(users.Producer)), []string{f.queue, second}},
		{"a supervisor", desk.Person(f.super), []string{f.queue, second}},
		{"the command line", desk.CommandLine, []string{f.queue, second}},
	} {
		before := reads.Load()
		qs, err := d.VisibleQueues(f.ctx, tc.who)
		if err != nil || !slices.Equal(names(qs), tc.want) {
			t.Errorf("%s sees %v (%v), want %v", tc.name, names(qs), err, tc.want)
		}
		if n := reads.Load() - before; n != 1 {
			t.Errorf("%s: %d reads of the queues, want 1, through Config.Queues", tc.name, n)
		}
		for _, q := range qs {
			if q.Queue.Name == f.queue && q.Stats.Ready != 1 {
				t.Errorf("%s sees %s with %d ready, want 1", tc.name, f.queue, q.Stats.Ready)
			}
		}
	}
	// Without Config.Queues, from the store.
	qs, err := f.desk.VisibleQueues(f.ctx, desk.Person(f.op))
	if err != nil || !slices.Equal(names(qs), []string{f.queue}) {
		t.Errorf("the operator sees %v (%v) from the store, want %s", names(qs), err, f.queue)
	}
}

func TestCreateQueue(t *testing.T) {
	f := newFixture(t)
	notices := f.listen()
	name := f.queue + "-new"
	for _, who := range f.nonSupervisors() {
		_, err := f.desk.CreateQueue(f.ctx, who, tasks.Queue{Name: name}, false)
		refused(t, who.Name()+" makes a queue", err, desk.ErrForbidden)
	}
	_, err := f.desk.CreateQueue(f.ctx, desk.Person(f.super), tasks.Queue{Name: f.queue}, false)
	refused(t, "a queue of a name taken", err, tasks.ErrQueueExists)
	_, err = f.desk.CreateQueue(f.ctx, desk.Person(f.super), tasks.Queue{Name: "Bad Name"}, false)
	refused(t, "a queue of a bad name", err, tasks.ErrInvalid)
	if _, err := f.tasks.Queue(f.ctx, name); err == nil {
		t.Fatal("a refused create made the queue")
	}
	f.unaudited(name)
	f.unaudited(f.queue)
	if told := f.told(); len(told) != 0 {
		t.Fatalf("refused creates told the caches of %v", told)
	}

	// Zero settings take their defaults.
	q, err := f.desk.CreateQueue(f.ctx, desk.Person(f.super), tasks.Queue{Name: name, LeaseSeconds: 60}, false)
	if err != nil || q.LeaseSeconds != 60 || q.MaxAttempts != 5 || q.MaxExtensions != 10 {
		t.Fatalf("create: %+v, %v", q, err)
	}
	if got, err := f.tasks.Queue(f.ctx, name); err != nil || got.LeaseSeconds != 60 {
		t.Fatalf("the queue made: %+v, %v", got, err)
	}
	f.audited(name, audit.QueueCreated, f.super.Name,
		"lease 60s, max attempts 5, max extensions 10, max hold 14400s, ageing 0s, max held 0, outcome form none, reason required no, due when a job says, at risk after 80%, claim order rank, on breach nothing")
	// As given, a zero is meant.
	fixed := tasks.Queue{Name: f.queue + "-fixed"}.WithDefaults()
	fixed.MaxExtensions = 0
	if q, err = f.desk.CreateQueue(f.ctx, desk.CommandLine, fixed, true); err != nil || q.MaxExtensions != 0 {
		t.Fatalf("create as given: %+v, %v", q, err)
	}
	f.audited(fixed.Name, audit.QueueCreated, audit.CommandLine,
		"lease 300s, max attempts 5, max extensions 0, max hold 14400s, ageing 0s, max held 0, outcome form none, reason required no, due when a job says, at risk after 80%, claim order rank, on breach nothing")
	if told := f.told(); !slices.Equal(told, []string{name, fixed.Name}) {
		t.Errorf("the caches were told of %v, want both new queues", told)
	}
	// A new queue is no news to the other instances: the first notice
	// they hear of it is of its pause.
	if _, err := f.desk.PauseQueue(f.ctx, desk.Person(f.super), name); err != nil {
		t.Fatal(err)
	}
	f.wantSettingsNotice(notices, name, true)
}

func TestChangeQueue(t *testing.T) {
	f := newFixture(t)
	notices := f.listen()
	three := 3
	for _, who := range f.nonSupervisors() {
		_, err := f.desk.ChangeQueue(f.ctx, who, f.queue, tasks.QueuePatch{MaxHeld: &three})
		refused(t, who.Name()+" changes the queue", err, desk.ErrForbidden)
	}
	_, err := f.desk.ChangeQueue(f.ctx, desk.Person(f.super), f.queue+"-none", tasks.QueuePatch{MaxHeld: &three})
	refused(t, "change a queue that is not", err, tasks.ErrQueueNotFound)
	_, err = f.desk.ChangeQueue(f.ctx, desk.Person(f.super), f.queue, tasks.QueuePatch{LeaseSeconds: ptr(0)})
	refused(t, "a lease of 0", err, tasks.ErrInvalid)
	if q, _ := f.tasks.Queue(f.ctx, f.queue); q.MaxHeld != 0 || q.LeaseSeconds != 300 {
		t.Fatalf("refused changes changed the queue: %+v", q)
	}
	f.unaudited(f.queue)
	if told := f.told(); len(told) != 0 {
		t.Fatalf("refused changes told the caches of %v", told)
	}

	q, err := f.desk.ChangeQueue(f.ctx, desk.Person(f.super), f.queue, tasks.QueuePatch{MaxHeld: &three})
	if err != nil || q.MaxHeld != 3 || q.LeaseSeconds != 300 {
		t.Fatalf("change: %+v, %v", q, err)
	}
	if got, _ := f.tasks.Queue(f.ctx, f.queue); got.MaxHeld != 3 {
		t.Errorf("the queue changed: %+v", got)
	}
	f.audited(f.queue, audit.QueueChanged, f.super.Name, "max held 0 → 3")
	if told := f.told(); !slices.Equal(told, []string{f.queue}) {
		t.Errorf("the caches were told of %v, want %s", told, f.queue)
	}
	f.wantSettingsNotice(notices, f.queue, false)
}

func TestPauseQueueAndResumeQueue(t *testing.T) {
	f := newFixture(t)
	notices := f.listen()
	for _, who := range f.nonSupervisors() {
		_, err := f.desk.PauseQueue(f.ctx, who, f.queue)
		refused(t, who.Name()+" pauses the queue", err, desk.ErrForbidden)
		_, err = f.desk.ResumeQueue(f.ctx, who, f.queue)
		refused(t, who.Name()+" resumes the queue", err, desk.ErrForbidden)
	}
	_, err := f.desk.PauseQueue(f.ctx, desk.Person(f.super), f.queue+"-none")
	refused(t, "pause a queue that is not", err, tasks.ErrQueueNotFound)
	f.unaudited(f.queue)
	if told := f.told(); len(told) != 0 {
		t.Fatalf("refused pauses told the caches of %v", told)
	}

	f.enqueue("waits")
	q, err := f.desk.PauseQueue(f.ctx, desk.Person(f.super), f.queue)
	if err != nil || !q.Paused {
		t.Fatalf("pause: %+v, %v", q, err)
	}
	f.audited(f.queue, audit.QueuePaused, f.super.Name, "")
	f.wantSettingsNotice(notices, f.queue, true)
	_, err = f.desk.Claim(f.ctx, desk.Person(f.op), f.queue, "")
	refused(t, "a claim of the paused queue", err, tasks.ErrQueuePaused)

	q, err = f.desk.ResumeQueue(f.ctx, desk.CommandLine, f.queue)
	if err != nil || q.Paused {
		t.Fatalf("resume: %+v, %v", q, err)
	}
	f.audited(f.queue, audit.QueueResumed, audit.CommandLine, "")
	f.wantSettingsNotice(notices, f.queue, false)
	if told := f.told(); !slices.Equal(told, []string{f.queue, f.queue}) {
		t.Errorf("the caches were told of %v, want %s twice", told, f.queue)
	}
	f.claim(f.op)
}

func TestDeleteQueue(t *testing.T) {
	f := newFixture(t)
	notices := f.listen()
	j := f.enqueue("left")
	for _, who := range f.nonSupervisors() {
		refused(t, who.Name()+" deletes the queue", f.desk.DeleteQueue(f.ctx, who, f.queue), desk.ErrForbidden)
	}
	refused(t, "delete a queue with a job", f.desk.DeleteQueue(f.ctx, desk.Person(f.super), f.queue), tasks.ErrQueueNotEmpty)
	if _, err := f.tasks.Queue(f.ctx, f.queue); err != nil {
		t.Fatalf("a refused delete: %v", err)
	}
	f.unaudited(f.queue)
	if told := f.told(); len(told) != 0 {
		t.Fatalf("refused deletes told the caches of %v", told)
	}

	if _, _, err := f.desk.Cancel(f.ctx, desk.Person(f.producer), j.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := f.desk.DeleteQueue(f.ctx, desk.Person(f.super), f.queue); err != nil {
		t.Fatal(err)
	}
	_, err := f.tasks.Queue(f.ctx, f.queue)
	refused(t, "the queue deleted", err, tasks.ErrQueueNotFound)
	f.audited(f.queue, audit.QueueDeleted, f.super.Name, "")
	if told := f.told(); !slices.Equal(told, []string{f.queue}) {
		t.Errorf("the caches were told of %v, want %s", told, f.queue)
	}
	f.wantSettingsNotice(notices, f.queue, false)
	refused(t, "delete it again", f.desk.DeleteQueue(f.ctx, desk.Person(f.super), f.queue), tasks.ErrQueueNotFound)
}
