package tasks

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// titleOf names the reserved job, or says that there is none.
func titleOf(r *Reservation) string {
	if r == nil {
		return "nothing"
	}
	return fmt.Sprintf("%q", r.Job.Title)
}

// TestClaimAnyRanksAcrossQueues checks ClaimAny's rule: each queue's next
// job counts its priority plus, in an ageing queue, a point per
// aging_seconds waited; the highest count wins, then the longest wait;
// whatever order the queues are named in.
func TestClaimAnyRanksAcrossQueues(t *testing.T) {
	// waiting is one queue (strict when aging is 0) with one job that has
	// waited so long when ClaimAny runs.
	type waiting struct {
		aging    int
		priority int
		waited   time.Duration
	}
	for _, tc := range []struct {
		name string
		jobs []waiting
		want int // which of jobs is claimed
	}{
		{"ageing queue's high priority that waited a day over a strict low priority",
			[]waiting{{0, 1, 0}, {60, 100, 24 * time.Hour}}, 1},
		{"a day of ageing outweighs a strict priority 100",
			[]waiting{{0, 100, 24 * time.Hour}, {60, 1, 24 * time.Hour}}, 1},
		{"strict priority 80 over 10 plus 30 minutes of ageing",
			[]waiting{{0, 80, 0}, {60, 10, 30 * time.Minute}}, 0},
		{"10 plus 71 minutes of ageing over strict priority 80",
			[]waiting{{0, 80, 2 * time.Hour}, {60, 10, 71 * time.Minute}}, 1},
		{"points by the aging seconds of each queue",
			[]waiting{{120, 10, 2 * time.Hour}, {60, 50, 10 * time.Minute}}, 0}, // 70 over 60
		{"equal points and the strict job waited longest",
			[]waiting{{60, 40, 10 * time.Minute}, {0, 50, 20 * time.Minute}}, 1},
		{"equal points and the ageing job waited longest",
			[]waiting{{0, 60, 5 * time.Minute}, {60, 40, 20 * time.Minute}}, 1},
		{"equal strict priorities and the longest wait",
			[]waiting{{0, 50, time.Minute}, {0, 50, 5 * time.Minute}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onEachBackend(t, func(e *env) {
				queues := make([]string, len(tc.jobs))
				for i, w := range tc.jobs {
					queues[i] = e.newQueue(Queue{AgingSeconds: w.aging})
				}
				// Enqueue the longest waiting first, so that each has waited
				// as long as it says when the clock stops.
				order := make([]int, len(tc.jobs))
				for i := range order {
					order[i] = i
				}
				slices.SortFunc(order, func(x, y int) int { return int(tc.jobs[y].waited - tc.jobs[x].waited) })
				start := e.clock.Now()
				longest := tc.jobs[order[0]].waited
				ids := make([]string, len(tc.jobs))
				for _, i := range order {
					if at := start.Add(longest - tc.jobs[i].waited); at.After(e.clock.Now()) {
						e.clock.Advance(at.Sub(e.clock.Now()))
					}
					p := tc.jobs[i].priority
					ids[i] = e.addJob(queues[i], NewJob{Title: fmt.Sprint("job ", i), Priority: &p}).ID
				}
				e.clock.Advance(start.Add(longest).Sub(e.clock.Now()))
				// Either order of the queues; the job goes back to its
				// place in between.
				reversed := slices.Clone(queues)
				slices.Reverse(reversed)
				for _, named := range [][]string{queues, reversed} {
					r, err := e.store.ClaimAny(e.ctx, named, "ann")
					if err != nil || r == nil {
						e.t.Fatalf("ClaimAny(%v) = %s, %v", named, titleOf(r), err)
					}
					if r.Job.ID != ids[tc.want] {
						e.t.Fatalf("ClaimAny(%v) claimed %q, want %q", named, r.Job.Title, fmt.Sprint("job ", tc.want))
					}
					if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
						e.t.Fatal(err)
					}
				}
			})
		})
	}
}

func TestClaimAnyPastSkippedJobs(t *testing.T) {
	onEachBackend(t, func(e *env) {
		best, next := e.queue, e.newQueue(Queue{})
		top := e.add("best queue's top", 90)
		second := e.add("best queue's second", 70)
		other := e.addJob(next, NewJob{Title: "next queue's top", Priority: intRef(80)})
		queues := []string{next, best}

		r := e.claim("ann")
		if r.Job.ID != top.ID {
			e.t.Fatalf("claimed %q, want %q", r.Job.Title, top.Title)
		}
		if _, err := e.store.Skip(e.ctx, top.ID, r.Hold()); err != nil {
			e.t.Fatal(err)
		}
		// The best queue's head is skipped: that queue's next job for ann.
		for _, want := range []*Job{second, other} {
			r, err := e.store.ClaimAny(e.ctx, queues, "ann")
			if err != nil || r == nil || r.Job.ID != want.ID {
				e.t.Fatalf("ClaimAny = %s, %v; want %q", titleOf(r), err, want.Title)
			}
		}
		// Only the skipped job is left: nothing for ann, all for bob.
		if r, err := e.store.ClaimAny(e.ctx, queues, "ann"); err != nil || r != nil {
			e.t.Fatalf("ClaimAny with only a skipped job left = %s, %v; want nothing", titleOf(r), err)
		}
		if r, err := e.store.ClaimAny(e.ctx, queues, "bob"); err != nil || r == nil || r.Job.ID != top.ID {
			e.t.Fatalf("bob's ClaimAny = %s, %v; want %q", titleOf(r), err, top.Title)
		}
	})
}

func TestClaimAnyWithNothingReady(t *testing.T) {
	onEachBackend(t, func(e *env) {
		empty := e.newQueue(Queue{AgingSeconds: 60})
		e.addJob(e.queue, NewJob{Title: "later", DelaySeconds: 60})
		held := e.add("held", 50)
		if r := e.claim("bob"); r.Job.ID != held.ID {
			e.t.Fatalf("bob claimed %q", r.Job.Title)
		}
		for _, queues := range [][]string{{e.queue, empty}, {empty}, {"no-such-queue", e.queue}, nil} {
			if r, err := e.store.ClaimAny(e.ctx, queues, "ann"); err != nil || r != nil {
				e.t.Fatalf("ClaimAny(%v) = %s, %v; want nothing", queues, titleOf(r), err)
			}
		}
		// Once due, the scheduled job is there to claim.
		e.clock.Advance(61 * time.Second)
		if r, err := e.store.ClaimAny(e.ctx, []string{empty, e.queue}, "ann"); err != nil || r == nil || r.Job.Title != "later" {
			e.t.Fatalf("ClaimAny after the run time = %s, %v; want the scheduled job", titleOf(r), err)
		}
	})
}

func TestClaimAnyWithClaimKey(t *testing.T) {
	onEachBackend(t, func(e *env) {
		low, high := e.queue, e.newQueue(Queue{AgingSeconds: 60})
		queues := []string{low, high}
		first := e.addJob(high, NewJob{Title: "first", Priority: intRef(60)})
		e.add("low", 10)
		claim := func(key string) *Reservation {
			e.t.Helper()
			r, err := e.store.ClaimAny(e.ctx, queues, "ann", WithClaimKey(key))
			if err != nil || r == nil {
				e.t.Fatalf("ClaimAny with key %q = %s, %v", key, titleOf(r), err)
			}
			return r
		}
		r := claim("k1")
		if r.Job.ID != first.ID {
			e.t.Fatalf("claimed %q, want %q", r.Job.Title, first.Title)
		}
		// A better job turns up in the other queue: the key still answers
		// the reservation it made, wherever it is, by either claim.
		better := e.add("better", 90)
		e.clock.Advance(time.Second)
		if again := claim("k1"); again.Job.ID != r.Job.ID || again.Token != r.Token || !again.Deadline.Equal(r.Deadline) {
			e.t.Fatalf("ClaimAny retried with k1 = %q %s %v, want %q %s %v",
				again.Job.Title, again.Token, again.Deadline, r.Job.Title, r.Token, r.Deadline)
		}
		if again, err := e.store.Claim(e.ctx, high, "ann", WithClaimKey("k1")); err != nil || again == nil || again.Token != r.Token {
			e.t.Fatalf("Claim of %s with k1 = %s, %v; want the same reservation", high, titleOf(again), err)
		}
		// Another key, another job: the best one.
		if other := claim("k2"); other.Job.ID != better.ID {
			e.t.Fatalf("ClaimAny with k2 claimed %q, want %q", other.Job.Title, better.Title)
		}
		// Once the reservation ends, the key claims anew.
		if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), nil); err != nil {
			e.t.Fatal(err)
		}
		if anew := claim("k1"); anew.Job.Title != "low" || anew.Token == r.Token {
			e.t.Fatalf("ClaimAny with k1 after it completed = %q, want %q", anew.Job.Title, "low")
		}
	})
}

// TestClaimAnyKeyAfterExpiry claims with a key, lets the reservation
// expire (nothing takes it back yet) and claims with the key again: the key
// names no live reservation, so the claim ranks every queue afresh.
func TestClaimAnyKeyAfterExpiry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxAttempts int
		want        string
	}{
		{"the expired job is dead", 1, "other"},
		{"the expired job is back in line behind a better one", 5, "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onEachBackend(t, func(e *env) {
				first := e.newQueue(Queue{LeaseSeconds: 30, MaxAttempts: tc.maxAttempts})
				second := e.newQueue(Queue{})
				queues := []string{first, second}
				e.addJob(first, NewJob{Title: "expires", Priority: intRef(60)})
				r, err := e.store.ClaimAny(e.ctx, queues, "ann", WithClaimKey("k"))
				if err != nil || r == nil || r.Job.Title != "expires" {
					e.t.Fatalf("ClaimAny = %s, %v; want %q", titleOf(r), err, "expires")
				}
				e.addJob(second, NewJob{Title: "other", Priority: intRef(90)})
				e.clock.Advance(31 * time.Second)
				r, err = e.store.ClaimAny(e.ctx, queues, "ann", WithClaimKey("k"))
				if err != nil || r == nil || r.Job.Title != tc.want {
					e.t.Fatalf("ClaimAny with the key of an expired reservation = %s, %v; want %q", titleOf(r), err, tc.want)
				}
			})
		})
	}
}

func TestClaimOnlyJob(t *testing.T) {
	onEachBackend(t, func(e *env) {
		top := e.add("top", 90)
		wanted := e.add("wanted", 10)
		elsewhere := e.addJob(e.newQueue(Queue{}), NewJob{Title: "elsewhere"})
		only := func(operator string, j *Job) (*Reservation, error) {
			return e.store.Claim(e.ctx, e.queue, operator, OnlyJob(j.ID))
		}
		notReady := func(what string, err error) {
			e.t.Helper()
			if !errors.Is(err, ErrNotReady) {
				e.t.Fatalf("%s: error %v, want %v", what, err, ErrNotReady)
			}
		}

		r, err := only("ann", wanted)
		if err != nil || r == nil || r.Job.ID != wanted.ID || r.Job.ReservedBy != "ann" {
			e.t.Fatalf("Claim(OnlyJob(wanted)) = %s, %v; want wanted", titleOf(r), err)
		}
		if s := e.stats(); s.Ready != 1 || s.Reserved != 1 {
			e.t.Fatalf("stats = %+v, want top still ready", s)
		}
		// Claimed by someone else, or by the claimer: not ready.
		for _, who := range []string{"bob", "ann"} {
			_, err := only(who, wanted)
			notReady(who+"'s claim of a reserved job", err)
		}
		// Skipped by ann: not ready for ann, ready for bob.
		if _, err := e.store.Skip(e.ctx, wanted.ID, r.Hold()); err != nil {
			e.t.Fatal(err)
		}
		_, err = only("ann", wanted)
		notReady("claim of a job the operator skipped", err)
		if r, err := only("bob", wanted); err != nil || r == nil || r.Job.ID != wanted.ID {
			e.t.Fatalf("bob's Claim(OnlyJob(wanted)) = %s, %v", titleOf(r), err)
		}
		// A job of another queue, and one that does not exist.
		_, err = only("ann", elsewhere)
		notReady("claim of another queue's job", err)
		_, err = e.store.Claim(e.ctx, e.queue, "ann", OnlyJob("nope"))
		notReady("claim of no job", err)
		// None of it touched the top job.
		if j := e.get(top.ID); j.State != StateReady {
			e.t.Fatalf("top is %s, want ready", j.State)
		}
	})
}

// A claim key's entry belongs to the reservation it names: when a retry
// after the first reservation ran out filed the key for a second one, the
// late reclaim of the first (more ran out than a claim takes back) leaves
// it, so the key still answers the second and claims nothing more.
func TestClaimKeyOutlivesALateReclaim(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.enqueueMany(promoteOnClaim + 5)
		for range promoteOnClaim + 1 {
			e.claim("bob")
		}
		e.clock.Advance(time.Second)
		first, err := e.store.Claim(e.ctx, e.queue, "olga", WithClaimKey("k1"))
		if err != nil || first == nil {
			e.t.Fatal(first, err)
		}
		e.clock.Advance(301 * time.Second) // every reservation ran out
		second, err := e.store.Claim(e.ctx, e.queue, "olga", WithClaimKey("k1"))
		if err != nil || second == nil || second.Job.ID == first.Job.ID {
			e.t.Fatalf("retry after the first ran out: %v, %v; want another job", second, err)
		}
		if j := e.get(first.Job.ID); j.State != StateReserved {
			e.t.Fatalf("the first reservation was taken back by the claim (%s): the test needs it left for later", j.State)
		}
		if _, _, err := e.store.ReclaimExpired(e.ctx, e.queue, 500); err != nil {
			e.t.Fatal(err)
		}
		if j := e.get(first.Job.ID); j.State != StateReady {
			e.t.Fatalf("the first job is %s after the reclaim", j.State)
		}
		again, err := e.store.Claim(e.ctx, e.queue, "olga", WithClaimKey("k1"))
		if err != nil || again == nil {
			e.t.Fatal(again, err)
		}
		if again.Job.ID != second.Job.ID || again.Token != second.Token {
			e.t.Fatalf("retry with k1 while %s (claimed with k1) lasts claimed %s", second.Job.ID, again.Job.ID)
		}
	})
}
