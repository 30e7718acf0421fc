package tasks

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMoreTime checks when More time is offered and what it adds, against
// extend.lua's rule: the deadline becomes now plus the lease, never past
// the start plus the max hold.
func TestMoreTime(t *testing.T) {
	start := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := start.Add(d); return &t }
	q := Queue{MaxExtensions: 3, MaxHoldSeconds: 3600}
	for _, tc := range []struct {
		name       string
		lease      time.Duration
		deadline   time.Duration // after the start
		extensions int
		want       MoreTime
	}{
		{"a fresh claim: from a tenth of the lease in", 10 * time.Minute, 10 * time.Minute, 0,
			MoreTime{Left: 3, From: start.Add(time.Minute), UpTo: 10 * time.Minute}},
		{"a short lease: 5 seconds at least", 20 * time.Second, 20 * time.Second, 1,
			MoreTime{Left: 2, From: start.Add(5 * time.Second), UpTo: 20 * time.Second}},
		{"near the max hold: it adds what is left of it", 10 * time.Minute, 55 * time.Minute, 1,
			MoreTime{Left: 2, From: start.Add(46 * time.Minute), UpTo: 5 * time.Minute}},
		{"too close to the max hold to be worth a press", 10 * time.Minute, 59*time.Minute + 30*time.Second, 1,
			MoreTime{Left: 2}},
		{"at the max hold", 10 * time.Minute, time.Hour, 2, MoreTime{Left: 1}},
		{"a lease of 5 seconds: its least only at the deadline", 5 * time.Second, 5 * time.Second, 0, MoreTime{Left: 3}},
		{"none left", 10 * time.Minute, 10 * time.Minute, 3, MoreTime{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{LeaseSeconds: int(tc.lease / time.Second), ReservedAt: at(0), Deadline: at(tc.deadline), Extensions: tc.extensions}
			if got := j.MoreTime(q); got != tc.want {
				t.Errorf("MoreTime = %+v, want %+v", got, tc.want)
			}
		})
	}
	m := (&Job{LeaseSeconds: 600, ReservedAt: at(0), Deadline: at(10 * time.Minute)}).MoreTime(q)
	if m.Offered(start.Add(time.Minute-time.Second)) || !m.Offered(start.Add(time.Minute)) {
		t.Errorf("offered before %v, or not from it", m.From)
	}
	if (MoreTime{Left: 1}).Offered(start) {
		t.Error("offered with no press worth it")
	}
}

// TestClaimable checks that claimable leaves out the jobs held for a batch
// slot, and that the stats carry it as JSON.
func TestClaimable(t *testing.T) {
	if n := (Counts{Ready: 7, Held: 3}).Claimable(); n != 4 {
		t.Errorf("Counts.Claimable = %d, want 4", n)
	}
	s := Stats{Queue: "q", Ready: 5, Held: 2}
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `"claimable":3`; !strings.Contains(string(b), want) || !strings.Contains(string(b), `"held":2`) {
		t.Errorf("stats as JSON: %s, want %s among the fields", b, want)
	}
}

// TestMoreTimeIsWhatExtendDoes checks Job.MoreTime against the extend
// script itself, on the Store's clock, over random leases, max holds, max
// extensions, earlier extensions (as the page asks them, and as the API
// may) and moments: Left is 0 exactly when a press is refused for the
// count; a press is refused or adds less than MinMoreTime whenever From is
// zero; From lies within the reservation, where a press adds at least
// MinMoreTime, and a millisecond before it less; UpTo is what a press just
// before the deadline adds. Each press is made on a copy of its own: the
// same reservation, claimed and extended alike at the same moments.
func TestMoreTimeIsWhatExtendDoes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0].rdb, Queue{})
	rnd := rand.New(rand.NewPCG(3, 11))
	const copies = 3
	for trial := range 300 {
		lease := 1 + rnd.IntN(600)
		if rnd.IntN(3) == 0 {
			lease = 1 + rnd.IntN(12) // about MinMoreTime's 5 seconds
		}
		q := Queue{LeaseSeconds: lease, MaxHoldSeconds: lease*(1+rnd.IntN(5)) + rnd.IntN(lease+1), MaxExtensions: rnd.IntN(4)}
		queue := e.newQueue(q)
		q, err := e.store.Queue(e.ctx, queue)
		if err != nil {
			t.Fatal(err)
		}
		job := NewJob{Title: "copy"}
		if rnd.IntN(4) == 0 { // a job's own lease, which may outlast the max hold
			job.LeaseSeconds = 1 + rnd.IntN(2*q.MaxHoldSeconds)
		}
		if _, err := e.store.Enqueue(e.ctx, queue, "pat", slices.Repeat([]NewJob{job}, copies)); err != nil {
			t.Fatal(err)
		}
		var held []*Reservation
		for range copies {
			r, err := e.store.Claim(e.ctx, queue, "ann")
			if err != nil || r == nil {
				t.Fatalf("claim: %v, %v", r, err)
			}
			held = append(held, r)
		}
		// Earlier presses, each at a moment of the reservation.
		j := held[0].Job
		for range rnd.IntN(q.MaxExtensions + 2) {
			e.clock.Advance(time.Duration(rnd.Int64N(j.Deadline.Sub(e.clock.Now()).Milliseconds())) * time.Millisecond)
			secs := j.LeaseSeconds
			if rnd.IntN(2) == 0 {
				secs = 1 + rnd.IntN(2*j.LeaseSeconds)
			}
			var deadlines []time.Time
			for _, r := range held {
				got, err := e.store.Extend(e.ctx, r.Job.ID, Hold{"ann", r.Token}, secs)
				if errors.Is(err, ErrExtensionLimit) {
					got, err = e.store.Get(e.ctx, r.Job.ID)
				}
				if err != nil {
					t.Fatalf("trial %d: extend by %d s: %v", trial, secs, err)
				}
				deadlines = append(deadlines, *got.Deadline)
				j = got
			}
			if slices.ContainsFunc(deadlines, func(d time.Time) bool { return !d.Equal(deadlines[0]) }) {
				t.Fatalf("trial %d: the copies came apart: %v", trial, deadlines)
			}
		}

		m := j.MoreTime(q)
		least := MinMoreTime(time.Duration(j.LeaseSeconds) * time.Second)
		deadline := *j.Deadline
		what := fmt.Sprintf("trial %d: lease %d s, max hold %d s, %d of %d extensions, %v into a reservation of %v: %+v",
			trial, j.LeaseSeconds, q.MaxHoldSeconds, j.Extensions, q.MaxExtensions,
			e.clock.Now().Sub(*j.ReservedAt), deadline.Sub(*j.ReservedAt), m)
		// press presses More time on the copy c at the moment at, as the
		// page does (seconds: the job's lease), and says what it added.
		press := func(c int, at time.Time) (time.Duration, error) {
			e.clock.Advance(at.Sub(e.clock.Now()))
			got, err := e.store.Extend(e.ctx, held[c].Job.ID, Hold{"ann", held[c].Token}, j.LeaseSeconds)
			if err != nil {
				return 0, err
			}
			return got.Deadline.Sub(deadline), nil
		}

		if m.From.IsZero() {
			added, err := press(0, deadline.Add(-time.Millisecond))
			switch {
			case errors.Is(err, ErrExtensionLimit):
				if m.Left > 0 && j.ReservedAt.Add(time.Duration(q.MaxHoldSeconds)*time.Second).After(deadline) {
					t.Errorf("%s: refused for the count with %d left", what, m.Left)
				}
			case err != nil:
				t.Fatalf("%s: %v", what, err)
			case m.Left == 0:
				t.Errorf("%s: none left, and a press added %v", what, added)
			case added >= least:
				t.Errorf("%s: not offered, and a press just before the deadline added %v", what, added)
			}
			continue
		}
		if m.Left == 0 || !m.From.Before(deadline) {
			t.Errorf("%s: offered with none left, or from %v, not before the deadline %v", what, m.From, deadline)
			continue
		}
		if before := m.From.Add(-time.Millisecond); !before.Before(e.clock.Now()) {
			if added, err := press(0, before); err != nil || added >= least {
				t.Errorf("%s: a press a millisecond before From added %v (%v), want less than %v", what, added, err, least)
			}
		}
		if added, err := press(1, maxTime(m.From, e.clock.Now())); err != nil || added < least || added > m.UpTo {
			t.Errorf("%s: a press from From added %v (%v), want %v to %v", what, added, err, least, m.UpTo)
		}
		if added, err := press(2, deadline.Add(-time.Millisecond)); err != nil || added > m.UpTo || added < m.UpTo-time.Millisecond {
			t.Errorf("%s: a press just before the deadline added %v (%v), want UpTo", what, added, err)
		}
	}
}

// maxTime is the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
