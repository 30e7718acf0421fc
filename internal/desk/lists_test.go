package desk_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/internal/desk"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"
)

func TestListsAreForSupervisors(t *testing.T) {
	f := newFixture(t)
	f.store(f.op)
	for _, tc := range []struct {
		name string
		read func(a desk.Actor) error
	}{
		{"Jobs", func(a desk.Actor) error {
			_, _, err := f.desk.Jobs(f.ctx, a, desk.Listing{Queue: f.queue, State: tasks.StateReady})
			return err
		}},
		{"LiveReservations", func(a desk.Actor) error { _, err := f.desk.LiveReservations(f.ctx, a, ""); return err }},
		{"Queue", func(a desk.Actor) error { _, err := f.desk.Queue(f.ctx, a, f.queue); return err }},
		{"Stats", func(a desk.Actor) error { _, err := f.desk.Stats(f.ctx, a, f.queue); return err }},
		{"Numbers", func(a desk.Actor) error { _, err := f.desk.Numbers(f.ctx, a, f.queue); return err }},
		{"QueueNames", func(a desk.Actor) error { _, err := f.desk.QueueNames(f.ctx, a); return err }},
		{"Batches", func(a desk.Actor) error { _, err := f.desk.Batches(f.ctx, a, 10); return err }},
		{"People", func(a desk.Actor) error { _, err := f.desk.People(f.ctx, a); return err }},
		{"PersonNamed", func(a desk.Actor) error { _, err := f.desk.PersonNamed(f.ctx, a, f.op.Name); return err }},
		{"AuditLog", func(a desk.Actor) error { _, _, err := f.desk.AuditLog(f.ctx, a, "", 10, audit.Filter{}); return err }},
		{"Team", func(a desk.Actor) error { _, _, err := f.desk.Team(f.ctx, a, true, true); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, u := range []users.User{f.op, f.producer} {
				refused(t, tc.name+" as a "+string(u.Role), tc.read(desk.Person(u)), desk.ErrForbidden)
			}
			for _, a := range []desk.Actor{desk.Person(f.super), desk.CommandLine} {
				if err := tc.read(a); err != nil {
					t.Errorf("%s as %s: %v", tc.name, a.Name(), err)
				}
			}
		})
	}
}

// ids lists the ids of the jobs, in order.
func ids(js []*tasks.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func TestJobsListsWhatTheListingAsks(t *testing.T) {
	f := newFixture(t)
	var made []*tasks.Job
	for _, title := range []string{"alpha one", "beta", "alpha two"} {
		out, err := f.desk.Enqueue(f.ctx, desk.Person(f.producer), f.queue, []tasks.NewJob{{Title: title, Payload: json.RawMessage(`{"n":1}`)}})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, out[0].Job)
	}
	held := f.claim(f.op) // the first in line: alpha one
	sup := desk.Person(f.super)
	list := func(l desk.Listing, opts ...tasks.ListOption) (tasks.Page, int) {
		t.Helper()
		p, scanned, err := f.desk.Jobs(f.ctx, sup, l, opts...)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		return p, scanned
	}

	p, scanned := list(desk.Listing{Queue: f.queue, State: tasks.StateReady})
	if got, want := ids(p.Jobs), ids(made[1:]); !slices.Equal(got, want) || scanned != 0 || p.NextCursor != "" {
		t.Errorf("ready: %v (scanned %d, next %q), want %v, scanned 0, no next page", got, scanned, p.NextCursor, want)
	}
	if string(p.Jobs[0].Payload) != `{"n":1}` {
		t.Errorf("a listing's payload: %s", p.Jobs[0].Payload)
	}
	if p, _ = list(desk.Listing{Queue: f.queue, State: tasks.StateReady}, tasks.WithoutPayloads); len(p.Jobs[0].Payload) != 0 {
		t.Errorf("a listing without payloads has %s", p.Jobs[0].Payload)
	}

	p, scanned = list(desk.Listing{Queue: f.queue, State: tasks.StateReady, Filter: tasks.Filter{Text: "ALPHA"}})
	if got := ids(p.Jobs); !slices.Equal(got, []string{made[2].ID}) || scanned != 2 {
		t.Errorf("ready with alpha in the title: %v (scanned %d), want [%s] of 2 scanned", got, scanned, made[2].ID)
	}

	p, _ = list(desk.Listing{Queue: f.queue, State: tasks.StateReserved})
	if got := ids(p.Jobs); !slices.Equal(got, []string{held.Job.ID}) || p.Jobs[0].ReservedBy != f.op.Name {
		t.Errorf("reserved: %v, want [%s] held by %s", got, held.Job.ID, f.op.Name)
	}
	if p, _ = list(desk.Listing{State: tasks.StateReserved, Limit: tasks.MaxPageSize}); !slices.Contains(ids(p.Jobs), held.Job.ID) {
		t.Errorf("every queue's reservations leave out %s", held.Job.ID)
	}

	first, _ := list(desk.Listing{Queue: f.queue, State: tasks.StateReady, Limit: 1})
	next, _ := list(desk.Listing{Queue: f.queue, State: tasks.StateReady, Limit: 1, Cursor: first.NextCursor})
	if got := append(ids(first.Jobs), ids(next.Jobs)...); !slices.Equal(got, ids(made[1:])) || next.NextCursor != "" {
		t.Errorf("ready one at a time: %v (then %q), want %v and the end", got, next.NextCursor, ids(made[1:]))
	}
}

func TestLiveReservationsPagesEveryQueuesReservations(t *testing.T) {
	t.Parallel()
	// A Redis of its own: every queue's reservations are this test's.
	r := taskstest.Redis(t).Client()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := tasks.New(r)
	firstReads := 0
	d := desk.New(desk.Config{Redis: r, Tasks: ts, Users: users.New(r), Bus: notify.NewBus(r, log), Log: log,
		FirstReservations: func(ctx context.Context, read func(context.Context) (tasks.Page, error)) (tasks.Page, error) {
			firstReads++
			return read(ctx)
		}})
	held := map[string]bool{}
	for _, q := range []string{"one", "two"} {
		if _, err := ts.PutQueue(ctx, tasks.Queue{Name: q}); err != nil {
			t.Fatal(err)
		}
		for range desk.ReservationsPage/2 + 1 {
			if _, err := ts.Enqueue(ctx, q, "producer", []tasks.NewJob{{Title: "job", Payload: json.RawMessage(`{"n":1}`)}}); err != nil {
				t.Fatal(err)
			}
			res, err := ts.Claim(ctx, q, "op")
			if err != nil || res == nil {
				t.Fatalf("claim: %v, %v", res, err)
			}
			held[res.Job.ID] = true
		}
	}
	sup := desk.Person(users.User{Name: "sam", Role: users.Supervisor})

	first, err := d.LiveReservations(ctx, sup, "")
	if err != nil {
		t.Fatal(err)
	}
	if firstReads != 1 || len(first.Jobs) != desk.ReservationsPage || first.NextCursor == "" {
		t.Fatalf("first page: %d jobs, next %q, %d reads through FirstReservations; want %d, a next page, 1",
			len(first.Jobs), first.NextCursor, firstReads, desk.ReservationsPage)
	}
	rest, err := d.LiveReservations(ctx, sup, first.NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	if firstReads != 1 || len(rest.Jobs) != len(held)-desk.ReservationsPage || rest.NextCursor != "" {
		t.Errorf("next page: %d jobs, next %q, %d reads through FirstReservations; want %d, the end, still 1",
			len(rest.Jobs), rest.NextCursor, firstReads, len(held)-desk.ReservationsPage)
	}
	all := append(first.Jobs, rest.Jobs...)
	for i, j := range all {
		if !held[j.ID] || j.State != tasks.StateReserved || len(j.Payload) != 0 {
			t.Errorf("listed %s (%s, payload %s): want one of the held jobs, without its payload", j.ID, j.State, j.Payload)
		}
		if i > 0 && j.Deadline.Before(*all[i-1].Deadline) {
			t.Errorf("%s's deadline comes before the one listed above it", j.ID)
		}
		delete(held, j.ID)
	}
	if len(held) > 0 {
		t.Errorf("not listed: %v", held)
	}
}

func TestQueueReads(t *testing.T) {
	f := newFixture(t)
	f.enqueue("one")
	f.enqueue("two")
	sup := desk.Person(f.super)
	if q, err := f.desk.Queue(f.ctx, sup, f.queue); err != nil || q.Name != f.queue || q.LeaseSeconds != 300 {
		t.Errorf("queue: %+v, %v; want %s with its default lease", q, err, f.queue)
	}
	if st, err := f.desk.Stats(f.ctx, sup, f.queue); err != nil || st.Ready != 2 {
		t.Errorf("stats: %+v, %v; want 2 ready", st, err)
	}
	if err := f.tasks.SampleNumbers(f.ctx, f.queue); err != nil {
		t.Fatal(err)
	}
	if ms, err := f.desk.Numbers(f.ctx, sup, f.queue); err != nil || len(ms) != 1 || ms[0].Ready != 2 {
		t.Errorf("numbers: %+v, %v; want the minute sampled, with 2 ready", ms, err)
	}
	if names, err := f.desk.QueueNames(f.ctx, sup); err != nil || !slices.Contains(names, f.queue) {
		t.Errorf("queue names: %v, %v; want %s among them", names, err, f.queue)
	}
	_, err := f.desk.Queue(f.ctx, sup, "no-such-queue")
	refused(t, "a queue that does not exist", err, tasks.ErrQueueNotFound)
	_, err = f.desk.Numbers(f.ctx, sup, "no-such-queue")
	refused(t, "the numbers of a queue that does not exist", err, tasks.ErrQueueNotFound)
}

func TestBatchesListsEveryQueuesNewest(t *testing.T) {
	f := newFixture(t)
	b, _, err := f.desk.CreateBatch(f.ctx, desk.Person(f.producer), f.queue, tasks.NewBatch{Title: "listed", Jobs: []tasks.NewJob{{Title: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := f.desk.Batches(f.ctx, desk.Person(f.super), tasks.MaxPageSize)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(bs, func(x *tasks.Batch) bool { return x.ID == b.ID })
	if i < 0 || bs[i].Title != "listed" || bs[i].Queue != f.queue {
		t.Errorf("batch %s not listed as made: %v", b.ID, bs)
	}
}

func TestPeopleReads(t *testing.T) {
	f := newFixture(t)
	for _, u := range []users.User{f.super, f.producer, f.op} {
		f.store(u)
	}
	sup := desk.Person(f.super)
	everyone, err := f.desk.People(f.ctx, sup)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []users.User{f.super, f.producer, f.op} {
		i := slices.IndexFunc(everyone, func(x users.User) bool { return x.Name == u.Name })
		if i < 0 || everyone[i].Role != u.Role || !slices.Equal(everyone[i].Queues, u.Queues) {
			t.Errorf("%s not listed as made: %+v", u.Name, everyone)
		}
	}
	if _, err := f.desk.Disable(f.ctx, sup, f.op.Name); err != nil {
		t.Fatal(err)
	}
	// Read from the store, not an instance's cache: as changed.
	if u, err := f.desk.PersonNamed(f.ctx, sup, f.op.Name); err != nil || u.Name != f.op.Name || !u.Disabled || !slices.Equal(u.Queues, f.op.Queues) {
		t.Errorf("person: %+v, %v; want %s, disabled, granted %v", u, err, f.op.Name, f.op.Queues)
	}
	_, err = f.desk.PersonNamed(f.ctx, sup, "nobody-of-that-name")
	refused(t, "a person who does not exist", err, users.ErrNotFound)
}

func TestAuditLogPagesNewestFirst(t *testing.T) {
	f := newFixture(t)
	f.store(f.op)
	sup := desk.Person(f.super)
	if err := f.desk.Unlock(f.ctx, sup, f.op.Name); err != nil {
		t.Fatal(err)
	}
	entries, _, err := f.desk.AuditLog(f.ctx, sup, "", 1000, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(entries, func(e audit.Entry) bool {
		return e.Target == f.op.Name && e.Action == audit.UserUnlocked && e.Actor == f.super.Name
	}) {
		t.Errorf("the unlock of %s is not in the audit log", f.op.Name)
	}
	newest, next, err := f.desk.AuditLog(f.ctx, sup, "", 1, audit.Filter{})
	if err != nil || len(newest) != 1 || next == "" {
		t.Fatalf("the newest entry: %v, next %q, %v", newest, next, err)
	}
	older, _, err := f.desk.AuditLog(f.ctx, sup, next, 1, audit.Filter{})
	if err != nil || len(older) != 1 || older[0].ID == newest[0].ID || older[0].At.After(newest[0].At) {
		t.Errorf("the entry after the newest: %v, %v; want one older than %v", older, err, newest[0])
	}
	_, _, err = f.desk.AuditLog(f.ctx, sup, "not-a-cursor", 1, audit.Filter{})
	refused(t, "a cursor the log did not give", err, audit.ErrBadCursor)
}

func TestMyWorkIsTheActorsOwn(t *testing.T) {
	f := newFixture(t)
	f.store(f.op)
	done := f.enqueue("done")
	r := f.claim(f.op)
	if _, err := f.desk.Complete(f.ctx, desk.Person(f.op), done.ID, r.Token, nil); err != nil {
		t.Fatal(err)
	}
	f.enqueue("held")
	held := f.claim(f.op)
	// The queue taken from them: what they hold is still theirs to finish.
	noGrants := []string{}
	op, err := f.desk.ChangePerson(f.ctx, desk.Person(f.super), f.op.Name, desk.Change{Queues: &noGrants})
	if err != nil {
		t.Fatal(err)
	}

	w, err := f.desk.MyWork(f.ctx, desk.Person(op))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Queues) != 0 {
		t.Errorf("queues of an operator granted none: %v", w.Queues)
	}
	if got := ids(w.Holding); !slices.Equal(got, []string{held.Job.ID}) {
		t.Errorf("holding: %v, want [%s]", got, held.Job.ID)
	}
	if len(w.Recent) != 1 || w.Recent[0].JobID != done.ID || w.Recent[0].Action != tasks.ActionCompleted {
		t.Errorf("recent work: %+v, want %s completed", w.Recent, done.ID)
	}

	w, err = f.desk.MyWork(f.ctx, desk.Person(f.producer))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Queues) != 1 || w.Queues[0].Queue.Name != f.queue || len(w.Holding) != 0 || len(w.Recent) != 0 {
		t.Errorf("a producer's own work: %+v; want their queue alone, nothing held or ended", w)
	}
	_, err = f.desk.MyWork(f.ctx, desk.CommandLine)
	refused(t, "the command line's own work", err, desk.ErrForbidden)
}

func TestTeamSaysWhereEveryoneIsAndWhatTheyDid(t *testing.T) {
	f := newFixture(t)
	f.store(f.op)
	sup := desk.Person(f.super)
	// f.op holds two jobs and completed one; idle has a page open and has
	// done nothing; away said so; disabled and closed have no page open
	// (closed) or may not work (disabled).
	for range 3 {
		f.enqueue("job")
	}
	r := f.claim(f.op)
	if _, err := f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, nil); err != nil {
		t.Fatal(err)
	}
	f.claim(f.op)
	f.claim(f.op)
	idle, away, disabled, closed := f.person(users.Operator, f.queue), f.person(users.Operator, f.queue),
		f.person(users.Operator, f.queue), f.person(users.Operator, f.queue)
	for _, u := range []users.User{idle, away, disabled, closed} {
		f.store(u)
	}
	if err := f.desk.SetAway(f.ctx, desk.Person(away), true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.desk.Disable(f.ctx, sup, disabled.Name); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := notify.NewPresence(rdb, log).Mark(f.ctx, f.op.Name, idle.Name, away.Name, disabled.Name); err != nil {
		t.Fatal(err)
	}

	team, work, err := f.desk.Team(f.ctx, sup, true, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name   string
		status desk.Status
		holds  int
	}{
		{f.op.Name, desk.Online, 2}, {idle.Name, desk.Idle, 0}, {away.Name, desk.Away, 0}, {closed.Name, desk.Offline, 0},
	}
	last := -1
	for _, w := range want {
		i := slices.IndexFunc(team.Members, func(m desk.Member) bool { return m.User.Name == w.name })
		if i < 0 {
			t.Errorf("%s is not on the team", w.name)
			continue
		}
		m := team.Members[i]
		if m.Status != w.status || len(m.Held) != w.holds || i < last {
			t.Errorf("%s: %s holding %d at %d; want %s holding %d, listed after %d", w.name, m.Status, len(m.Held), i, w.status, w.holds, last)
		}
		last = i
	}
	// The team is the operators who may work (the store is shared with
	// other tests: theirs too): no producers, no supervisors, nobody
	// disabled.
	for _, m := range team.Members {
		if m.User.Role != users.Operator || m.User.Disabled {
			t.Errorf("%s (%s, disabled %v) is on the team", m.User.Name, m.User.Role, m.User.Disabled)
		}
		if m.User.Name == f.op.Name && len(m.Held) == 2 {
			if m.LastAction.IsZero() || m.Held[0].ReservedAt.After(*m.Held[1].ReservedAt) {
				t.Errorf("%s: last action %v, held %v; want a last action, longest held first", m.User.Name, m.LastAction, ids(m.Held))
			}
		}
	}

	completed := func(name string) (int, int64, int64) {
		i := slices.IndexFunc(work.Workers, func(w desk.Worker) bool { return w.User.Name == name })
		if i < 0 {
			return i, 0, 0
		}
		return i, work.Workers[i].Tally.Today.Completed, work.Workers[i].Tally.Window.Completed
	}
	i, today, week := completed(f.op.Name)
	j, idleToday, _ := completed(idle.Name)
	if i < 0 || today != 1 || week != 1 || j < 0 || idleToday != 0 || j < i {
		t.Errorf("numbers: %s at %d completed %d today, %d this week; %s at %d, %d today; want 1, 1, and 0 listed after",
			f.op.Name, i, today, week, idle.Name, j, idleToday)
	}
	for _, u := range []users.User{f.producer, f.super, disabled} {
		if k, _, _ := completed(u.Name); k >= 0 {
			t.Errorf("%s (%s) has numbers on the team", u.Name, u.Role)
		}
	}

	team, work, err = f.desk.Team(f.ctx, sup, false, true)
	if err != nil || team.Members != nil || work.Workers == nil {
		t.Errorf("the numbers alone: %d members, %d workers, %v", len(team.Members), len(work.Workers), err)
	}
	team, work, err = f.desk.Team(f.ctx, sup, true, false)
	if err != nil || team.Members == nil || work.Workers != nil {
		t.Errorf("where everyone is alone: %d members, %d workers, %v", len(team.Members), len(work.Workers), err)
	}
}

// A listing of finished jobs runs newest first when asked, and keeps
// those that finished in a time range.
func TestJobsNewestFirstAndBetween(t *testing.T) {
	f := newFixture(t)
	var done []string
	var at []time.Time
	for _, title := range []string{"early", "late"} {
		r := f.held(title)
		if _, err := f.desk.Complete(f.ctx, desk.Person(f.op), r.Job.ID, r.Token, nil); err != nil {
			t.Fatal(err)
		}
		done, at = append(done, r.Job.ID), append(at, f.now())
		f.tick(time.Hour)
	}
	sup := desk.Person(f.super)
	for _, c := range []struct {
		name string
		l    desk.Listing
		want []string
	}{
		{"oldest first", desk.Listing{}, done},
		{"newest first", desk.Listing{Descending: true}, []string{done[1], done[0]}},
		{"since the late one", desk.Listing{Since: at[1]}, done[1:]},
		{"until the early one", desk.Listing{Until: at[0]}, done[:1]},
	} {
		c.l.Queue, c.l.State = f.queue, tasks.StateCompleted
		p, _, err := f.desk.Jobs(f.ctx, sup, c.l)
		if got := ids(p.Jobs); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	_, _, err := f.desk.Jobs(f.ctx, sup, desk.Listing{Queue: f.queue, State: tasks.StateReady, Since: at[0]})
	refused(t, "a time range of ready jobs", err, tasks.ErrInvalid)
}
