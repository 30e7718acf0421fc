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

// TestMoreTime checks what More time offers, against extend.lua's rule:
// the deadline moves later by the amount asked, never past the start plus
// the max hold.
func TestMoreTime(t *testing.T) {
	start := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := start.Add(d); return &t }
	latest := start.Add(time.Hour)
	q := Queue{MaxExtensions: 3, MaxHoldSeconds: 3600}
	for _, tc := range []struct {
		name       string
		deadline   time.Duration // after the start
		extensions int
		want       MoreTime
	}{
		{"a fresh claim: every choice, from the start", 10 * time.Minute, 0,
			MoreTime{Left: 3, Latest: latest, Choices: []time.Duration{5 * time.Minute, 15 * time.Minute, 30 * time.Minute}}},
		{"near the max hold: what is left of it", 50 * time.Minute, 1,
			MoreTime{Left: 2, Latest: latest, Choices: []time.Duration{5 * time.Minute, 10 * time.Minute}}},
		{"closer still: one choice", 57*time.Minute + 500*time.Millisecond, 1,
			MoreTime{Left: 2, Latest: latest, Choices: []time.Duration{2*time.Minute + 59*time.Second}}},
		{"at the max hold", time.Hour, 2, MoreTime{Left: 1, Latest: latest}},
		{"none left", 10 * time.Minute, 3, MoreTime{Latest: latest}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{LeaseSeconds: 600, ReservedAt: at(0), Deadline: at(tc.deadline), Extensions: tc.extensions}
			if got := j.MoreTime(q); got.Left != tc.want.Left || !got.Latest.Equal(tc.want.Latest) || !slices.Equal(got.Choices, tc.want.Choices) {
				t.Errorf("MoreTime = %+v, want %+v", got, tc.want)
			}
		})
	}
	if m := (&Job{LeaseSeconds: 600}).MoreTime(q); m.Left != 3 || !m.Latest.IsZero() || m.Choices != nil {
		t.Errorf("MoreTime of a job not reserved = %+v", m)
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
// count; every choice, pressed, adds exactly itself, the longest reaching
// at most Latest; with no choice, a press adds less than a second or is
// refused. Each press is made on a copy of its own: the same reservation,
// claimed and extended alike at the same moments.
func TestMoreTimeIsWhatExtendDoes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0].rdb, Queue{})
	rnd := rand.New(rand.NewPCG(3, 11))
	const copies = 4
	for trial := range 200 {
		lease := 1 + rnd.IntN(1800)
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
			secs, opts := 1+rnd.IntN(2*j.LeaseSeconds), []ExtendOption{}
			if rnd.IntN(2) == 0 {
				opts = append(opts, FromDeadline())
			}
			var deadlines []time.Time
			for _, r := range held {
				got, err := e.store.Extend(e.ctx, r.Job.ID, Hold{Holder: "ann", Token: r.Token}, secs, opts...)
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
		e.clock.Advance(time.Duration(rnd.Int64N(j.Deadline.Sub(e.clock.Now()).Milliseconds())) * time.Millisecond)

		m := j.MoreTime(q)
		deadline := *j.Deadline
		what := fmt.Sprintf("trial %d: lease %d s, max hold %d s, %d of %d extensions, %v into a reservation of %v: %+v",
			trial, j.LeaseSeconds, q.MaxHoldSeconds, j.Extensions, q.MaxExtensions,
			e.clock.Now().Sub(*j.ReservedAt), deadline.Sub(*j.ReservedAt), m)
		if !m.Latest.Equal(j.ReservedAt.Add(time.Duration(q.MaxHoldSeconds) * time.Second)) {
			t.Errorf("%s: latest %v", what, m.Latest)
		}
		// press asks the copy c for add more, as the page does, and says
		// what it added.
		press := func(c int, add time.Duration) (time.Duration, error) {
			got, err := e.store.Extend(e.ctx, held[c].Job.ID, Hold{Holder: "ann", Token: held[c].Token}, int(add/time.Second), FromDeadline())
			if err != nil {
				return 0, err
			}
			return got.Deadline.Sub(deadline), nil
		}
		if len(m.Choices) == 0 {
			added, err := press(0, time.Second)
			switch {
			case errors.Is(err, ErrExtensionLimit):
				if m.Left > 0 && m.Latest.After(deadline) {
					t.Errorf("%s: refused for the count with %d left", what, m.Left)
				}
			case err != nil:
				t.Fatalf("%s: %v", what, err)
			case m.Left == 0:
				t.Errorf("%s: none left, and a press added %v", what, added)
			case added >= time.Second:
				t.Errorf("%s: no choice, and a press added %v", what, added)
			}
			continue
		}
		if m.Left == 0 || len(m.Choices) > copies {
			t.Fatalf("%s: choices with none left, or more than the copies", what)
		}
		for c, add := range m.Choices {
			if added, err := press(c, add); err != nil || added != add || deadline.Add(added).After(m.Latest) {
				t.Errorf("%s: a press of %v added %v (%v)", what, add, added, err)
			}
		}
	}
}
