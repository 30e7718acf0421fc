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
		if _, err := e.store.Enqueue(e.ctx, e.queue, batch); err != nil {
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
				if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Token, nil); err != nil {
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

func TestRaceStaleTokensAfterReclaim(t *testing.T) {
	onEachBackend(t, func(e *env) {
		const jobs = 300
		e.enqueueMany(jobs)
		type claim struct{ id, token string }
		stale := make([]claim, 0, jobs)
		for range jobs {
			r := e.claim("ann")
			stale = append(stale, claim{r.Job.ID, r.Token})
		}
		e.clock.Advance(301 * time.Second) // every reservation of ann expired

		// At once: a reclaimer, ann completing with her stale tokens, and
		// bob claiming and completing what comes back.
		var annWon, bobDone atomic.Int64
		parallel(6, func(i int) {
			switch {
			case i == 0:
				for {
					_, more, err := e.store.ReclaimExpired(e.ctx, e.queue, 7)
					if err != nil || !more {
						return
					}
				}
			case i < 3:
				for _, c := range stale[i-1:] {
					_, err := e.store.Complete(e.ctx, c.id, c.token, json.RawMessage(`{"by":"ann"}`))
					if !errors.Is(err, ErrReservationLost) {
						annWon.Add(1)
					}
				}
			default:
				for range jobs {
					r, err := e.store.Claim(e.ctx, e.queue, "bob")
					if err != nil || r == nil {
						time.Sleep(time.Millisecond)
						continue
					}
					if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Token, json.RawMessage(`{"by":"bob"}`)); err == nil {
						bobDone.Add(1)
					}
				}
			}
		})
		if annWon.Load() != 0 {
			t.Fatalf("%d completes with expired tokens were accepted", annWon.Load())
		}
		for _, c := range stale {
			j := e.get(c.id)
			if j.State == StateCompleted && string(j.Result) != `{"by":"bob"}` {
				t.Fatalf("job %s result %s", c.id, j.Result)
			}
		}
		if s := e.stats(); s.Completed != bobDone.Load() || s.Completed+s.Ready != jobs {
			t.Fatalf("stats = %+v, bob completed %d", s, bobDone.Load())
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
			if len(moved) > limit {
				t.Fatalf("one call moved %d jobs, limit %d", len(moved), limit)
			}
			total += len(moved)
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
