package tasks

import (
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
