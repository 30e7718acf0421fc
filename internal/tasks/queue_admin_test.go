package tasks

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"claimdesk/internal/keys"
)

// Creating a queue refuses a taken name and leaves that queue as it was.
func TestCreateQueueRefusesTakenName(t *testing.T) {
	onEachBackend(t, func(e *env) {
		name := e.queue + "-new"
		q, err := e.store.CreateQueue(e.ctx, Queue{Name: name, LeaseSeconds: 600, MaxAttempts: 3, MaxHeld: 2})
		if err != nil || q.LeaseSeconds != 600 || q.MaxAttempts != 3 || q.MaxHeld != 2 || q.MaxExtensions != 10 {
			t.Fatalf("CreateQueue = %+v, %v", q, err)
		}
		if _, err := e.store.CreateQueue(e.ctx, Queue{Name: name}); !errors.Is(err, ErrQueueExists) {
			t.Fatalf("CreateQueue of a taken name: %v, want ErrQueueExists", err)
		}
		got, err := e.store.Queue(e.ctx, name)
		if err != nil || got != q {
			t.Fatalf("after the refused create: %+v, %v; want %+v", got, err, q)
		}
		if names, _ := e.store.QueueNames(e.ctx); !slices.Contains(names, name) {
			t.Fatalf("QueueNames = %v, want %s listed", names, name)
		}
		if _, err := e.store.CreateQueue(e.ctx, Queue{Name: name + "-bad", LeaseSeconds: -1}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("CreateQueue with a bad lease: %v, want ErrInvalid", err)
		}
		if _, err := e.store.Queue(e.ctx, name+"-bad"); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("a refused queue exists: %v", err)
		}
	})
}

// A patch changes the settings it gives and only those; the result must
// be valid as a whole; nothing changes when it is not.
func TestPatchQueue(t *testing.T) {
	onEachBackend(t, func(e *env) {
		before, err := e.store.Queue(e.ctx, e.queue)
		if err != nil {
			t.Fatal(err)
		}
		lease, held := 120, 3
		q, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{LeaseSeconds: &lease, MaxHeld: &held})
		if err != nil {
			t.Fatal(err)
		}
		want := before
		want.LeaseSeconds, want.MaxHeld = 120, 3
		if q != want {
			t.Fatalf("patched = %+v, want %+v", q, want)
		}
		if got, _ := e.store.Queue(e.ctx, e.queue); got != want {
			t.Fatalf("stored = %+v, want %+v", got, want)
		}
		// A lease beyond the max hold is refused, and nothing changes.
		long := want.MaxHoldSeconds + 1
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{LeaseSeconds: &long, MaxHeld: &lease}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("patch past the max hold: %v, want ErrInvalid", err)
		}
		if got, _ := e.store.Queue(e.ctx, e.queue); got != want {
			t.Fatalf("after a refused patch = %+v, want %+v", got, want)
		}
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue+"-none", QueuePatch{LeaseSeconds: &lease}); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("patch of a missing queue: %v", err)
		}
		// Pausing is kept by a put of every setting.
		if _, err := e.store.SetPaused(e.ctx, e.queue, true); err != nil {
			t.Fatal(err)
		}
		q, err = e.store.PutQueue(e.ctx, Queue{Name: e.queue, LeaseSeconds: 60})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := e.store.Queue(e.ctx, e.queue); !got.Paused || got.LeaseSeconds != 60 || got.MaxHeld != 0 {
			t.Fatalf("after a put = %+v (answered %+v), want still paused, lease 60, no hold cap", got, q)
		}
		if _, err := e.store.SetPaused(e.ctx, e.queue+"-none", true); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("pause of a missing queue: %v", err)
		}
	})
}

// A paused queue takes enqueues and finishes what is held, but claims
// nothing new, by either claim; resumed, it claims again.
func TestPausedQueueClaimsNothing(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.add("first", 50)
		held := e.claim("olga")
		if q, err := e.store.SetPaused(e.ctx, e.queue, true); err != nil || !q.Paused {
			t.Fatalf("SetPaused = %+v, %v", q, err)
		}
		second := e.add("second", 50) // enqueues still go in
		if _, err := e.store.Claim(e.ctx, e.queue, "petra"); !errors.Is(err, ErrQueuePaused) {
			t.Fatalf("Claim from a paused queue: %v, want ErrQueuePaused", err)
		}
		if _, err := e.store.ClaimAny(e.ctx, []string{e.queue}, "petra"); !errors.Is(err, ErrQueuePaused) {
			t.Fatalf("ClaimAny of only a paused queue: %v, want ErrQueuePaused", err)
		}
		done, next, why, err := e.store.CompleteNext(e.ctx, held.Job.ID, held.Hold(), nil)
		if err != nil || done.State != StateCompleted || next != nil || !errors.Is(why, ErrQueuePaused) {
			t.Fatalf("CompleteNext in a paused queue = %v, %v, %v, %v; want completed, no next, paused", done, next, why, err)
		}
		if st := e.stats(); st.Ready != 1 || st.Reserved != 0 {
			t.Fatalf("stats = %+v, want the second job still ready", st)
		}
		// Another queue of the operator still gives work to ClaimAny.
		other := e.newQueue(Queue{})
		o := e.addJob(other, NewJob{Title: "elsewhere"})
		r, err := e.store.ClaimAny(e.ctx, []string{e.queue, other}, "petra")
		if err != nil || r == nil || r.Job.ID != o.ID {
			t.Fatalf("ClaimAny past a paused queue = %v, %v; want %s", r, err, o.ID)
		}
		if q, err := e.store.SetPaused(e.ctx, e.queue, false); err != nil || q.Paused {
			t.Fatalf("resume = %+v, %v", q, err)
		}
		if r := e.claim("petra"); r.Job.ID != second.ID {
			t.Fatalf("claimed %s after resuming, want %s", r.Job.ID, second.ID)
		}
	})
}

// max_held caps how many of a queue's jobs one person holds at once: the
// claim beyond it is refused and changes nothing; finishing one makes room,
// and Complete & next, which frees one as it claims, goes on working.
func TestHoldLimit(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{MaxHeld: 2})
		for _, title := range []string{"a", "b", "c", "d"} {
			e.add(title, 50)
		}
		a, b := e.claim("olga"), e.claim("olga")
		if _, err := e.store.Claim(e.ctx, e.queue, "olga"); !errors.Is(err, ErrHoldLimit) {
			t.Fatalf("a third claim: %v, want ErrHoldLimit", err)
		}
		if _, err := e.store.ClaimAny(e.ctx, []string{e.queue}, "olga"); !errors.Is(err, ErrHoldLimit) {
			t.Fatalf("a third claim across queues: %v, want ErrHoldLimit", err)
		}
		if st := e.stats(); st.Ready != 2 || st.Reserved != 2 {
			t.Fatalf("stats = %+v, want 2 ready, 2 reserved", st)
		}
		// Someone else is not held back by olga's cap.
		c := e.claim("petra")
		_, next, why, err := e.store.CompleteNext(e.ctx, a.Job.ID, a.Hold(), nil)
		if err != nil || next == nil || why != nil {
			t.Fatalf("CompleteNext at the cap = %v, %v, %v; want the next job", next, why, err)
		}
		if _, err := e.store.Release(e.ctx, b.Job.ID, b.Hold()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Release(e.ctx, c.Job.ID, c.Hold()); err != nil {
			t.Fatal(err)
		}
		e.claim("olga") // one held (next), one more allowed
		if _, err := e.store.Claim(e.ctx, e.queue, "olga"); !errors.Is(err, ErrHoldLimit) {
			t.Fatalf("claim at the cap again: %v, want ErrHoldLimit", err)
		}
	})
}

// A claim retried with its key answers its reservation even at the cap.
func TestHoldLimitAnswersARetry(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{MaxHeld: 1})
		e.add("a", 50)
		e.add("b", 50)
		r, err := e.store.Claim(e.ctx, e.queue, "olga", WithClaimKey("k1"))
		if err != nil || r == nil {
			t.Fatalf("claim = %v, %v", r, err)
		}
		again, err := e.store.Claim(e.ctx, e.queue, "olga", WithClaimKey("k1"))
		if err != nil || again == nil || again.Job.ID != r.Job.ID {
			t.Fatalf("retry at the cap = %v, %v; want %s again", again, err, r.Job.ID)
		}
	})
}

// Only an empty queue is deleted, and then every key of it goes.
func TestDeleteQueue(t *testing.T) {
	onEachBackend(t, func(e *env) {
		j := e.add("a", 50)
		if err := e.store.DeleteQueue(e.ctx, e.queue); !errors.Is(err, ErrQueueNotEmpty) {
			t.Fatalf("delete with a job ready: %v, want ErrQueueNotEmpty", err)
		}
		r := e.claim("olga")
		if err := e.store.DeleteQueue(e.ctx, e.queue); !errors.Is(err, ErrQueueNotEmpty) {
			t.Fatalf("delete with a job reserved: %v, want ErrQueueNotEmpty", err)
		}
		e.complete(r)
		if err := e.store.DeleteQueue(e.ctx, e.queue); err != nil {
			t.Fatalf("delete of an empty queue: %v", err)
		}
		if _, err := e.store.Queue(e.ctx, e.queue); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("deleted queue: %v", err)
		}
		if names, _ := e.store.QueueNames(e.ctx); slices.Contains(names, e.queue) {
			t.Fatalf("QueueNames = %v still lists %s", names, e.queue)
		}
		if _, err := e.store.Get(e.ctx, j.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a job of the deleted queue: %v, want ErrNotFound", err)
		}
		for _, k := range keys.ForQueue(e.queue).All() {
			if n, err := e.rdb.Exists(e.ctx, k).Result(); err != nil || n != 0 {
				t.Fatalf("key %s left: %d, %v", k, n, err)
			}
		}
		if err := e.store.DeleteQueue(e.ctx, e.queue); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("delete again: %v, want ErrQueueNotFound", err)
		}
		if _, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{Title: "late"}}); !errors.Is(err, ErrQueueNotFound) {
			t.Fatalf("enqueue into a deleted queue: %v, want ErrQueueNotFound", err)
		}
	})
}

// FindJobs filters a listing by person, batch, priority and title, looks
// through at most MaxScan jobs, and pages on from where it stopped.
func TestFindJobs(t *testing.T) {
	onEachBackend(t, func(e *env) {
		for i := range 12 {
			e.add(fmt.Sprintf("Invoice %02d from Nordwind", i), 50+i%2)
		}
		e.add("Something else", 51)
		hi := 51
		p, scanned, err := e.store.FindJobs(e.ctx, e.queue, StateReady, Filter{Text: "nordWIND", Priority: &hi}, 4, "")
		if err != nil || len(p.Jobs) != 4 || p.NextCursor == "" {
			t.Fatalf("first page = %d jobs, cursor %q, %v", len(p.Jobs), p.NextCursor, err)
		}
		for _, j := range p.Jobs {
			if j.Priority != 51 || !strings.Contains(j.Title, "Nordwind") {
				t.Fatalf("found %q (priority %d)", j.Title, j.Priority)
			}
		}
		rest, _, err := e.store.FindJobs(e.ctx, e.queue, StateReady, Filter{Text: "nordwind", Priority: &hi}, 4, p.NextCursor)
		if err != nil || len(rest.Jobs) != 2 || rest.NextCursor != "" {
			t.Fatalf("second page = %d jobs, cursor %q, %v", len(rest.Jobs), rest.NextCursor, err)
		}
		if scanned < 4 {
			t.Fatalf("scanned %d", scanned)
		}
		r := e.claim("olga")
		e.complete(r)
		done, _, err := e.store.FindJobs(e.ctx, e.queue, StateCompleted, Filter{Person: "olga"}, 10, "")
		if err != nil || len(done.Jobs) != 1 || done.Jobs[0].ID != r.Job.ID {
			t.Fatalf("olga's completed = %v, %v", done.Jobs, err)
		}
		if none, _, _ := e.store.FindJobs(e.ctx, e.queue, StateCompleted, Filter{Person: "petra"}, 10, ""); len(none.Jobs) != 0 {
			t.Fatalf("petra's completed = %v", none.Jobs)
		}
		if _, _, err := e.store.FindJobs(e.ctx, e.queue, StateReady, Filter{Text: strings.Repeat("x", 201)}, 10, ""); !errors.Is(err, ErrInvalid) {
			t.Fatalf("a long text: %v", err)
		}
	})
}

// Requeue all dead goes in bounded steps and says how many are left.
func TestRequeueDead(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{MaxAttempts: 1})
		for i := range 5 {
			e.add(fmt.Sprint("doomed ", i), 50)
			r := e.claim("olga")
			if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "no"); err != nil {
				t.Fatal(err)
			}
		}
		n, left, err := e.store.RequeueDead(e.ctx, e.queue, "sam", 3)
		if err != nil || n != 3 || left != 2 {
			t.Fatalf("first step = %d, %d left, %v", n, left, err)
		}
		n, left, err = e.store.RequeueDead(e.ctx, e.queue, "sam", 3)
		if err != nil || n != 2 || left != 0 {
			t.Fatalf("second step = %d, %d left, %v", n, left, err)
		}
		if st := e.stats(); st.Ready != 5 || st.Dead != 0 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

// A patch is checked against the settings it read, and written only if
// they still hold: two supervisors changing the lease and the max hold at
// once never store a lease longer than the max hold, though each change
// fits the settings its patch read.
func TestPatchQueueChecksWhatItRead(t *testing.T) {
	onEachBackend(t, func(e *env) {
		// A write from settings read before another write is refused.
		_, rev, err := e.store.queueAt(e.ctx, e.queue)
		if err != nil {
			e.t.Fatal(err)
		}
		hold := 600
		if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{MaxHoldSeconds: &hold}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.store.writeQueue(e.ctx, "update "+rev, e.queue, "lease_seconds", 1200); !errors.Is(err, errSettingsChanged) {
			e.t.Fatalf("a write from stale settings: %v, want errSettingsChanged", err)
		}
		if q, _ := e.store.Queue(e.ctx, e.queue); q.LeaseSeconds != 300 {
			e.t.Fatalf("the stale write stored a lease of %d", q.LeaseSeconds)
		}

		// Both at once, many times: each patch fits what it read.
		var wg sync.WaitGroup
		for _, p := range [][2]QueuePatch{
			{{LeaseSeconds: intRef(1200)}, {LeaseSeconds: intRef(300)}},
			{{MaxHoldSeconds: intRef(1800)}, {MaxHoldSeconds: intRef(600)}},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 100 {
					_, _, err := e.store.PatchQueue(e.ctx, e.queue, p[i%2])
					if err != nil && !errors.Is(err, ErrInvalid) {
						e.t.Errorf("patch: %v", err)
						return
					}
					if q, _ := e.store.Queue(e.ctx, e.queue); q.LeaseSeconds > q.MaxHoldSeconds {
						e.t.Errorf("stored a lease of %d s with a max hold of %d s", q.LeaseSeconds, q.MaxHoldSeconds)
						return
					}
				}
			}()
		}
		wg.Wait()
	})
}
