package handlers

import (
	"testing"
	"time"

	"claimdesk/internal/notify"
)

// Counts go at most every frameInterval; news the viewer waits for at most
// every urgentInterval; the first after a quiet spell after frameGather.
func TestPacer(t *testing.T) {
	var p pacer
	t0 := time.Unix(1000, 0)
	counts := &notify.Notice{Type: notify.QueueChanged, Queue: "q"}
	job := &notify.Notice{Type: notify.JobAvailable, Queue: "q"}
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	if when := p.add(counts, at(0), false); !when.Equal(at(frameGather)) {
		t.Fatalf("after a quiet spell: goes at %v, want %v", when.Sub(t0), frameGather)
	}
	if ns := p.take(at(frameGather)); len(ns) != 1 {
		t.Fatalf("took %d notices", len(ns))
	}
	// Counts right after a frame wait for the interval.
	if when := p.add(counts, at(20*time.Millisecond), false); !when.Equal(at(frameGather + frameInterval)) {
		t.Fatalf("counts after a frame go at %v, want %v", when.Sub(t0), frameGather+frameInterval)
	}
	// A new job meanwhile brings them forward, but not before urgentInterval.
	if when := p.add(job, at(30*time.Millisecond), urgent(job, "ann")); !when.Equal(at(frameGather + urgentInterval)) {
		t.Fatalf("a new job goes at %v, want %v", when.Sub(t0), frameGather+urgentInterval)
	}
	p.add(counts, at(40*time.Millisecond), false)
	if ns := p.take(at(frameGather + urgentInterval)); len(ns) != 2 || ns[0] != job || ns[1] != counts {
		t.Fatalf("took %v, want the job then the counts, once", ns)
	}
	mine := &notify.Notice{Type: notify.ReservationReleased, Operator: "ann"}
	theirs := &notify.Notice{Type: notify.ReservationReleased, Operator: "bob"}
	if !urgent(mine, "ann") || urgent(theirs, "ann") || urgent(counts, "ann") {
		t.Fatal("urgent: only new jobs and the viewer's own reservations")
	}
}
