package desk_test

import (
	"testing"

	"claimdesk/internal/audit"
	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// batch makes an open batch of one job in the fixture's queue, as its
// producer.
func (f *fixture) batch(title string) *tasks.Batch {
	f.t.Helper()
	b, _, err := f.desk.CreateBatch(f.ctx, desk.Person(f.producer), f.queue, tasks.NewBatch{Title: title, Open: true, Jobs: []tasks.NewJob{{Title: "a"}}})
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// outsiders are those who may not touch the fixture's batches.
func (f *fixture) outsiders() []desk.Actor {
	return []desk.Actor{desk.Person(f.stranger), desk.Person(f.op)}
}

func TestCreateBatch(t *testing.T) {
	f := newFixture(t)
	nb := tasks.NewBatch{Title: "import", Jobs: []tasks.NewJob{{Title: "a"}, {Title: "b"}}}
	for _, who := range f.outsiders() {
		_, _, err := f.desk.CreateBatch(f.ctx, who, f.queue, nb)
		refused(t, who.Name()+" makes a batch", err, desk.ErrForbidden)
	}
	_, _, err := f.desk.CreateBatch(f.ctx, desk.Person(f.super), f.queue+"-none", nb)
	refused(t, "a batch in no queue", err, tasks.ErrQueueNotFound)
	_, _, err = f.desk.CreateBatch(f.ctx, desk.Person(f.producer), f.queue, tasks.NewBatch{Title: "empty"})
	refused(t, "a sealed batch without jobs", err, tasks.ErrInvalid)
	if s := f.stats(); s.Ready != 0 {
		t.Fatalf("refused batches left %d jobs", s.Ready)
	}

	for _, who := range []desk.Actor{desk.Person(f.producer), desk.Person(f.super), desk.CommandLine} {
		b, jobs, err := f.desk.CreateBatch(f.ctx, who, f.queue, nb)
		if err != nil || b.Queue != f.queue || b.Title != "import" || b.State != tasks.BatchSealed || b.Total != 2 || len(jobs) != 2 {
			t.Fatalf("%s makes a batch: %+v, %+v, %v", who.Name(), b, jobs, err)
		}
		if j := f.get(jobs[1].Job.ID); j.BatchID != b.ID || j.State != tasks.StateReady {
			t.Errorf("a job of the batch: %+v", j)
		}
		if who.Name() != desk.CommandLine.Name() { // the command line's is shared by the tests
			f.actedNow(who.Name())
		}
		f.unaudited(b.ID)
	}
}

// Who reads a batch: the producers of its queue and supervisors.
func TestBatch(t *testing.T) {
	f := newFixture(t)
	b := f.batch("read")
	for _, tc := range []struct {
		name string
		who  desk.Actor
		id   string
		want error
	}{
		{"a producer of the queue", desk.Person(f.producer), b.ID, nil},
		{"a producer of every queue", desk.Person(f.person(users.Producer)), b.ID, nil},
		{"a supervisor", desk.Person(f.super), b.ID, nil},
		{"the command line", desk.CommandLine, b.ID, nil},
		{"a producer of another queue", desk.Person(f.stranger), b.ID, desk.ErrForbidden},
		{"an operator of the queue", desk.Person(f.op), b.ID, desk.ErrForbidden},
		{"a supervisor, a batch that is not", desk.Person(f.super), "01M849P5RVVXVBMYD523T0E2HQ." + f.queue, tasks.ErrBatchNotFound},
	} {
		got, err := f.desk.Batch(f.ctx, tc.who, tc.id)
		if tc.want != nil {
			refused(t, tc.name+" reads the batch", err, tc.want)
		} else if err != nil || got.ID != b.ID || got.Title != "read" || got.Total != 1 {
			t.Errorf("%s reads the batch: %+v, %v", tc.name, got, err)
		}
	}
}

func TestAddToBatch(t *testing.T) {
	f := newFixture(t)
	b := f.batch("open")
	for _, who := range f.outsiders() {
		_, err := f.desk.AddToBatch(f.ctx, who, b.ID, []tasks.NewJob{{Title: "x"}})
		refused(t, who.Name()+" adds to the batch", err, desk.ErrForbidden)
	}
	out, err := f.desk.AddToBatch(f.ctx, desk.Person(f.producer), b.ID, []tasks.NewJob{{Title: "b"}, {Title: "c"}})
	if err != nil || len(out) != 2 || out[0].Job.BatchID != b.ID {
		t.Fatalf("add to the batch: %+v, %v", out, err)
	}
	if got, err := f.tasks.GetBatch(f.ctx, b.ID); err != nil || got.Total != 3 {
		t.Errorf("the batch after adding two: %+v, %v; want 3 jobs", got, err)
	}
	f.actedNow(f.producer.Name)
	f.unaudited(b.ID)
	if _, err := f.desk.SealBatch(f.ctx, desk.Person(f.producer), b.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.desk.AddToBatch(f.ctx, desk.Person(f.producer), b.ID, []tasks.NewJob{{Title: "late"}})
	refused(t, "add to a sealed batch", err, tasks.ErrInvalidState)
	_, err = f.desk.AddToBatch(f.ctx, desk.Person(f.producer), "01M849P5RVVXVBMYD523T0E2HQ."+f.queue, []tasks.NewJob{{Title: "x"}})
	refused(t, "add to a batch that is not", err, tasks.ErrBatchNotFound)
	if s := f.stats(); s.Ready != 3 {
		t.Errorf("%d jobs ready after refused adds, want 3", s.Ready)
	}
}

func TestSealBatch(t *testing.T) {
	f := newFixture(t)
	b := f.batch("to seal")
	for _, who := range f.outsiders() {
		_, err := f.desk.SealBatch(f.ctx, who, b.ID)
		refused(t, who.Name()+" seals the batch", err, desk.ErrForbidden)
	}
	if got, _ := f.tasks.GetBatch(f.ctx, b.ID); got.State != tasks.BatchOpen {
		t.Fatalf("refused seals changed the batch: %s", got.State)
	}
	sealed, err := f.desk.SealBatch(f.ctx, desk.Person(f.producer), b.ID)
	if err != nil || sealed.State != tasks.BatchSealed {
		t.Fatalf("seal: %+v, %v", sealed, err)
	}
	if got, _ := f.tasks.GetBatch(f.ctx, b.ID); got.State != tasks.BatchSealed {
		t.Errorf("the batch sealed: %s", got.State)
	}
	f.unaudited(b.ID)
}

func TestCancelBatch(t *testing.T) {
	f := newFixture(t)
	b, jobs, err := f.desk.CreateBatch(f.ctx, desk.Person(f.producer), f.queue,
		tasks.NewBatch{Title: "import", Jobs: []tasks.NewJob{{Title: "held"}, {Title: "waiting"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := f.claim(f.op)
	for _, who := range f.outsiders() {
		_, err := f.desk.CancelBatch(f.ctx, who, b.ID)
		refused(t, who.Name()+" cancels the batch", err, desk.ErrForbidden)
	}
	if got, _ := f.tasks.GetBatch(f.ctx, b.ID); got.State != tasks.BatchSealed {
		t.Fatalf("refused cancels changed the batch: %s", got.State)
	}
	f.unaudited(b.ID)

	canceled, err := f.desk.CancelBatch(f.ctx, desk.Person(f.producer), b.ID)
	if err != nil || canceled.State != tasks.BatchCanceled || canceled.Canceled != 1 || canceled.Reserved != 1 {
		t.Fatalf("cancel: %+v, %v", canceled, err)
	}
	if j := f.get(jobs[1].Job.ID); j.State != tasks.StateCanceled {
		t.Errorf("the waiting job of the batch canceled: %s", j.State)
	}
	if j := f.get(r.Job.ID); j.State != tasks.StateReserved {
		t.Errorf("the held job of the batch canceled: %s, want still held", j.State)
	}
	f.audited(b.ID, audit.BatchCanceled, f.producer.Name, "“import” in "+f.queue+", 2 jobs")
	if _, err := f.desk.CancelBatch(f.ctx, desk.Person(f.super), b.ID); err != nil {
		t.Fatal(err)
	}
	f.audited(b.ID, audit.BatchCanceled, f.super.Name, "“import” in "+f.queue+", 2 jobs")
}
