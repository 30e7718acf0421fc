package main

import (
	"context"
	"slices"
	"sync"
	"time"

	"claimdesk/internal/tasks"
)

// recorder collects the latency of every call of one operation, from any
// number of goroutines.
type recorder struct {
	mu    sync.Mutex
	op    string
	times []time.Duration
	start time.Time
	end   time.Time
}

func newRecorder(op string) *recorder { return &recorder{op: op} }

// time runs fn, records how long it took, and returns its error. A nil
// recorder only runs fn.
func (r *recorder) time(fn func() error) error {
	if r == nil {
		return fn()
	}
	t0 := time.Now()
	err := fn()
	r.add(t0, time.Since(t0))
	return err
}

func (r *recorder) add(started time.Time, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.start.IsZero() || started.Before(r.start) {
		r.start = started
	}
	if end := started.Add(d); end.After(r.end) {
		r.end = end
	}
	r.times = append(r.times, d)
}

// summary is one operation's numbers: calls, calls per second over the
// span from the first call's start to the last call's end, and latency
// percentiles.
type summary struct {
	Op        string  `json:"op"`
	Calls     int     `json:"calls"`
	PerSecond float64 `json:"per_second"`
	P50       ms      `json:"p50_ms"`
	P95       ms      `json:"p95_ms"`
	P99       ms      `json:"p99_ms"`
	Max       ms      `json:"max_ms"`
}

// ms is a duration shown in milliseconds.
type ms float64

func toMS(d time.Duration) ms { return ms(float64(d) / float64(time.Millisecond)) }

func (r *recorder) summary() summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := summary{Op: r.op, Calls: len(r.times)}
	if len(r.times) == 0 {
		return s
	}
	sorted := slices.Clone(r.times)
	slices.Sort(sorted)
	s.P50, s.P95, s.P99 = toMS(quantile(sorted, .50)), toMS(quantile(sorted, .95)), toMS(quantile(sorted, .99))
	s.Max = toMS(sorted[len(sorted)-1])
	if span := r.end.Sub(r.start); span > 0 {
		s.PerSecond = float64(len(sorted)) / span.Seconds()
	}
	return s
}

// quantile of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// parallel runs work(worker, i) for i in [0, n), spread over c goroutines,
// and returns the first error.
func parallel(c, n int, work func(worker, i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		err  error
	)
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				failed := err != nil
				mu.Unlock()
				if i >= n || failed {
					return
				}
				if e := work(w, i); e != nil {
					mu.Lock()
					if err == nil {
						err = e
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return err
}

// completions counts each job's completions as the engine reports them
// (its transitions), not as callers count their answers.
type completions struct {
	mu sync.Mutex
	n  map[string]int
}

// countCompletions starts counting the completions the stores make.
func countCompletions(stores ...*tasks.Store) *completions {
	c := &completions{n: map[string]int{}}
	for _, s := range stores {
		s.Observe(func(_ context.Context, fx tasks.Effects) {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, t := range fx.Transitions {
				if t.Action == tasks.ActionCompleted {
					c.n[t.JobID]++
				}
			}
		})
	}
	return c
}

// tally returns how many jobs were completed, and how many of them more
// than once.
func (c *completions) tally() (jobs, twice int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.n {
		if n != 1 {
			twice++
		}
	}
	return len(c.n), twice
}
