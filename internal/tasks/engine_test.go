package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

func TestEnqueueAndGet(t *testing.T) {
	onEachBackend(t, func(e *env) {
		out, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{
			Title: "  Check invoice 4711 ", Payload: json.RawMessage(`{"amount": 12.5, "lines": [1, 2]}`),
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !out[0].Created {
			t.Fatal("Created = false for a new job")
		}
		j := e.get(out[0].Job.ID)
		if j.Title != "Check invoice 4711" || j.Priority != DefaultPriority || j.State != StateReady ||
			j.Queue != e.queue || j.MaxAttempts != 5 || j.LeaseSeconds != 300 || j.Attempts != 0 {
			t.Fatalf("job = %+v", j)
		}
		if string(j.Payload) != `{"amount":12.5,"lines":[1,2]}` {
			t.Fatalf("payload = %s", j.Payload)
		}
		if !j.CreatedAt.Equal(e.clock.Now()) || !j.RunAt.Equal(e.clock.Now()) {
			t.Fatalf("created_at %v run_at %v, want %v", j.CreatedAt, j.RunAt, e.clock.Now())
		}
		empty := e.addJob(e.queue, NewJob{Title: "no payload"})
		if string(e.get(empty.ID).Payload) != "{}" {
			t.Fatalf("empty payload stored as %s", e.get(empty.ID).Payload)
		}
		if s := e.stats(); s.Ready != 2 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestGetUnknown(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("x", 50)
		for _, id := range []string{"", "nope", strings.Replace(j.ID, j.ID[:4], "7ZZZ", 1), j.ID + "x", j.ID[:26] + ".NOT_A_QUEUE"} {
			if _, err := e.store.Get(e.ctx, id); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get(%q) error %v, want ErrNotFound", id, err)
			}
		}
	})
}

func TestBadInputChangesNothing(t *testing.T) {
	p := func(n int) *int { return &n }
	big := `{"text":"` + strings.Repeat("a", MaxPayloadBytes) + `"}`
	tests := []struct {
		name string
		job  NewJob
		want error
	}{
		{"empty title", NewJob{Title: "  "}, ErrInvalid},
		{"long title", NewJob{Title: strings.Repeat("é", 201)}, ErrInvalid},
		{"control characters in title", NewJob{Title: "a\x00b"}, ErrInvalid},
		{"priority below 0", NewJob{Title: "x", Priority: p(-1)}, ErrInvalid},
		{"priority above 100", NewJob{Title: "x", Priority: p(101)}, ErrInvalid},
		{"payload not an object", NewJob{Title: "x", Payload: json.RawMessage(`[1,2]`)}, ErrInvalid},
		{"payload not JSON", NewJob{Title: "x", Payload: json.RawMessage(`{"a":`)}, ErrInvalid},
		{"oversized payload", NewJob{Title: "x", Payload: json.RawMessage(big)}, ErrTooLarge},
		{"idempotency key with a space", NewJob{Title: "x", IdempotencyKey: "a b"}, ErrInvalid},
		{"idempotency key with unicode", NewJob{Title: "x", IdempotencyKey: "clé"}, ErrInvalid},
		{"idempotency key too long", NewJob{Title: "x", IdempotencyKey: strings.Repeat("k", 201)}, ErrInvalid},
		{"negative delay", NewJob{Title: "x", DelaySeconds: -1}, ErrInvalid},
		{"run_at and delay", NewJob{Title: "x", DelaySeconds: 5, RunAt: &time.Time{}}, ErrInvalid},
		{"lease too long", NewJob{Title: "x", LeaseSeconds: 86401}, ErrInvalid},
		{"max attempts too high", NewJob{Title: "x", MaxAttempts: 1001}, ErrInvalid},
	}
	onEachBackend(t, func(e *env) {
		for _, tc := range tests {
			// A bad job alone, and a bad job in a batch of good ones: both
			// are refused whole.
			_, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{tc.job})
			wantErr(t, tc.name, err, tc.want)
			_, err = e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{Title: "good"}, tc.job, {Title: "good too"}})
			wantErr(t, tc.name+" in a batch", err, tc.want)
			var v *ValidationError
			if !errors.As(err, &v) || !strings.HasPrefix(v.Field, "jobs[1].") {
				t.Errorf("%s in a batch: error %v does not name jobs[1]", tc.name, err)
			}
		}
		_, err := e.store.Enqueue(e.ctx, "no-such-queue", "pat", []NewJob{{Title: "x"}})
		wantErr(t, "unknown queue", err, ErrQueueNotFound)
		_, err = e.store.Enqueue(e.ctx, "Bad Name", "pat", []NewJob{{Title: "x"}})
		wantErr(t, "malformed queue name", err, ErrQueueNotFound)
		_, err = e.store.Enqueue(e.ctx, e.queue, "pat", nil)
		wantErr(t, "no jobs", err, ErrInvalid)
		_, err = e.store.Enqueue(e.ctx, e.queue, "pat", make([]NewJob, MaxBatch+1))
		wantErr(t, "batch too large", err, ErrTooLarge)
		if s := e.stats(); s != (Stats{Queue: e.queue}) {
			t.Fatalf("bad input changed the queue: %+v", s)
		}
		n, err := e.rdb.Exists(e.ctx, keysFor("no-such-queue").All()...).Result()
		if err != nil || n != 0 {
			t.Fatalf("enqueue to an unknown queue created %d keys (%v)", n, err)
		}
	})
}

func TestBatchEnqueueIsAtomicAndOrdered(t *testing.T) {
	onEachBackend(t, func(e *env) {
		jobs := make([]NewJob, MaxBatch)
		for i := range jobs {
			jobs[i] = NewJob{Title: "doc " + strconv.Itoa(i)}
		}
		out, err := e.store.Enqueue(e.ctx, e.queue, "pat", jobs)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != MaxBatch || e.stats().Ready != MaxBatch {
			t.Fatalf("enqueued %d, ready %d", len(out), e.stats().Ready)
		}
		// Same priority, same millisecond: claimed in the order given.
		for i := range 5 {
			if r := e.claim("ann"); r.Job.Title != "doc "+strconv.Itoa(i) {
				t.Fatalf("claim %d got %q", i, r.Job.Title)
			}
		}
	})
}

func TestIdempotencyKey(t *testing.T) {
	onEachBackend(t, func(e *env) {
		first, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{Title: "first", IdempotencyKey: "order-1:review"}})
		if err != nil {
			t.Fatal(err)
		}
		again, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{
			{Title: "second", IdempotencyKey: "order-1:review", Payload: json.RawMessage(`{"x":1}`)},
			{Title: "third", IdempotencyKey: "order-2:review"},
			{Title: "fourth", IdempotencyKey: "order-2:review"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if again[0].Created || again[0].Job.ID != first[0].Job.ID || again[0].Job.Title != "first" || string(again[0].Job.Payload) != "{}" {
			t.Fatalf("repeat = %+v %+v, want the first job", again[0], again[0].Job)
		}
		if !again[1].Created || again[2].Created || again[2].Job.ID != again[1].Job.ID {
			t.Fatalf("a key repeated inside one batch must name the job made first")
		}
		if s := e.stats(); s.Ready != 2 {
			t.Fatalf("ready = %d, want 2", s.Ready)
		}
	})
}

func TestStrictPriorityThenFIFO(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.add("low", 10)
		e.clock.Advance(time.Millisecond)
		e.add("high 1", 90)
		e.clock.Advance(time.Millisecond)
		e.add("mid", 50)
		e.clock.Advance(time.Millisecond)
		e.add("high 2", 90)
		// A low-priority job waiting a year still comes after higher ones.
		e.clock.Advance(365 * 24 * time.Hour)
		e.add("mid later", 50)
		var got []string
		for range 5 {
			got = append(got, e.claim("ann").Job.Title)
		}
		want := "high 1,high 2,mid,mid later,low"
		if strings.Join(got, ",") != want {
			t.Fatalf("claim order %v, want %s", got, want)
		}
	})
}

func TestAgingLetsOldLowPriorityWorkThrough(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			// Each priority point is worth one minute of waiting.
			e := newEnv(t, b.rdb, Queue{AgingSeconds: 60})
			e.add("old low", 10)
			e.clock.Advance(50 * time.Minute)
			e.add("new high", 50) // 40 points = 40 minutes: the old job waited longer
			e.add("newest top", 100)
			var got []string
			for range 3 {
				got = append(got, e.claim("ann").Job.Title)
			}
			if strings.Join(got, ",") != "newest top,old low,new high" {
				t.Fatalf("claim order %v", got)
			}
		})
	}
}

func TestClaimReservesWithDeadlineAndToken(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.claimNone("ann")
		j := e.add("review", 50)
		r := e.claim("ann")
		if r.Job.ID != j.ID || r.Job.State != StateReserved || r.Job.ReservedBy != "ann" || len(r.Token) != 32 {
			t.Fatalf("reservation = %+v job %+v", r, r.Job)
		}
		if want := e.clock.Now().Add(300 * time.Second); !r.Deadline.Equal(want) || !r.Job.ReservedAt.Equal(e.clock.Now()) {
			t.Fatalf("deadline %v, want %v", r.Deadline, want)
		}
		if string(r.Job.Payload) != "{}" {
			t.Fatalf("claimed job has payload %q", r.Job.Payload)
		}
		e.claimNone("bob")
		if s := e.stats(); s.Ready != 0 || s.Reserved != 1 {
			t.Fatalf("stats = %+v", s)
		}
		// The job object never carries the token.
		b, _ := json.Marshal(e.get(j.ID))
		if strings.Contains(string(b), r.Token) {
			t.Fatal("job JSON contains the reservation token")
		}
		if _, err := e.store.Claim(e.ctx, "no-such-queue", "ann"); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("claim from unknown queue: %v", err)
		}
		if _, err := e.store.Claim(e.ctx, e.queue, ""); !errors.Is(err, ErrInvalid) {
			t.Fatalf("claim without operator: %v", err)
		}
	})
}

func TestPerJobLeaseAndAttempts(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.addJob(e.queue, NewJob{Title: "quick", LeaseSeconds: 30, MaxAttempts: 1})
		if j.LeaseSeconds != 30 || j.MaxAttempts != 1 {
			t.Fatalf("job = %+v", j)
		}
		r := e.claim("ann")
		if want := e.clock.Now().Add(30 * time.Second); !r.Deadline.Equal(want) {
			t.Fatalf("deadline %v, want %v", r.Deadline, want)
		}
		if j, err := e.store.Fail(e.ctx, j.ID, r.Hold(), "unreadable scan"); err != nil || j.State != StateDead {
			t.Fatalf("Fail = %+v, %v; want dead after its one attempt", j, err)
		}
	})
}

func TestComplete(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("review", 50)
		r := e.claim("ann")
		if _, err := e.store.Complete(e.ctx, j.ID, Hold{Holder: "ann", Token: "0123456789abcdef0123456789abcdef"}, nil); !errors.Is(err, ErrReservationLost) {
			t.Fatalf("complete with a wrong token: %v", err)
		}
		if _, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`"not an object"`)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("complete with a bad result: %v", err)
		}
		if e.get(j.ID).State != StateReserved {
			t.Fatal("refused completes changed the job")
		}
		e.clock.Advance(time.Minute)
		done, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`{"verdict": "ok"}`))
		if err != nil {
			t.Fatal(err)
		}
		got := e.get(j.ID)
		if done.State != StateCompleted || got.State != StateCompleted || string(got.Result) != `{"verdict":"ok"}` ||
			!got.CompletedAt.Equal(e.clock.Now()) || got.ReservedBy != "" || got.Deadline != nil {
			t.Fatalf("completed job = %+v", got)
		}
		// A retry (its answer lost) is answered as the first was, and
		// changes nothing.
		if again, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`{"verdict": "twice"}`)); err != nil || again.State != StateCompleted {
			t.Fatalf("second complete = %+v, %v", again, err)
		}
		if got := e.get(j.ID); string(got.Result) != `{"verdict":"ok"}` || got.CompletedBy != "ann" {
			t.Fatalf("second complete changed the job: %+v", got)
		}
		if s := e.stats(); s.Completed != 1 || s.CompletedLastHour != 1 || s.Reserved != 0 {
			t.Fatalf("stats = %+v", s)
		}
		for _, id := range []string{"", "bogus", j.ID[:26] + ".other"} {
			if _, err := e.store.Complete(e.ctx, id, r.Hold(), nil); !errors.Is(err, ErrNotFound) {
				t.Errorf("complete %q: %v", id, err)
			}
		}
		if _, err := e.store.Release(e.ctx, j.ID, Hold{Holder: "ann"}); !errors.Is(err, ErrReservationLost) {
			t.Fatalf("release without token: %v", err)
		}
	})
}

func TestReleaseKeepsPlaceInLine(t *testing.T) {
	onEachBackend(t, func(e *env) {
		first := e.add("first", 50)
		e.clock.Advance(time.Second)
		e.add("second", 50)
		r := e.claim("ann")
		e.clock.Advance(time.Minute)
		e.add("third", 50)
		j, err := e.store.Release(e.ctx, first.ID, r.Hold())
		if err != nil || j.State != StateReady || j.ReservedBy != "" {
			t.Fatalf("Release = %+v, %v", j, err)
		}
		if got := e.claim("bob").Job.Title; got != "first" {
			t.Fatalf("after release bob got %q, want the released job back at the front", got)
		}
		if _, err := e.store.Complete(e.ctx, first.ID, r.Hold(), nil); !errors.Is(err, ErrReservationLost) {
			t.Fatalf("complete with the released token: %v", err)
		}
		if e.get(first.ID).Attempts != 0 {
			t.Fatal("a release spent an attempt")
		}
	})
}

func TestSkipIsNotOfferedAgain(t *testing.T) {
	onEachBackend(t, func(e *env) {
		hard := e.add("hard", 90)
		e.add("easy", 10)
		r := e.claim("ann")
		if _, err := e.store.Skip(e.ctx, hard.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		if got := e.claim("ann").Job.Title; got != "easy" {
			t.Fatalf("ann got %q after skipping hard", got)
		}
		e.claimNone("ann")
		rb := e.claim("bob")
		if rb.Job.ID != hard.ID {
			t.Fatalf("bob got %q, want the job ann skipped", rb.Job.Title)
		}
		if got := e.get(hard.ID).SkippedBy; len(got) != 1 || got[0] != "ann" {
			t.Fatalf("skipped_by = %v", got)
		}
		// bob skips it too, then carol finishes it: the skip records go.
		if _, err := e.store.Skip(e.ctx, hard.ID, rb.Hold()); err != nil {
			t.Fatal(err)
		}
		rc := e.claim("carol")
		if _, err := e.store.Complete(e.ctx, hard.ID, rc.Hold(), nil); err != nil {
			t.Fatal(err)
		}
		k := keysFor(e.queue)
		if n, _ := e.rdb.SCard(e.ctx, k.Skips()).Result(); n != 0 {
			t.Fatalf("%d skip records left after completion", n)
		}
		if n, _ := e.rdb.HLen(e.ctx, k.SkipCount()).Result(); n != 0 {
			t.Fatalf("%d skip counters left after completion", n)
		}
	})
}

func TestExtend(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b.rdb, Queue{LeaseSeconds: 60, MaxExtensions: 2, MaxHoldSeconds: 200})
			j := e.add("long read", 50)
			r := e.claim("ann")
			start := e.clock.Now()
			deadline := func() time.Time { return *e.get(j.ID).Deadline }

			// Asking for less than is left changes nothing and costs nothing.
			if _, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 10); err != nil || !deadline().Equal(start.Add(60*time.Second)) {
				t.Fatalf("short extend moved the deadline to %v (%v)", deadline(), err)
			}
			e.clock.Advance(50 * time.Second)
			got, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 120)
			if err != nil || !got.Deadline.Equal(start.Add(170*time.Second)) || got.Extensions != 1 {
				t.Fatalf("Extend = %v, %v", got.Deadline, err)
			}
			// The reserved index follows the deadline: no reclaim before it.
			e.clock.Advance(100 * time.Second)
			if moved, _, _ := e.reclaim(10); len(moved) != 0 {
				t.Fatalf("reclaimed an extended reservation: %v", moved)
			}
			// Max hold caps the next extension at reserved_at + 200 s.
			got, err = e.store.Extend(e.ctx, j.ID, r.Hold(), 300)
			if err != nil || !got.Deadline.Equal(start.Add(200*time.Second)) {
				t.Fatalf("capped Extend = %v, %v", got.Deadline, err)
			}
			_, err = e.store.Extend(e.ctx, j.ID, r.Hold(), 300)
			wantErr(t, "extend past the max hold", err, ErrExtensionLimit)
			_, err = e.store.Extend(e.ctx, j.ID, r.Hold(), 0)
			wantErr(t, "extend by 0", err, ErrInvalid)
			_, err = e.store.Extend(e.ctx, j.ID, Hold{Holder: "ann", Token: "stale"}, 60)
			wantErr(t, "extend with a wrong token", err, ErrReservationLost)

			// Max extensions.
			j2 := e.add("another", 50)
			r2 := e.claim("ann")
			for i := range 2 {
				e.clock.Advance(10 * time.Second)
				if _, err := e.store.Extend(e.ctx, j2.ID, r2.Hold(), 60); err != nil {
					t.Fatalf("extension %d: %v", i+1, err)
				}
			}
			e.clock.Advance(10 * time.Second)
			_, err = e.store.Extend(e.ctx, j2.ID, r2.Hold(), 60)
			wantErr(t, "third extension", err, ErrExtensionLimit)
		})
	}
}

func TestFailRetriesThenDies(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.addJob(e.queue, NewJob{Title: "flaky", MaxAttempts: 3})
		// Each failure keeps the job from its reporter: a new person each time.
		for attempt, op := range []string{"ann", "bob", "cid"} {
			attempt++
			r := e.claim(op)
			got, err := e.store.Fail(e.ctx, j.ID, r.Hold(), "scanner jammed")
			if err != nil {
				t.Fatal(err)
			}
			want := StateReady
			if attempt == 3 {
				want = StateDead
			}
			if got.State != want || got.Attempts != attempt || got.LastError != "scanner jammed" {
				t.Fatalf("attempt %d: %+v", attempt, got)
			}
		}
		e.claimNone("dan")
		if s := e.stats(); s.Dead != 1 || s.Ready != 0 {
			t.Fatalf("stats = %+v", s)
		}
		if _, err := e.store.Fail(e.ctx, j.ID, Hold{Holder: "ann", Token: "x"}, strings.Repeat("r", 2001)); !errors.Is(err, ErrInvalid) {
			t.Fatalf("long reason: %v", err)
		}
	})
}

func TestExpiredReservationIsFencedAndReclaimed(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.addJob(e.queue, NewJob{Title: "abandoned", MaxAttempts: 2})
		r := e.claim("ann")
		e.clock.Advance(300 * time.Second) // the deadline itself: expired
		// Past the deadline nothing the holder sends is stored, even before
		// any reclaim ran.
		for name, call := range map[string]func() error{
			"complete": func() error {
				_, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`{"late":true}`))
				return err
			},
			"release": func() error { _, err := e.store.Release(e.ctx, j.ID, r.Hold()); return err },
			"skip":    func() error { _, err := e.store.Skip(e.ctx, j.ID, r.Hold()); return err },
			"extend":  func() error { _, err := e.store.Extend(e.ctx, j.ID, r.Hold(), 60); return err },
			"fail":    func() error { _, err := e.store.Fail(e.ctx, j.ID, r.Hold(), "late"); return err },
		} {
			wantErr(t, name+" after the deadline", call(), ErrReservationLost)
		}
		if got := e.get(j.ID); got.State != StateReserved || got.Result != nil {
			t.Fatalf("late calls changed the job: %+v", got)
		}

		moved, more, err := e.reclaim(10)
		if err != nil || more || len(moved) != 1 || moved[0].JobID != j.ID || moved[0].Holder != "ann" || moved[0].Actor != System || moved[0].To != StateReady {
			t.Fatalf("ReclaimExpired = %+v, %v, %v", moved, more, err)
		}
		if got := e.get(j.ID); got.State != StateReady || got.Attempts != 1 || !strings.Contains(got.LastError, "ann") {
			t.Fatalf("reclaimed job = %+v", got)
		}
		_, err = e.store.Complete(e.ctx, j.ID, r.Hold(), nil)
		wantErr(t, "complete after reclaim", err, ErrReservationLost)

		// Second abandonment uses up the attempts: dead.
		r2 := e.claim("bob")
		if r2.Token == r.Token {
			t.Fatal("a new claim reused the old token")
		}
		e.clock.Advance(301 * time.Second)
		moved, _, _ = e.reclaim(10)
		if len(moved) != 1 || moved[0].To != StateDead || moved[0].Holder != "bob" {
			t.Fatalf("second reclaim = %+v", moved)
		}
		if s := e.stats(); s.Dead != 1 || s.Reserved != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestScheduledJobs(t *testing.T) {
	onEachBackend(t, func(e *env) {
		runAt := e.clock.Now().Add(time.Hour)
		later := e.addJob(e.queue, NewJob{Title: "at nine", RunAt: &runAt})
		delayed := e.addJob(e.queue, NewJob{Title: "in ten minutes", DelaySeconds: 600})
		past := e.clock.Now().Add(-time.Hour)
		now := e.addJob(e.queue, NewJob{Title: "overdue", RunAt: &past})
		if later.State != StateScheduled || delayed.State != StateScheduled || now.State != StateReady {
			t.Fatalf("states %s %s %s", later.State, delayed.State, now.State)
		}
		if !delayed.RunAt.Equal(e.clock.Now().Add(10 * time.Minute)) {
			t.Fatalf("delayed run_at %v", delayed.RunAt)
		}
		r := e.claim("ann")
		if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), nil); err != nil {
			t.Fatal(err)
		}
		e.claimNone("ann")
		e.clock.Advance(10 * time.Minute)
		if s := e.stats(); s.Due != 1 || s.Scheduled != 2 {
			t.Fatalf("stats = %+v", s)
		}
		// Claim promotes what is due.
		if got := e.claim("ann").Job; got.ID != delayed.ID {
			t.Fatalf("claimed %q", got.Title)
		}
		e.clock.Advance(time.Hour)
		ids, more, err := e.promote(10)
		if err != nil || more || len(ids) != 1 || ids[0] != later.ID {
			t.Fatalf("PromoteDue = %v %v %v", ids, more, err)
		}
		if e.get(later.ID).State != StateReady {
			t.Fatal("promoted job is not ready")
		}
	})
}

func TestCancel(t *testing.T) {
	onEachBackend(t, func(e *env) {
		ready := e.add("ready", 50)
		scheduled := e.addJob(e.queue, NewJob{Title: "scheduled", DelaySeconds: 60})
		for _, j := range []*Job{ready, scheduled} {
			got, holder, err := e.store.Cancel(e.ctx, j.ID, "sam", false)
			if err != nil || got.State != StateCanceled || holder != "" || got.FinishedAt == nil {
				t.Fatalf("Cancel(%s) = %+v %q %v", j.Title, got, holder, err)
			}
		}
		held := e.add("held", 50)
		r := e.claim("ann")
		_, _, err := e.store.Cancel(e.ctx, held.ID, "sam", false)
		wantErr(t, "cancel a reserved job without force", err, ErrInvalidState)
		got, holder, err := e.store.Cancel(e.ctx, held.ID, "sam", true)
		if err != nil || got.State != StateCanceled || holder != "ann" {
			t.Fatalf("forced Cancel = %+v %q %v", got, holder, err)
		}
		_, err = e.store.Complete(e.ctx, held.ID, r.Hold(), nil)
		wantErr(t, "complete after a forced cancel", err, ErrReservationLost)
		_, _, err = e.store.Cancel(e.ctx, held.ID, "sam", true)
		wantErr(t, "cancel twice", err, ErrInvalidState)
		_, _, err = e.store.Cancel(e.ctx, "nope", "sam", false)
		wantErr(t, "cancel unknown", err, ErrNotFound)
		if s := e.stats(); s.Canceled != 3 || s.Ready+s.Scheduled+s.Reserved != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestRequeue(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.addJob(e.queue, NewJob{Title: "poison", MaxAttempts: 1})
		r := e.claim("ann")
		if _, err := e.store.Fail(e.ctx, j.ID, r.Hold(), "broken"); err != nil {
			t.Fatal(err)
		}
		got, _, err := e.store.Requeue(e.ctx, j.ID, "sam")
		if err != nil || got.State != StateReady || got.Attempts != 0 || got.FinishedAt != nil {
			t.Fatalf("Requeue(dead) = %+v %v", got, err)
		}
		_, _, err = e.store.Requeue(e.ctx, j.ID, "sam")
		wantErr(t, "requeue a ready job", err, ErrInvalidState)

		// Force release: the holder's token dies, the job keeps its place.
		r = e.claim("ann")
		got, holder, err := e.store.Requeue(e.ctx, j.ID, "sam")
		if err != nil || got.State != StateReady || holder != "ann" {
			t.Fatalf("Requeue(reserved) = %+v %q %v", got, holder, err)
		}
		_, err = e.store.Complete(e.ctx, j.ID, r.Hold(), nil)
		wantErr(t, "complete after force release", err, ErrReservationLost)
		r = e.claim("bob")
		if _, err := e.store.Complete(e.ctx, j.ID, r.Hold(), nil); err != nil {
			t.Fatal(err)
		}
		_, _, err = e.store.Requeue(e.ctx, j.ID, "sam")
		wantErr(t, "requeue a completed job", err, ErrInvalidState)
	})
}

// A supervisor's reason for a cancel, force release or requeue is kept in
// the history entry of the change; one too long changes nothing.
func TestSupervisorReasons(t *testing.T) {
	onEachBackend(t, func(e *env) {
		lastReason := func(j *Job) (Action, string) {
			t.Helper()
			h, _, err := j.History()
			if err != nil || len(h) == 0 {
				t.Fatalf("history of %s: %v %v", j.ID, h, err)
			}
			return h[len(h)-1].Action, h[len(h)-1].Reason
		}
		j := e.addJob(e.queue, NewJob{Title: "held", MaxAttempts: 1})
		e.claim("ann")
		_, _, err := e.store.Requeue(e.ctx, j.ID, "sam", WithReason(strings.Repeat("x", 2001)))
		wantErr(t, "a reason too long", err, ErrInvalid)
		if got := e.get(j.ID); got.State != StateReserved {
			t.Fatalf("a refused force release moved the job to %s", got.State)
		}
		got, _, err := e.store.Requeue(e.ctx, j.ID, "sam", AsSeen(StateReserved, "ann"), WithReason("urgent: customer called"))
		if err != nil {
			t.Fatal(err)
		}
		if a, why := lastReason(got); a != ActionForceReleased || why != "urgent: customer called" {
			t.Fatalf("force release entry = %s %q", a, why)
		}
		r := e.claim("bob")
		if _, err := e.store.Fail(e.ctx, j.ID, r.Hold(), "broken"); err != nil {
			t.Fatal(err)
		}
		if got, _, err = e.store.Requeue(e.ctx, j.ID, "sam", WithReason("fixed upstream")); err != nil {
			t.Fatal(err)
		}
		if a, why := lastReason(got); a != ActionRequeued || why != "fixed upstream" {
			t.Fatalf("requeue entry = %s %q", a, why)
		}
		if got, _, err = e.store.Cancel(e.ctx, j.ID, "sam", false, WithReason("duplicate")); err != nil {
			t.Fatal(err)
		}
		if a, why := lastReason(got); a != ActionCanceled || why != "duplicate" {
			t.Fatalf("cancel entry = %s %q", a, why)
		}
		plain := e.add("plain", 50)
		if got, _, err = e.store.Cancel(e.ctx, plain.ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		if _, why := lastReason(got); why != "" {
			t.Fatalf("a cancel without a reason has %q", why)
		}
	})
}

// A queue that requires a reason refuses a cancel, requeue or force
// release without one (ErrReasonRequired), changing nothing; with one, it
// goes ahead, and the transition carries the reason. Turned off, none is
// needed.
func TestRequireReason(t *testing.T) {
	onEachBackend(t, func(e *env) {
		on, off := true, false
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{RequireReason: &on}); err != nil {
			t.Fatal(err)
		}
		if q, err := e.store.Queue(e.ctx, e.queue); err != nil || !q.RequireReason {
			t.Fatalf("queue after the patch: %+v %v", q, err)
		}
		held := e.addJob(e.queue, NewJob{Title: "held", MaxAttempts: 1})
		e.claim("ann")
		ready := e.add("ready", 50)
		for _, c := range []struct {
			name string
			call func(opts ...SuperviseOption) error
		}{
			{"force release", func(opts ...SuperviseOption) error {
				_, _, err := e.store.Requeue(e.ctx, held.ID, "sam", opts...)
				return err
			}},
			{"forced cancel", func(opts ...SuperviseOption) error {
				_, _, err := e.store.Cancel(e.ctx, held.ID, "sam", true, opts...)
				return err
			}},
			{"cancel", func(opts ...SuperviseOption) error {
				_, _, err := e.store.Cancel(e.ctx, ready.ID, "sam", false, opts...)
				return err
			}},
		} {
			before, readyBefore := e.get(held.ID), e.get(ready.ID)
			wantErr(t, c.name+" without a reason", c.call(), ErrReasonRequired)
			if !reflect.DeepEqual(e.get(held.ID), before) || !reflect.DeepEqual(e.get(ready.ID), readyBefore) {
				t.Fatalf("a refused %s changed a job", c.name)
			}
		}
		moved := e.did(func(tr Transition) bool { return tr.JobID == held.ID }, func() {
			if _, _, err := e.store.Requeue(e.ctx, held.ID, "sam", WithReason("customer called")); err != nil {
				t.Fatal(err)
			}
		})
		if len(moved) != 1 || moved[0].Action != ActionForceReleased || moved[0].Reason != "customer called" || moved[0].Holder != "ann" {
			t.Fatalf("force release with a reason: %+v", moved)
		}
		// From dead: one by one, and all at once.
		r := e.claim("bob")
		if _, err := e.store.Fail(e.ctx, held.ID, r.Hold(), "broken"); err != nil {
			t.Fatal(err)
		}
		_, _, err := e.store.Requeue(e.ctx, held.ID, "sam")
		wantErr(t, "requeue from dead without a reason", err, ErrReasonRequired)
		n, _, err := e.store.RequeueDead(e.ctx, e.queue, "sam", 10)
		wantErr(t, "requeue all dead without a reason", err, ErrReasonRequired)
		if n != 0 || e.get(held.ID).State != StateDead {
			t.Fatalf("a refused requeue of the dead moved %d jobs", n)
		}
		if n, _, err = e.store.RequeueDead(e.ctx, e.queue, "sam", 10, WithReason("fixed upstream")); err != nil || n != 1 {
			t.Fatalf("requeue all dead with a reason: %d %v", n, err)
		}
		if h, _, _ := e.get(held.ID).History(); h[len(h)-1].Reason != "fixed upstream" {
			t.Fatalf("requeued entry: %+v", h[len(h)-1])
		}
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{RequireReason: &off}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.store.Cancel(e.ctx, ready.ID, "sam", false); err != nil {
			t.Fatalf("cancel without a reason, none required: %v", err)
		}
	})
}

func TestListJobsPaging(t *testing.T) {
	onEachBackend(t, func(e *env) {
		jobs := make([]NewJob, 25)
		for i := range jobs {
			jobs[i] = NewJob{Title: "doc " + strconv.Itoa(i)}
		}
		if _, err := e.store.Enqueue(e.ctx, e.queue, "pat", jobs); err != nil {
			t.Fatal(err)
		}
		var titles []string
		cursor := ""
		pages := 0
		for {
			p, err := e.store.ListJobs(e.ctx, e.queue, StateReady, 10, cursor)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, j := range p.Jobs {
				titles = append(titles, j.Title)
			}
			if pages == 1 {
				// The cursor's own job leaves the index between pages: the
				// next page still starts right after it.
				last := p.Jobs[len(p.Jobs)-1]
				if _, _, err := e.store.Cancel(e.ctx, last.ID, "sam", false); err != nil {
					t.Fatal(err)
				}
			}
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		if pages != 3 || len(titles) != 25 {
			t.Fatalf("%d pages, %d jobs", pages, len(titles))
		}
		for i, title := range titles {
			if title != "doc "+strconv.Itoa(i) {
				t.Fatalf("job %d is %q", i, title)
			}
		}
		_, err := e.store.ListJobs(e.ctx, e.queue, StateReady, 10, "!!")
		wantErr(t, "bad cursor", err, ErrInvalid)
		_, err = e.store.ListJobs(e.ctx, e.queue, "lost", 10, "")
		wantErr(t, "bad state", err, ErrInvalid)
		_, err = e.store.ListJobs(e.ctx, e.queue, StateReady, MaxPageSize+1, "")
		wantErr(t, "page too big", err, ErrInvalid)
		p, err := e.store.ListJobs(e.ctx, e.queue, StateCanceled, 0, "")
		if err != nil || len(p.Jobs) != 1 || p.NextCursor != "" {
			t.Fatalf("canceled list = %+v %v", p, err)
		}
	})
}

func TestListReservationsAcrossQueues(t *testing.T) {
	onEachBackend(t, func(e *env) {
		short := e.newQueue(Queue{LeaseSeconds: 60})
		long := e.newQueue(Queue{LeaseSeconds: 600})
		var want []string
		for i := range 3 {
			for _, q := range []string{short, long} {
				j := e.addJob(q, NewJob{Title: q + strconv.Itoa(i)})
				if _, err := e.store.Claim(e.ctx, q, "ann"); err != nil {
					t.Fatal(err)
				}
				if q == short {
					want = append(want, j.ID)
				}
			}
			e.clock.Advance(time.Second)
		}
		// Other tests' queues hold reservations too; ours with the shortest
		// leases must come first, in deadline order, across pages.
		var got []string
		cursor := ""
		for len(got) < 3 {
			p, err := e.store.ListReservations(e.ctx, "", 2, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for i, j := range p.Jobs {
				if i > 0 && j.Deadline.Before(*p.Jobs[i-1].Deadline) {
					t.Fatal("reservations out of deadline order")
				}
				if j.Queue == short {
					got = append(got, j.ID)
				}
			}
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("short-lease reservations %v, want %v", got, want)
		}
		p, err := e.store.ListReservations(e.ctx, long, 10, "")
		if err != nil || len(p.Jobs) != 3 {
			t.Fatalf("one queue's reservations: %d, %v", len(p.Jobs), err)
		}
	})
}

func TestQueueSettings(t *testing.T) {
	onEachBackend(t, func(e *env) {
		q, err := e.store.Queue(e.ctx, e.queue)
		if err != nil {
			t.Fatal(err)
		}
		want := Queue{Name: e.queue, LeaseSeconds: 300, MaxAttempts: 5, MaxExtensions: 10, MaxHoldSeconds: 4 * 3600,
			RetentionSeconds: 7 * day, DeadRetentionSeconds: 30 * day, WarnFraction: DefaultWarnFraction, Order: OrderRank,
			Overlap: 1}
		if q != want {
			t.Fatalf("defaults = %+v, want %+v", q, want)
		}
		q.LeaseSeconds, q.AgingSeconds = 30, 120
		if _, err := e.store.PutQueue(e.ctx, q); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.store.Queue(e.ctx, e.queue); got != q {
			t.Fatalf("updated = %+v, want %+v", got, q)
		}
		for _, bad := range []Queue{
			{Name: "Upper"}, {Name: "-dash"}, {Name: strings.Repeat("q", 65)},
			{Name: "ok", LeaseSeconds: -1}, {Name: "ok", LeaseSeconds: day + 1}, {Name: "ok", MaxAttempts: 1001},
			{Name: "ok", LeaseSeconds: 600, MaxHoldSeconds: 300}, {Name: "ok", AgingSeconds: -5},
			{Name: "ok", Overlap: MaxOverlap + 1}, {Name: "ok", Overlap: -1},
		} {
			if _, err := e.store.PutQueue(e.ctx, bad); !errors.Is(err, ErrInvalid) {
				t.Errorf("PutQueue(%+v): %v", bad, err)
			}
		}
		if _, err := e.store.Queue(e.ctx, "no-such-queue"); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("Queue(unknown): %v", err)
		}
		names, err := e.store.QueueNames(e.ctx)
		if err != nil || !slices.Contains(names, e.queue) || slices.Contains(names, "ok") {
			t.Fatalf("QueueNames = %v, %v", names, err)
		}
		if _, err := e.store.Stats(e.ctx, "no-such-queue"); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("Stats(unknown): %v", err)
		}
	})
}

func TestRetentionPurgesOldFinishedJobs(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, b.rdb, Queue{RetentionSeconds: 3600, DeadRetentionSeconds: 7200})
			done := e.addJob(e.queue, NewJob{Title: "done", IdempotencyKey: "k1"})
			r := e.claim("ann")
			if _, err := e.store.Complete(e.ctx, done.ID, r.Hold(), json.RawMessage(`{"a":1}`)); err != nil {
				t.Fatal(err)
			}
			dead := e.addJob(e.queue, NewJob{Title: "dead", MaxAttempts: 1})
			r = e.claim("ann")
			if _, err := e.store.Fail(e.ctx, dead.ID, r.Hold(), "x"); err != nil {
				t.Fatal(err)
			}
			e.add("waiting", 50)

			e.clock.Advance(3601 * time.Second)
			n, more, err := e.store.Purge(e.ctx, e.queue, 100)
			if err != nil || n != 1 || more {
				t.Fatalf("Purge = %d %v %v", n, more, err)
			}
			_, err = e.store.Get(e.ctx, done.ID)
			wantErr(t, "get a purged job", err, ErrNotFound)
			if e.get(dead.ID).State != StateDead {
				t.Fatal("dead job purged before its retention")
			}
			// The idempotency key is free again once its job is gone.
			again := e.addJob(e.queue, NewJob{Title: "done again", IdempotencyKey: "k1"})
			if again.ID == done.ID {
				t.Fatal("idempotency key still names the purged job")
			}
			e.clock.Advance(3600 * time.Second)
			if n, _, _ := e.store.Purge(e.ctx, e.queue, 100); n != 1 {
				t.Fatalf("second purge deleted %d, want the dead job", n)
			}
			k := keysFor(e.queue)
			if n, _ := e.rdb.HLen(e.ctx, k.Result()).Result(); n != 0 {
				t.Fatalf("%d results left", n)
			}
			if s := e.stats(); s.Ready != 2 || s.Completed+s.Dead != 0 {
				t.Fatalf("stats = %+v", s)
			}
		})
	}
}

func TestClaimTakesBackExpiredReservations(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("abandoned", 50)
		r := e.claim("ann")
		e.clock.Advance(5 * time.Minute)
		// No reclaim ran, yet the abandoned job is claimable at once.
		r2 := e.claim("bob")
		if r2.Job.ID != j.ID || r2.Job.Attempts != 1 || r2.Token == r.Token {
			t.Fatalf("bob got %+v", r2.Job)
		}
		_, err := e.store.Complete(e.ctx, j.ID, r.Hold(), nil)
		wantErr(t, "the first holder's complete", err, ErrReservationLost)
	})
}

// An operator at the queue's max_held whose reservation ran out holds
// nothing: the claim takes the expired reservation back before it counts
// theirs, so it is not refused for a hold that is gone.
func TestHoldLimitCountsOnlyLiveReservations(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{MaxHeld: 1, LeaseSeconds: 60})
		e.add("a", 50)
		e.add("b", 50)
		a := e.claim("olga")
		e.clock.Advance(61 * time.Second)
		_, err := e.store.Release(e.ctx, a.Job.ID, a.Hold())
		wantErr(e.t, "release after the deadline", err, ErrReservationLost)
		r, err := e.store.Claim(e.ctx, e.queue, "olga")
		if err != nil || r == nil {
			e.t.Fatalf("claim after olga's only reservation ran out: %v, %v; want a job", r, err)
		}
		if r.Job.ID != a.Job.ID || r.Job.Attempts != 1 {
			e.t.Fatalf("olga got %+v; want the expired job again, one attempt spent", r.Job)
		}
		_, err = e.store.Claim(e.ctx, e.queue, "olga")
		wantErr(e.t, "a second claim while the first lasts", err, ErrHoldLimit)
	})
}

// A transition that ends a reservation carries the deadline it had (the
// notices of its end say it), whatever ended it; one that begins or
// extends one carries the new deadline; others carry none.
func TestTransitionsCarryTheReservationsDeadline(t *testing.T) {
	onEachBackend(t, func(e *env) {
		for range 5 {
			e.add("work", 0)
		}
		e.changes()
		ended := func(ts []Transition, r *Reservation) {
			t.Helper()
			for _, tr := range ts {
				if tr.From != StateReserved || tr.JobID != r.Job.ID {
					continue
				}
				if tr.Deadline == nil || !tr.Deadline.Equal(r.Deadline) {
					t.Fatalf("%s of a reservation until %v carries the deadline %v", tr.Action, r.Deadline, tr.Deadline)
				}
				return
			}
			t.Fatalf("no transition ended the reservation of %s: %+v", r.Job.ID, ts)
		}
		r := e.claim("ann")
		if ts := e.changes(); len(ts) != 1 || ts[0].Deadline == nil || !ts[0].Deadline.Equal(r.Deadline) {
			t.Fatalf("claimed: %+v, want the deadline %v", ts, r.Deadline)
		}
		_, next, _, err := e.store.CompleteNext(e.ctx, r.Job.ID, r.Hold(), nil)
		if err != nil || next == nil {
			t.Fatal(err)
		}
		ended(e.changes(), r)
		if _, err := e.store.Release(e.ctx, next.Job.ID, next.Hold()); err != nil {
			t.Fatal(err)
		}
		ended(e.changes(), next)
		r = e.claim("bob")
		if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "no"); err != nil {
			t.Fatal(err)
		}
		ended(e.changes(), r)
		r = e.claim("cy")
		e.clock.Advance(time.Duration(r.Job.LeaseSeconds+1) * time.Second)
		moved, _, err := e.reclaim(10)
		if err != nil {
			t.Fatal(err)
		}
		ended(moved, r)
		e.changes()
		j := e.add("later", 0)
		for _, tr := range e.changes() {
			if tr.JobID == j.ID && tr.Deadline != nil {
				t.Fatalf("%s carries a deadline: %v", tr.Action, tr.Deadline)
			}
		}
	})
}

// Without a queue, a listing takes every queue's jobs of the state, merged
// in the state's order across pages, each once, even as jobs leave the
// index between pages. (A store of its own: other tests' queues would
// have their jobs in the listing too.)
func TestListJobsAcrossQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t, taskstest.Redis(t).Client(), Queue{})
	other := e.newQueue(Queue{})
	var want []string
	for i := range 7 {
		for _, q := range []string{e.queue, other} {
			j := e.addJob(q, NewJob{Title: fmt.Sprintf("%s %d", q, i)})
			r, err := e.store.Claim(e.ctx, q, "ann")
			if err != nil || r == nil || r.Job.ID != j.ID {
				t.Fatalf("claim: %v %v", r, err)
			}
			if _, err := e.store.Complete(e.ctx, j.ID, r.Hold(), nil); err != nil {
				t.Fatal(err)
			}
			want = append(want, j.ID)
			e.clock.Advance(time.Second)
		}
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := e.store.ListJobs(e.ctx, "", StateCompleted, 3, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if p.NextCursor == "" || pages > 10 {
			break
		}
		if pages == 0 {
			// The cursor's job goes (purged, say): the next page still
			// starts right after it.
			if _, err := e.rdb.ZRem(e.ctx, keysFor(e.queue).Completed(), localID(p.Jobs[2].ID)).Result(); err != nil {
				t.Fatal(err)
			}
		}
		cursor = p.NextCursor
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("completed jobs of every queue:\n%s\nwant, in the order they finished:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p, err := e.store.ListJobs(e.ctx, "", StateDead, 0, ""); err != nil || len(p.Jobs) != 0 || p.NextCursor != "" {
		t.Fatalf("no dead job anywhere: %+v, %v", p, err)
	}
	_, err := e.store.ListJobs(e.ctx, "", "lost", 10, "")
	wantErr(t, "bad state", err, ErrInvalid)
	_, err = e.store.ListJobs(e.ctx, "", StateReady, 10, "!!")
	wantErr(t, "bad cursor", err, ErrInvalid)
}

// A supervisor's action given the job as they saw it acts only while the
// job is still so: in that state, and, reserved, held by that holder.
func TestSuperviseAsSeen(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("seen", 50)
		e.claim("ann")
		_, _, err := e.store.Cancel(e.ctx, j.ID, "sam", true, AsSeen(StateReady, ""))
		wantErr(e.t, "cancel as seen ready, now reserved", err, ErrInvalidState)
		_, _, err = e.store.Requeue(e.ctx, j.ID, "sam", AsSeen(StateReserved, "bob"))
		wantErr(e.t, "force release as seen held by bob, held by ann", err, ErrInvalidState)
		if got := e.get(j.ID); got.State != StateReserved || got.ReservedBy != "ann" {
			e.t.Fatalf("refused actions changed the job: %s by %s", got.State, got.ReservedBy)
		}
		if _, holder, err := e.store.Requeue(e.ctx, j.ID, "sam", AsSeen(StateReserved, "ann")); err != nil || holder != "ann" {
			e.t.Fatalf("force release as seen: %q, %v", holder, err)
		}
		if _, _, err := e.store.Cancel(e.ctx, j.ID, "sam", false, AsSeen(StateReady, "")); err != nil {
			e.t.Fatalf("cancel as seen: %v", err)
		}
	})
}

// complete claims and completes the env queue's next job with the result
// {"n": n} and answers it.
func (e *env) completeNext(n int) *Job {
	e.t.Helper()
	r := e.claim("ann")
	j, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)))
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// A finished state's list newest first pages back through the jobs, each
// once, as jobs finish and leave the index between pages; a time range
// keeps the jobs that finished in it, in either order.
func TestListJobsNewestFirst(t *testing.T) {
	onEachBackend(t, func(e *env) {
		t := e.t
		var done []*Job // in the order they finished
		for i := range 12 {
			e.add("doc "+strconv.Itoa(i), 50)
			done = append(done, e.completeNext(i))
			if i%2 == 1 {
				e.clock.Advance(time.Minute) // pairs share a finish time
			}
		}
		list := func(limit int, cursor string, opts ...ListOption) Page {
			t.Helper()
			p, err := e.store.ListJobs(e.ctx, e.queue, StateCompleted, limit, cursor, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		ids := func(jobs []*Job) string {
			var s []string
			for _, j := range jobs {
				s = append(s, j.ID)
			}
			return strings.Join(s, "\n")
		}
		var want []*Job
		for i := len(done) - 1; i >= 0; i-- {
			want = append(want, done[i])
		}
		var got []*Job
		cursor := ""
		for pages := 0; pages < 10; pages++ {
			p := list(5, cursor, Descending, WithoutPayloads)
			got = append(got, p.Jobs...)
			if pages == 0 {
				// Newer jobs finish meanwhile, and the cursor's own job
				// leaves the index: the next page still starts right
				// after it, going back in time.
				e.add("late", 50)
				e.completeNext(99)
				if _, err := e.rdb.ZRem(e.ctx, keysFor(e.queue).Completed(), localID(p.Jobs[4].ID)).Result(); err != nil {
					t.Fatal(err)
				}
			}
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		if ids(got) != ids(want) {
			t.Fatalf("newest first:\n%s\nwant:\n%s", ids(got), ids(want))
		}

		// The range of the jobs done[0]..done[5] (done[7] left the index
		// above), by their finish times, in pages of 4 both ways, each job
		// with its result.
		since, until := *done[1].FinishedAt, *done[5].FinishedAt
		backwards := slices.Clone(done[:6])
		slices.Reverse(backwards)
		for _, order := range []struct {
			name string
			opts []ListOption
			want []*Job
		}{
			{"oldest first", nil, done[:6]},
			{"newest first", []ListOption{Descending}, backwards},
		} {
			got, cursor = nil, ""
			for pages := 0; pages < 10; pages++ {
				p := list(4, cursor, append(order.opts, Finished(since, until), WithResults)...)
				got = append(got, p.Jobs...)
				if p.NextCursor == "" {
					break
				}
				cursor = p.NextCursor
			}
			if ids(got) != ids(order.want) {
				t.Fatalf("%s, finished in a range:\n%s\nwant:\n%s", order.name, ids(got), ids(order.want))
			}
			for _, j := range got {
				if len(j.Result) == 0 || !bytes.Equal(j.Result, done[slices.IndexFunc(done, func(d *Job) bool { return d.ID == j.ID })].Result) {
					t.Fatalf("%s answers result %s", j.ID, j.Result)
				}
			}
		}
		if p := list(10, "", Finished(since.Add(time.Hour), time.Time{})); len(p.Jobs) != 0 || p.NextCursor != "" {
			t.Fatalf("nothing finished after the range: %+v", p)
		}
		if p := list(10, "", WithoutPayloads); p.Jobs[0].Result != nil {
			t.Fatalf("a listing without WithResults answers result %s", p.Jobs[0].Result)
		}
		_, err := e.store.ListJobs(e.ctx, e.queue, StateReady, 10, "", Finished(since, until))
		wantErr(t, "a time range of ready jobs", err, ErrInvalid)
		_, err = e.store.ListJobs(e.ctx, e.queue, StateCompleted, 10, "", Finished(until, since))
		wantErr(t, "a range that ends before it starts", err, ErrInvalid)
	})
}
