package tasks

import (
	"testing"
	"time"
)

// A queue's numbers: sampled per minute (ready now, claims, completions
// and deaths within the minute), kept a day.
func TestNumbers(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{MaxAttempts: 1})
		for range 4 {
			e.add("job", 50)
		}
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		a, b := e.claim("olga"), e.claim("olga")
		e.complete(a)
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Fail(e.ctx, b.Job.ID, b.Hold(), "no"); err != nil {
			t.Fatal(err)
		}
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil { // the same minute, sampled again
			t.Fatal(err)
		}
		ns, err := e.store.Numbers(e.ctx, e.queue)
		if err != nil || len(ns) != 2 {
			t.Fatalf("numbers = %+v, %v", ns, err)
		}
		start := e.clock.Now().Truncate(time.Minute)
		want := []Minute{
			{At: start.Add(-time.Minute), Ready: 4},
			{At: start, Ready: 2, Claims: 2, Completed: 1, Dead: 1},
		}
		for i := range want {
			if !ns[i].At.Equal(want[i].At) || ns[i].Ready != want[i].Ready || ns[i].Claims != want[i].Claims ||
				ns[i].Completed != want[i].Completed || ns[i].Dead != want[i].Dead {
				t.Fatalf("minute %d = %+v, want %+v", i, ns[i], want[i])
			}
		}
		// A day later, those minutes are gone.
		e.clock.Advance(NumbersKept*time.Minute + time.Minute)
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		if ns, _ := e.store.Numbers(e.ctx, e.queue); len(ns) != 1 || ns[0].Ready != 2 {
			t.Fatalf("a day later = %+v", ns)
		}
	})
}
