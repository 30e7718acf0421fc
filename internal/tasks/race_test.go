package tasks

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// enqueueMany adds n plain jobs to the env's queue in batches.
func (e *env) enqueueMany(n int) {
	e.t.Helper()
	for n > 0 {
		batch := make([]NewJob, min(n, MaxBatch))
		for i := range batch {
			batch[i] = NewJob{Title: "job"}
		}
		if _, err := e.store.Enqueue(e.ctx, e.queue, "pat", batch); err != nil {
			e.t.Fatal(err)
		}
		n -= len(batch)
	}
}

// parallel runs fn(i) for i in [0, n) on n goroutines and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

func TestRaceEveryJobClaimedOnce(t *testing.T) {
	onEachBackend(t, func(e *env) {
		const jobs, claimers = 2000, 50
		e.enqueueMany(jobs)
		var mu sync.Mutex
		claimedBy := map[string]int{}
		var failures atomic.Int64
		parallel(claimers, func(i int) {
			op := "op" + string(rune('A'+i%26)) + string(rune('a'+i/26))
			for {
				r, err := e.store.Claim(e.ctx, e.queue, op)
				if err != nil {
					failures.Add(1)
					return
				}
				if r == nil {
					return
				}
				mu.Lock()
				claimedBy[r.Job.ID]++
				mu.Unlock()
				if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), nil); err != nil {
					failures.Add(1)
				}
			}
		})
		if failures.Load() != 0 {
			t.Fatalf("%d claims or completes failed", failures.Load())
		}
		if len(claimedBy) != jobs {
			t.Fatalf("%d distinct jobs claimed, want %d", len(claimedBy), jobs)
		}
		for id, n := range claimedBy {
			if n != 1 {
				t.Fatalf("job %s claimed %d times", id, n)
			}
		}
		if s := e.stats(); s.Completed != jobs || s.Ready+s.Reserved != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

// TestRaceStaleTokensAfterForceRelease races the fencing token itself: ann
// holds live reservations while a supervisor takes them from her, bob claims
// and completes what comes back, and ann completes with her tokens. Every
// job is completed exactly once; ann's complete wins only where it came
// before the force release, and never overwrites bob's.
func TestRaceStaleTokensAfterForceRelease(t *testing.T) {
	onEachBackend(t, func(e *env) {
		const jobs = 300
		e.enqueueMany(jobs)
		held := make([]*Reservation, 0, jobs)
		for range jobs {
			held = append(held, e.claim("ann"))
		}
		var mu sync.Mutex
		annWon := map[string]bool{}
		var bobDone atomic.Int64
		parallel(6, func(i int) {
			switch {
			case i == 0:
				for _, r := range held {
					_, _, err := e.store.Requeue(e.ctx, r.Job.ID, "sam")
					if err != nil && !errors.Is(err, ErrInvalidState) {
						t.Errorf("force release: %v", err)
					}
				}
			case i < 3:
				for _, r := range held[(i-1)*jobs/2 : i*jobs/2] {
					_, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), json.RawMessage(`{"by":"ann"}`))
					switch {
					case err == nil:
						mu.Lock()
						annWon[r.Job.ID] = true
						mu.Unlock()
					case !errors.Is(err, ErrReservationLost):
						t.Errorf("ann's complete: %v", err)
					}
				}
			default:
				for range jobs {
					r, err := e.store.Claim(e.ctx, e.queue, "bob")
					if err != nil || r == nil {
						time.Sleep(time.Millisecond)
						continue
					}
					if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), json.RawMessage(`{"by":"bob"}`)); err == nil {
						bobDone.Add(1)
					}
				}
			}
		})
		// Whatever bob did not get to is still waiting: finish it.
		for {
			r, err := e.store.Claim(e.ctx, e.queue, "bob")
			if err != nil || r == nil {
				break
			}
			if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), json.RawMessage(`{"by":"bob"}`)); err == nil {
				bobDone.Add(1)
			}
		}
		if len(annWon) == 0 || bobDone.Load() == 0 {
			t.Logf("no race: ann completed %d, bob %d", len(annWon), bobDone.Load())
		}
		for _, r := range held {
			j := e.get(r.Job.ID)
			h, _, err := j.History()
			if err != nil {
				t.Fatal(err)
			}
			var completed, released int
			for _, en := range h {
				switch en.Action {
				case ActionCompleted:
					completed++
				case ActionForceReleased:
					released++
				}
			}
			who := `{"by":"bob"}`
			if annWon[r.Job.ID] {
				who = `{"by":"ann"}`
			}
			if j.State != StateCompleted || completed != 1 || string(j.Result) != who {
				t.Fatalf("job %s: %s, completed %d times, result %s, want %s (history %+v)", r.Job.ID, j.State, completed, j.Result, who, h)
			}
			if annWon[r.Job.ID] == (released == 1) {
				t.Fatalf("job %s: ann's complete won %v, force released %d times", r.Job.ID, annWon[r.Job.ID], released)
			}
		}
		if s := e.stats(); s.Completed != int64(len(annWon))+bobDone.Load() || s.Completed != jobs {
			t.Fatalf("stats = %+v, ann completed %d, bob %d", s, len(annWon), bobDone.Load())
		}
	})
}

func TestReclaimIsBounded(t *testing.T) {
	onEachBackend(t, func(e *env) {
		const jobs, limit = 20000, 500
		e.enqueueMany(jobs)
		var failures atomic.Int64
		parallel(20, func(int) {
			for range jobs / 20 {
				if r, err := e.store.Claim(e.ctx, e.queue, "ann"); err != nil || r == nil {
					failures.Add(1)
				}
			}
		})
		if failures.Load() != 0 || e.stats().Reserved != jobs {
			t.Fatalf("setup: %d failed claims, stats %+v", failures.Load(), e.stats())
		}
		e.clock.Advance(time.Hour)
		calls, total := 0, 0
		for {
			moved, more, err := e.store.ReclaimExpired(e.ctx, e.queue, limit)
			if err != nil {
				t.Fatal(err)
			}
			calls++
			if moved > limit {
				t.Fatalf("one call moved %d jobs, limit %d", moved, limit)
			}
			total += moved
			if !more {
				break
			}
		}
		if total != jobs || calls != jobs/limit {
			t.Fatalf("moved %d in %d calls, want %d in %d", total, calls, jobs, jobs/limit)
		}
		if s := e.stats(); s.Ready != jobs || s.Reserved != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}
