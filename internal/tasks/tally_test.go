package tasks

import (
	"math"
	"testing"
	"time"
)

// Every reservation that ends counts once in its holder's tally of the
// day, by how it ended; completions by how long they were held. Tallies
// add up across queues, and a day more than a week old counts no more.
func TestTallies(t *testing.T) {
	onEachBackend(t, func(e *env) {
		other := e.newQueue(Queue{LeaseSeconds: 900})
		e.queue = e.newQueue(Queue{MaxAttempts: 10, LeaseSeconds: 900})
		for range 9 {
			e.add("job", 50)
		}
		e.addJob(other, NewJob{Title: "elsewhere"})
		held := func(who string, d time.Duration) {
			r := e.claim(who)
			e.clock.Advance(d)
			e.complete(r)
		}
		held("olga", 2*time.Minute)
		held("olga", 4*time.Minute)
		held("ivan", 30*time.Second)
		r := e.claim("olga")
		if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		r = e.claim("olga")
		if _, err := e.store.Skip(e.ctx, r.Job.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		r = e.claim("olga")
		if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "unreadable"); err != nil {
			t.Fatal(err)
		}
		e.claim("olga")
		e.clock.Advance(16 * time.Minute)
		if moved, _, err := e.reclaim(10); err != nil || len(moved) != 1 {
			t.Fatalf("reclaim = %v, %v", moved, err)
		}
		r = e.claim("olga")
		if _, _, err := e.store.Requeue(e.ctx, r.Job.ID, "sam"); err != nil {
			t.Fatal(err)
		}
		r = e.claim("olga")
		if _, _, err := e.store.Cancel(e.ctx, r.Job.ID, "sam", true); err != nil {
			t.Fatal(err)
		}
		// Complete & next counts the completion; a claim alone counts nothing.
		r = e.claim("olga")
		e.clock.Advance(3 * time.Minute)
		_, next, _, err := e.store.CompleteNext(e.ctx, r.Job.ID, r.Hold(), nil)
		if err != nil || next == nil {
			t.Fatalf("CompleteNext = %v, %v", next, err)
		}
		e.clock.Advance(5 * time.Minute)
		e.complete(next)
		o, err := e.store.Claim(e.ctx, other, "olga")
		if err != nil || o == nil {
			t.Fatalf("Claim(other) = %v, %v", o, err)
		}
		e.clock.Advance(10 * time.Minute)
		if _, err := e.store.Complete(e.ctx, o.Job.ID, o.Hold(), nil); err != nil {
			t.Fatal(err)
		}

		tallies := func() map[string]*PersonTally {
			t.Helper()
			ts, err := e.store.Tallies(e.ctx, []string{e.queue, other})
			if err != nil {
				t.Fatal(err)
			}
			return ts
		}
		ts := tallies()
		olga := Tally{Completed: 5, GivenBack: 2, Failed: 1, Expired: 1, TakenBack: 2}
		if got := ts["olga"]; got == nil || !sameCounts(got.Today, olga) || !sameCounts(got.Window, olga) {
			t.Fatalf("olga = %+v, want today and this week %+v", got, olga)
		}
		if got := ts["olga"].Today.Ended(); got != 11 {
			t.Fatalf("olga ended %d reservations, want 11", got)
		}
		// Held 2, 3, 4, 5 and 10 minutes: the median is 4.
		within(t, "olga's median", ts["olga"].Today.MedianHandling(), 4*time.Minute, 4*time.Minute)
		within(t, "ivan's median", ts["ivan"].Today.MedianHandling(), 30*time.Second, 30*time.Second)
		if len(ts) != 2 {
			t.Fatalf("tallies of %d people, want olga and ivan: %v", len(ts), ts)
		}

		// The next day: today starts again, the week goes on.
		e.clock.Advance(24 * time.Hour)
		held("ivan", time.Minute)
		ts = tallies()
		if got := ts["ivan"]; got.Today.Completed != 1 || got.Window.Completed != 2 {
			t.Fatalf("ivan the next day = %+v", got)
		}
		if got := ts["olga"]; got.Today.Ended() != 0 || got.Window.Ended() != 11 {
			t.Fatalf("olga the next day = %+v", got)
		}
		// A week after the first day, it is out of the window.
		e.clock.Advance(6 * 24 * time.Hour)
		ts = tallies()
		if got := ts["ivan"]; got.Today.Completed != 0 || got.Window.Completed != 1 {
			t.Fatalf("ivan a week on = %+v", got)
		}
		if _, ok := ts["olga"]; ok {
			t.Fatalf("olga a week on = %+v, want none", ts["olga"])
		}
		// Eight days after the first, its field is used again, from zero.
		e.clock.Advance(24 * time.Hour)
		held("olga", time.Minute)
		if got := tallies()["olga"]; got.Today.Completed != 1 || got.Window.Ended() != 1 {
			t.Fatalf("olga eight days on = %+v", got)
		}
	})
}

func sameCounts(a, b Tally) bool {
	return a.Completed == b.Completed && a.GivenBack == b.GivenBack && a.Failed == b.Failed &&
		a.Expired == b.Expired && a.TakenBack == b.TakenBack
}

// within fails unless d is within the buckets' 4.5% of [lo, hi].
func within(t *testing.T, what string, d, lo, hi time.Duration) {
	t.Helper()
	if float64(d) < 0.955*float64(lo) || float64(d) > 1.045*float64(hi) {
		t.Fatalf("%s = %v, want %v to %v", what, d, lo, hi)
	}
}

// A tally's handling buckets: each time's bucket middle is within 4.5%.
func TestMedianHandlingBuckets(t *testing.T) {
	for _, d := range []time.Duration{50 * time.Millisecond, time.Second, 7 * time.Second, 95 * time.Second, 20 * time.Minute, 9 * time.Hour} {
		b := max(0, int(handlingPerDoubling*math.Log2(float64(d)/float64(handlingBase))))
		tl := Tally{Completed: 1, handling: map[int]int64{b: 1}}
		if d >= handlingBase {
			within(t, d.String(), tl.MedianHandling(), d, d)
		} else if got := tl.MedianHandling(); got > 2*handlingBase {
			t.Fatalf("%v = %v", d, got)
		}
	}
	if (Tally{}).MedianHandling() != 0 {
		t.Fatal("the median of no completions is not 0")
	}
}
