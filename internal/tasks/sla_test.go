package tasks

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// watchDue runs WatchDue on the env's queue until nothing more came, and
// returns the transitions it made.
func (e *env) watchDue() []Transition {
	e.t.Helper()
	return e.did(func(t Transition) bool { return t.Action == ActionAtRisk || t.Action == ActionBreached }, func() {
		for {
			_, more, err := e.store.WatchDue(e.ctx, e.queue, 2)
			if err != nil {
				e.t.Fatalf("WatchDue: %v", err)
			}
			if !more {
				return
			}
		}
	})
}

// slaOf returns the job's due time, as an offset from now, and its SLA.
func (e *env) slaOf(id string) (time.Duration, SLA) {
	e.t.Helper()
	j := e.get(id)
	if j.DueAt == nil {
		return 0, j.SLA
	}
	return j.DueAt.Sub(e.clock.Now()), j.SLA
}

// A job is due when it says, or the queue's SLA after its enqueue; at its
// warn point it is at risk, at its due time breached, each once, seen in
// its history, its SLA and the queue's counts; a finished job leaves the
// counts.
func TestDueTimes(t *testing.T) {
	onEachBackend(t, func(e *env) {
		q := e.newQueue(Queue{SLASeconds: 3600})
		at := e.clock.Now().Add(30 * time.Minute)
		byQueue := e.addJob(q, NewJob{Title: "by the queue"})
		own := e.addJob(q, NewJob{Title: "own", DueInSeconds: 600})
		given := e.addJob(q, NewJob{Title: "given", DueAt: &at})
		none := e.add("none", 50) // the env's queue has no SLA
		e.queue = q
		for _, c := range []struct {
			id  string
			due time.Duration
		}{{byQueue.ID, time.Hour}, {own.ID, 10 * time.Minute}, {given.ID, 30 * time.Minute}} {
			if due, sla := e.slaOf(c.id); due != c.due || sla != SLAOnTime {
				t.Errorf("job %s: due in %v, %q; want %v, on_time", c.id, due, sla, c.due)
			}
		}
		if j := e.get(none.ID); j.DueAt != nil || j.SLA != "" {
			t.Errorf("a job without a due time has %v, %q", j.DueAt, j.SLA)
		}
		wantCounts := func(risk, breached int64) {
			t.Helper()
			if st := e.stats(); st.AtRisk != risk || st.Breached != breached {
				t.Fatalf("at risk %d, breached %d; want %d, %d", st.AtRisk, st.Breached, risk, breached)
			}
		}
		wantMoments := func(want ...string) {
			t.Helper()
			var got []string
			for _, tr := range e.watchDue() {
				if tr.From != tr.To || tr.Actor != System {
					t.Errorf("%s of %s: %s → %s by %s", tr.Action, tr.JobID, tr.From, tr.To, tr.Actor)
				}
				got = append(got, string(tr.Action)+" "+tr.JobID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("WatchDue made %q, want %q", got, want)
			}
		}
		wantMoments()
		// own is at risk after 8 of its 10 minutes (warn fraction 0.8).
		e.clock.Advance(8*time.Minute - time.Millisecond)
		wantMoments()
		e.clock.Advance(time.Millisecond)
		wantMoments("at_risk " + own.ID)
		wantCounts(1, 0)
		if _, sla := e.slaOf(own.ID); sla != SLAAtRisk {
			t.Fatalf("own is %q, want at_risk", sla)
		}
		wantMoments()
		e.clock.Advance(2 * time.Minute)
		wantMoments("breached " + own.ID)
		wantCounts(0, 1)
		// given's warn point (24 minutes) and due time (30) both came.
		e.clock.Advance(20 * time.Minute)
		wantMoments("at_risk "+given.ID, "breached "+given.ID)
		wantCounts(0, 2)
		var actions []Action
		h, _, err := e.get(given.ID).History()
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range h {
			actions = append(actions, en.Action)
		}
		if want := []Action{ActionEnqueued, ActionAtRisk, ActionBreached}; !slices.Equal(actions, want) {
			t.Fatalf("history %q, want %q", actions, want)
		}
		if _, _, err := e.store.Cancel(e.ctx, given.ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		wantCounts(0, 1)
		if _, sla := e.slaOf(given.ID); sla != SLABreached {
			t.Fatalf("canceled after its due time: %q, want breached", sla)
		}
		e.clock.Advance(18 * time.Minute)
		wantMoments("at_risk " + byQueue.ID)
		wantCounts(1, 1)
		// Listed by where they stand, from this queue and from all.
		for _, c := range []struct {
			sla  SLA
			want string
		}{{SLAAtRisk, byQueue.ID}, {SLABreached, own.ID}} {
			for _, queue := range []string{q, ""} {
				// Every page: other tests' queues have theirs.
				var ids []string
				var err error
				for cursor, more := "", true; more && err == nil; {
					var p Page
					p, err = e.store.ListJobs(e.ctx, queue, "", 100, cursor, Standing(c.sla))
					for _, j := range p.Jobs {
						if j.Queue == q {
							ids = append(ids, j.ID)
						}
					}
					cursor, more = p.NextCursor, p.NextCursor != ""
				}
				if err != nil || !slices.Equal(ids, []string{c.want}) {
					t.Fatalf("ListJobs(%q, %s) = %q, %v; want %s", queue, c.sla, ids, err, c.want)
				}
			}
		}
		for _, bad := range []struct {
			state State
			opts  []ListOption
		}{
			{StateReady, []ListOption{Standing(SLAAtRisk)}},
			{"", []ListOption{Standing(SLAOnTime)}},
			{"", []ListOption{Standing(SLABreached), Finished(e.clock.Now(), time.Time{})}},
		} {
			if _, err := e.store.ListJobs(e.ctx, q, bad.state, 10, "", bad.opts...); !errors.Is(err, ErrInvalid) {
				t.Fatalf("ListJobs(%q, %d options) = %v, want ErrInvalid", bad.state, len(bad.opts), err)
			}
		}
		for _, k := range []string{keysFor(q).SLA(), keysFor(q).Late(), keysFor(q).ReadyDue()} {
			if n, err := e.rdb.ZScore(e.ctx, k, localID(given.ID)).Result(); err == nil {
				t.Fatalf("the canceled job stays in %s at %v", k, n)
			}
		}
	})
}

// Due times are checked as they are given.
func TestDueTimesRefused(t *testing.T) {
	onEachBackend(t, func(e *env) {
		now := e.clock.Now()
		far, past := now.AddDate(1, 0, 1), now.AddDate(-1, 0, -1)
		for _, c := range []struct {
			job   NewJob
			field string
		}{
			{NewJob{Title: "both", DueAt: &now, DueInSeconds: 60}, "due_at"},
			{NewJob{Title: "far", DueAt: &far}, "due_at"},
			{NewJob{Title: "past", DueAt: &past}, "due_at"},
			{NewJob{Title: "negative", DueInSeconds: -1}, "due_in_seconds"},
			{NewJob{Title: "long", DueInSeconds: 365*day + 1}, "due_in_seconds"},
		} {
			_, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{c.job})
			if v, ok := err.(*ValidationError); !ok || v.Field != c.field {
				t.Errorf("%s: %v, want a ValidationError of %s", c.job.Title, err, c.field)
			}
		}
		for _, q := range []Queue{{SLASeconds: -1}, {SLASeconds: 365*day + 1}, {WarnFraction: 1.5},
			{WarnFraction: 0.001}, {Order: "fifo"}, {BreachPriority: 101}} {
			q.Name = "refused"
			if _, err := e.store.PutQueue(e.ctx, q); err == nil {
				t.Errorf("PutQueue(%+v) took it", q)
			}
		}
		if st := e.stats(); st.Ready != 0 {
			t.Fatalf("%d jobs made", st.Ready)
		}
	})
}

// A job made due in the past is at risk and breached at the next look, as
// is one of a queue whose warn fraction is 1 at its due time.
func TestDueTimeAlreadyPassed(t *testing.T) {
	onEachBackend(t, func(e *env) {
		past := e.clock.Now().Add(-time.Minute)
		late := e.addJob(e.queue, NewJob{Title: "late", DueAt: &past})
		if _, sla := e.slaOf(late.ID); sla != SLABreached {
			t.Fatalf("a job due a minute ago is %q", sla)
		}
		wantBoth := func(id string) {
			t.Helper()
			ts := e.watchDue()
			if len(ts) != 2 || ts[0].Action != ActionAtRisk || ts[1].Action != ActionBreached || ts[1].JobID != id {
				t.Fatalf("WatchDue made %+v, want %s at risk and breached", ts, id)
			}
		}
		wantBoth(late.ID)
		if st := e.stats(); st.AtRisk != 0 || st.Breached != 1 {
			t.Fatalf("at risk %d, breached %d", st.AtRisk, st.Breached)
		}
		e.queue = e.newQueue(Queue{WarnFraction: 1})
		j := e.addJob(e.queue, NewJob{Title: "warned late", DueInSeconds: 60})
		e.clock.Advance(time.Minute - time.Millisecond)
		if ts := e.watchDue(); len(ts) != 0 {
			t.Fatalf("before its due time WatchDue made %+v", ts)
		}
		e.clock.Advance(time.Millisecond)
		wantBoth(j.ID)
	})
}

// A breach raises the job's priority to the queue's breach_priority, if
// that is higher, keeping its age: it goes before jobs of lower priority,
// held by its batch or not; a job of higher priority keeps its own.
func TestBreachRaisesPriority(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{BreachPriority: 90, AgingSeconds: 60})
		high := e.addJob(e.queue, NewJob{Title: "high", Priority: new(95), DueInSeconds: 60})
		e.add("older", 80)
		low := e.addJob(e.queue, NewJob{Title: "low", Priority: new(10), DueInSeconds: 60})
		_, held := e.createBatch(NewBatch{Title: "capped", MaxConcurrent: new(1), Jobs: []NewJob{
			{Title: "first"}, {Title: "held", Priority: new(10), DueInSeconds: 60}}})
		e.clock.Advance(time.Minute)
		e.watchDue()
		for id, want := range map[string]int{high.ID: 95, low.ID: 90, held[1].ID: 90} {
			if p := e.get(id).Priority; p != want {
				t.Errorf("%s: priority %d, want %d", e.get(id).Title, p, want)
			}
		}
		var order []string
		for range 4 {
			r := e.claim("ann")
			order = append(order, r.Job.Title)
			if r.Job.Title == "first" {
				e.complete(r) // frees the batch's slot for held
			}
		}
		// first has priority 50; held has 90 once its slot is free.
		if want := []string{"high", "low", "older", "first"}; !slices.Equal(order, want) {
			t.Fatalf("claimed %q, want %q", order, want)
		}
		if r := e.claim("ann"); r.Job.Title != "held" {
			t.Fatalf("then %q, want held", r.Job.Title)
		}
	})
}

// A queue of order "due" claims its jobs with a due time first, earliest
// first, then the others by rank; skips and batches hold as ever; a queue
// of order "rank" keeps to rank. ClaimAny puts such a queue's due job
// before other queues' jobs.
func TestEarliestDueFirst(t *testing.T) {
	onEachBackend(t, func(e *env) {
		rank := e.queue
		e.queue = e.newQueue(Queue{Order: OrderDue})
		due := e.queue
		for _, q := range []string{rank, due} {
			e.addJob(q, NewJob{Title: "urgent, no due time", Priority: new(99)})
			e.addJob(q, NewJob{Title: "due in 2h", Priority: new(10), DueInSeconds: 7200})
			e.addJob(q, NewJob{Title: "due in 1h", Priority: new(5), DueInSeconds: 3600})
			e.addJob(q, NewJob{Title: "due in 3h", Priority: new(90), DueInSeconds: 3 * 3600})
		}
		r := e.claim("ann")
		if r.Job.Title != "due in 1h" {
			t.Fatalf("first claim %q", r.Job.Title)
		}
		if _, err := e.store.Skip(e.ctx, r.Job.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		var order []string
		for range 3 {
			order = append(order, e.claim("ann").Job.Title)
		}
		if want := []string{"due in 2h", "due in 3h", "urgent, no due time"}; !slices.Equal(order, want) {
			t.Fatalf("order due claimed %q, want %q", order, want)
		}
		if r := e.claim("bob"); r.Job.Title != "due in 1h" {
			t.Fatalf("bob claimed %q, want the job ann skipped", r.Job.Title)
		}
		e.queue = rank
		if r := e.claim("ann"); r.Job.Title != "urgent, no due time" {
			t.Fatalf("order rank claimed %q first", r.Job.Title)
		}
		// ClaimAny: the rank queue's next (priority 90) against nothing
		// left in the due queue; then a due job there goes first.
		e.addJob(due, NewJob{Title: "due later", Priority: new(1), DueInSeconds: 9000})
		r, err := e.store.ClaimAny(e.ctx, []string{rank, due}, "cy")
		if err != nil || r == nil || r.Job.Title != "due later" {
			t.Fatalf("ClaimAny = %+v, %v; want the due queue's due job", r, err)
		}
	})
}

// A completion of a job with a due time counts in its holder's tally as
// on time or late; a dead job put back in line is watched again as it
// stands, making no moment it missed.
func TestAttainmentAndRequeue(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{MaxAttempts: 1, LeaseSeconds: 3600})
		for _, title := range []string{"quick", "slow"} {
			e.addJob(e.queue, NewJob{Title: title, DueInSeconds: 600})
		}
		e.addJob(e.queue, NewJob{Title: "no due time"})
		e.complete(e.claim("ann"))
		r := e.claim("ann")
		e.clock.Advance(11 * time.Minute)
		e.complete(r)
		e.complete(e.claim("ann"))
		tallies, err := e.store.Tallies(e.ctx, []string{e.queue})
		if err != nil {
			t.Fatal(err)
		}
		today := tallies["ann"].Today
		if today.Completed != 3 || today.Due != 2 || today.OnTime != 1 {
			t.Fatalf("tally %+v, want 3 completed, 2 due, 1 on time", today)
		}
		if a, ok := today.Attainment(); !ok || a != 0.5 {
			t.Fatalf("attainment %v, %v", a, ok)
		}
		st := e.stats()
		if a, ok := st.Attainment(); !ok || a != 0.5 || st.DueCompletedToday != 2 {
			t.Fatalf("the queue's attainment %v, %v of %d", a, ok, st.DueCompletedToday)
		}
		e.clock.Advance(24 * time.Hour)
		if st := e.stats(); st.DueCompletedToday != 0 || st.OnTimeToday != 0 {
			t.Fatalf("the next day the queue's counts %+v", st)
		}
		e.clock.Advance(-24 * time.Hour)

		j := e.addJob(e.queue, NewJob{Title: "dies", DueInSeconds: 600})
		r = e.claim("bob")
		if _, err := e.store.Fail(e.ctx, j.ID, r.Hold(), "no"); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(9 * time.Minute)
		if ts := e.watchDue(); len(ts) != 0 {
			t.Fatalf("a dead job made %+v", ts)
		}
		if _, _, err := e.store.Requeue(e.ctx, j.ID, "sam"); err != nil {
			t.Fatal(err)
		}
		if st := e.stats(); st.AtRisk != 1 {
			t.Fatalf("requeued past its warn point: at risk %d, want 1", st.AtRisk)
		}
		e.clock.Advance(time.Minute)
		if ts := e.watchDue(); len(ts) != 1 || ts[0].Action != ActionBreached {
			t.Fatalf("WatchDue made %+v, want the breach alone", ts)
		}
	})
}

// With a webhook listening, a breach is the event job.sla_breached, with
// the job as it stands.
func TestBreachEvent(t *testing.T) {
	onEachBackend(t, func(e *env) {
		if err := e.store.SetOutbox(e.ctx, e.queue, true); err != nil {
			t.Fatal(err)
		}
		j := e.addJob(e.queue, NewJob{Title: "late", DueInSeconds: 60})
		e.clock.Advance(time.Minute)
		e.watchDue()
		events := e.readAll("one", time.Minute)
		if len(events) != 1 || events[0].Type != EventJobSLABreached || events[0].Job.ID != j.ID ||
			events[0].Job.SLA != SLABreached || events[0].Job.State != StateReady {
			t.Fatalf("events %+v, want one job.sla_breached of the ready job", events)
		}
	})
}

// A retry of a holder's last action after a due time's moment came is
// answered as the action was: the moment is no one's action. So is a
// retried extension.
func TestRetryAfterDueMoments(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{LeaseSeconds: 600, MaxExtensions: 1})
		j := e.addJob(e.queue, NewJob{Title: "promised", DueInSeconds: 600})
		r := e.claim("ann")
		if got, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 1200, WithExtendKey("more-1")); err != nil || got.Extensions != 1 {
			t.Fatalf("Extend = %+v, %v", got, err)
		}
		e.clock.Advance(9 * time.Minute)
		if ts := e.watchDue(); len(ts) != 1 || ts[0].Action != ActionAtRisk {
			t.Fatalf("WatchDue made %+v, want the reservation at risk", ts)
		}
		// The extension again (its answer lost): answered, no second one
		// spent (there is none left).
		if got, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 1200, WithExtendKey("more-1")); err != nil || got.Extensions != 1 {
			t.Fatalf("the extension again after the job came at risk: %+v, %v", got, err)
		}
		if _, err := e.store.Release(e.ctx, j.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Minute)
		if ts := e.watchDue(); len(ts) != 1 || ts[0].Action != ActionBreached {
			t.Fatalf("WatchDue made %+v, want the breach", ts)
		}
		if got, err := e.store.Release(e.ctx, j.ID, r.Hold()); err != nil || got.State != StateReady {
			t.Fatalf("the give-back again after the breach: %+v, %v; want it answered as done", got, err)
		}
	})
}

// A moment filed for no job (or a finished one), which no change makes,
// is dropped by the cron job's look rather than failing it every tick.
func TestStrayMomentDropped(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("done", 50)
		e.complete(e.claim("ann"))
		k := keysFor(e.queue).SLA()
		for _, id := range []string{"01NOSUCHJOB0000000000000000", localID(j.ID)} {
			if err := e.rdb.ZAdd(e.ctx, k, redis.Z{Score: 1, Member: id}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if ts := e.watchDue(); len(ts) != 0 {
			t.Fatalf("WatchDue made %+v of stray moments", ts)
		}
		if n, err := e.rdb.ZCard(e.ctx, k).Result(); err != nil || n != 0 {
			t.Fatalf("%d stray moments left, %v", n, err)
		}
	})
}

// moveBreached runs MoveBreached on the env's queue until none are left
// moving, and returns the transitions it made.
func (e *env) moveBreached() []Transition {
	e.t.Helper()
	return e.during(ActionMoved, func() {
		for {
			_, more, err := e.store.MoveBreached(e.ctx, e.queue, 2)
			if err != nil {
				e.t.Fatalf("MoveBreached: %v", err)
			}
			if !more {
				return
			}
		}
	})
}

// A queue with a breach queue moves each job that misses its due time
// while it waits there: same ULID, history, attempts, due time and
// idempotency key, raised as the policy says, in line there by age. A held
// job stays with its holder. Until the move is done the job is in neither
// line and cannot be canceled; after it, its old id leads to the new.
func TestBreachMovesJob(t *testing.T) {
	onEachBackend(t, func(e *env) {
		leads := e.newQueue(Queue{})
		e.queue = e.newQueue(Queue{BreachQueue: leads, BreachPriority: 80, MaxAttempts: 3})
		from := e.queue
		first := e.addJob(from, NewJob{Title: "waiting", DueInSeconds: 60, IdempotencyKey: "k1"})
		r := e.claim("ann")
		if _, err := e.store.Fail(e.ctx, first.ID, r.Hold(), "no access"); err != nil {
			t.Fatal(err)
		}
		held := e.addJob(from, NewJob{Title: "held", DueInSeconds: 60})
		e.claim("ann")
		later := e.addJob(from, NewJob{Title: "scheduled", DueInSeconds: 60, RunAt: new(e.clock.Now().Add(time.Hour))})
		b, batched := e.createBatch(NewBatch{Title: "b", Jobs: []NewJob{{Title: "batched", DueInSeconds: 60}}})
		batchID := b.ID
		e.clock.Advance(time.Minute)
		e.watchDue()
		// Taken out of the line, not yet moved: no claim, no cancel.
		if s := e.stats(); s.Ready != 0 || s.Scheduled != 0 {
			t.Fatalf("while moving: %+v, want none waiting", s)
		}
		if _, _, err := e.store.Cancel(e.ctx, first.ID, "sam", false); !errors.Is(err, ErrInvalidState) {
			t.Fatalf("cancel while moving: %v", err)
		}
		// Nor does its batch's cancel reach it: it runs on there.
		if _, canceled, err := e.cancelBatch(batchID); err != nil || len(canceled) != 0 {
			t.Fatalf("batch cancel while its job moves: canceled %v, %v", canceled, err)
		}
		ts := e.moveBreached()
		if len(ts) != 6 {
			t.Fatalf("moves made %+v, want three out and three in", ts)
		}
		for _, tr := range ts {
			if out := tr.Queue == from; tr.Action != ActionMoved || out && tr.To != "" || !out && (tr.Queue != leads || tr.From != "") {
				t.Fatalf("move transition %+v", tr)
			}
		}
		for _, old := range []*Job{first, later} {
			if _, err := e.store.Get(e.ctx, old.ID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("old id of %s: %v", old.Title, err)
			}
			id, ok, err := e.store.MovedTo(e.ctx, old.ID)
			if err != nil || !ok || id != localID(old.ID)+"."+leads {
				t.Fatalf("MovedTo(%s) = %q, %v, %v", old.ID, id, ok, err)
			}
			j := e.get(id)
			hist, _, err := j.History()
			if err != nil || len(hist) < 3 {
				t.Fatalf("history %+v, %v", hist, err)
			}
			h := hist[len(hist)-1]
			if j.Title != old.Title || !j.DueAt.Equal(*old.DueAt) || j.SLA != SLABreached || j.Priority != 80 ||
				h.Action != ActionMoved || h.Reason != from || hist[0].Action != ActionEnqueued {
				t.Fatalf("moved %+v, history %+v", j, hist)
			}
		}
		// Its attempt spent there, but not ann's mark on it: that was the
		// first queue's.
		if j := e.get(localID(first.ID) + "." + leads); j.State != StateReady || j.Attempts != 1 || j.LastError != "no access" || len(j.SkippedBy) != 0 {
			t.Fatalf("moved job %+v: want ready with its attempt spent, skipped by nobody", j)
		}
		if e.get(held.ID).State != StateReserved {
			t.Fatal("the held job moved")
		}
		if _, err := e.store.Get(e.ctx, batched[0].ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the batch's job stayed: %v", err)
		}
		if got := e.checkBatch(batchID); got.State != BatchCanceled || got.Moved != 1 || got.Ended() {
			t.Fatalf("the canceled batch, its job moved: %+v", got)
		}
		if n, err := e.rdb.HLen(e.ctx, keysFor(from).Moving()).Result(); err != nil || n != 0 {
			t.Fatalf("%d left moving, %v", n, err)
		}
		// The producer's retry finds it where it went.
		again, err := e.store.Enqueue(e.ctx, from, "producer", []NewJob{{Title: "waiting", IdempotencyKey: "k1"}})
		if err != nil || again[0].Created || again[0].Job.ID != localID(first.ID)+"."+leads {
			t.Fatalf("enqueue again = %+v, %v", again, err)
		}
		e.queue = leads
		if r := e.claim("bob"); r.Job.Title != "waiting" || r.Job.Attempts != 1 {
			t.Fatalf("the breach queue gave %+v", r.Job)
		}
		if s := e.stats(); s.Breached != 3 {
			t.Fatalf("breach queue %+v, want the three moved jobs breached", s)
		}
	})
}

// A move cut short after the job was made in the breach queue (a crash)
// is ended by the next run, which finds it made: one job, moved once. A
// job whose breach queue is gone goes back in line.
func TestMoveResumes(t *testing.T) {
	onEachBackend(t, func(e *env) {
		leads := e.newQueue(Queue{})
		gone := e.newQueue(Queue{})
		e.queue = e.newQueue(Queue{BreachQueue: leads})
		from := e.queue
		j := e.addJob(from, NewJob{Title: "late", DueInSeconds: 60})
		e.clock.Advance(time.Minute)
		e.watchDue()
		k := keysFor(from)
		meta := e.rdb.HGet(e.ctx, k.Meta(), localID(j.ID)).Val()
		payload := e.rdb.HGet(e.ctx, k.Payload(), localID(j.ID)).Val()
		r, err := e.store.run(e.ctx, moveInScript, leads, e.store.nowArg(), localID(j.ID), meta, payload, "", from, strictStepMs, "", "", "")
		if err != nil || !r.flag("made") || r.done() != nil {
			t.Fatalf("move_in: %v", err)
		}
		if ts := e.moveBreached(); len(ts) != 1 || ts[0].Queue != from {
			t.Fatalf("the resumed move made %+v, want only the move out", ts)
		}
		e.queue = leads
		if s := e.stats(); s.Ready != 1 {
			t.Fatalf("breach queue %+v, want the one job", s)
		}
		// Its breach queue deleted: it stays.
		e.queue = e.newQueue(Queue{BreachQueue: gone})
		stays := e.addJob(e.queue, NewJob{Title: "stays", DueInSeconds: 60})
		if err := e.store.DeleteQueue(e.ctx, gone); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		e.watchDue()
		if ts := e.moveBreached(); len(ts) != 0 {
			t.Fatalf("moved to a deleted queue: %+v", ts)
		}
		if r := e.claim("ann"); r.Job.ID != stays.ID {
			t.Fatalf("claimed %+v, want the job back in line", r.Job)
		}
	})
}

// A job of a batch that moves stays its batch's: the job names it, the
// batch counts it as moved, and learns from the cron job how it ends in
// the breach queue (or is requeued there after it died), and ends when
// its last job does. A slot of a capped batch comes free when its job
// leaves. Told twice, the batch counts once.
func TestMovedJobKeepsItsBatch(t *testing.T) {
	onEachBackend(t, func(e *env) {
		leads := e.newQueue(Queue{})
		e.queue = e.newQueue(Queue{BreachQueue: leads, MaxAttempts: 1})
		from := e.queue
		nb := NewBatch{Title: "b", MaxConcurrent: new(1), Jobs: []NewJob{
			{Title: "stays", IdempotencyKey: "k0"}, {Title: "late", DueInSeconds: 60, IdempotencyKey: "k1"},
			{Title: "later", DueInSeconds: 60, IdempotencyKey: "k2"}}}
		b, jobs := e.createBatch(nb)
		e.clock.Advance(time.Minute)
		e.watchDue()
		e.moveBreached()
		got := e.checkBatch(b.ID)
		if got.Moved != 2 || got.Ready != 1 || got.Total != 3 || got.Ended() {
			t.Fatalf("batch after the moves: %+v", got)
		}
		// The producer's request again: the same batch, its jobs where
		// they are.
		again, out, err := e.store.CreateBatch(e.ctx, from, "pat", nb)
		if err != nil || again.ID != b.ID || out[0].Job.ID != jobs[0].ID || out[1].Job.ID != localID(jobs[1].ID)+"."+leads || out[1].Created {
			t.Fatalf("the batch again = %+v, %+v, %v", again, out, err)
		}
		if r := e.claim("ann"); r.Job.ID != jobs[0].ID {
			t.Fatalf("claimed %s, want the job that stayed", r.Job.Title)
		} else {
			e.complete(r)
		}
		late := localID(jobs[1].ID) + "." + leads
		if j := e.get(late); j.BatchID != b.ID {
			t.Fatalf("moved job's batch %q, want %q", j.BatchID, b.ID)
		}
		// One completes there, one dies there: told, the batch ends.
		e.queue = leads
		for range 2 {
			r := e.claim("bob")
			if r.Job.BatchID != b.ID {
				t.Fatalf("claimed %+v", r.Job)
			}
			if r.Job.ID == late {
				e.complete(r)
			} else if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "no"); err != nil {
				t.Fatal(err)
			}
		}
		told := func(want int) {
			t.Helper()
			n, more, err := e.store.ReturnToBatches(e.ctx, leads, 10)
			if err != nil || more || n != want {
				t.Fatalf("ReturnToBatches = %d, %v, %v; want %d", n, more, err, want)
			}
		}
		if e.checkBatch(b.ID).Ended() {
			t.Fatal("the batch ended before it was told")
		}
		told(2)
		e.queue = from
		if got := e.checkBatch(b.ID); !got.Ended() || got.State != BatchCompletedWithFailures || got.Completed != 2 || got.Dead != 1 || got.Moved != 0 {
			t.Fatalf("batch told: %+v", got)
		}
		// Requeued there, it reopens the batch; told again, nothing.
		if _, _, err := e.store.Requeue(e.ctx, localID(jobs[2].ID)+"."+leads, "sam"); err != nil {
			t.Fatal(err)
		}
		told(1)
		told(0)
		if got := e.checkBatch(b.ID); got.Ended() || got.Moved != 1 || got.Dead != 0 {
			t.Fatalf("batch after the requeue there: %+v", got)
		}
		if n, err := e.rdb.ZCard(e.ctx, keysFor(leads).Returns()).Result(); err != nil || n != 0 {
			t.Fatalf("%d changes left to tell, %v", n, err)
		}
		// A canceled batch stays canceled though its job that moved is
		// requeued there, and ends as that job ends.
		c, cjobs := e.createBatch(NewBatch{Title: "c", Jobs: []NewJob{{Title: "overdue", DueInSeconds: 60}}})
		e.clock.Advance(time.Minute)
		e.watchDue()
		e.moveBreached()
		if _, canceled, err := e.cancelBatch(c.ID); err != nil || len(canceled) != 0 {
			t.Fatalf("cancel = %v, %v", canceled, err)
		}
		there := localID(cjobs[0].ID) + "." + leads
		if r, err := e.store.Claim(e.ctx, leads, "bob", OnlyJob(there)); err != nil || r == nil {
			t.Fatalf("claim there: %+v, %v", r, err)
		} else if _, err := e.store.Fail(e.ctx, there, r.Hold(), "no"); err != nil {
			t.Fatal(err)
		}
		told(1)
		if got := e.checkBatch(c.ID); !got.Ended() || got.State != BatchCanceled || got.Dead != 1 {
			t.Fatalf("the canceled batch told its last job died: %+v", got)
		}
		if _, _, err := e.store.Requeue(e.ctx, there, "sam"); err != nil {
			t.Fatal(err)
		}
		told(1)
		if got := e.checkBatch(c.ID); got.Ended() || got.State != BatchCanceled || got.Moved != 1 {
			t.Fatalf("the canceled batch told its job is requeued there: %+v", got)
		}
		if _, _, err := e.store.Cancel(e.ctx, there, "sam", false); err != nil {
			t.Fatal(err)
		}
		told(1)
		if got := e.checkBatch(c.ID); !got.Ended() || got.State != BatchCanceled || got.Canceled != 1 {
			t.Fatalf("the canceled batch told its job is canceled there: %+v", got)
		}
	})
}
