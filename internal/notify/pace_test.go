package notify

import (
	"testing"
	"time"
)

// Counts and new jobs go at most every frameInterval; news the viewer
// waits for at most every urgentInterval; the first after a quiet spell
// after frameGather.
func TestPacer(t *testing.T) {
	var p pacer
	t0 := time.Unix(1000, 0)
	counts := &Notice{Type: QueueChanged, Queue: "q"}
	paused := &Notice{Type: QueueSettings, Queue: "q"}
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
	// A queue paused meanwhile brings them forward, but not before
	// urgentInterval.
	if when := p.add(paused, at(30*time.Millisecond), urgent(paused)); !when.Equal(at(frameGather + urgentInterval)) {
		t.Fatalf("a pause goes at %v, want %v", when.Sub(t0), frameGather+urgentInterval)
	}
	p.add(counts, at(40*time.Millisecond), false)
	if ns := p.take(at(frameGather + urgentInterval)); len(ns) != 3 || ns[0] != counts || ns[1] != paused || ns[2] != counts {
		t.Fatalf("took %v, want counts, the pause, counts", ns)
	}
	if urgent(&Notice{Type: JobAvailable}) || urgent(counts) || !urgent(&Notice{Type: Resync}) || !urgent(paused) {
		t.Fatal("urgent for a group: only resyncs and a queue's settings")
	}
	// Past maxPending, what waits is replaced by a resync.
	for range maxPending + 1 {
		p.add(counts, at(time.Second), false)
	}
	if ns := p.take(at(time.Second)); len(ns) != 2 || ns[0].Type != Resync || ns[1] != counts {
		t.Fatalf("past maxPending took %d notices (first %s), want a resync and the last", len(ns), ns[0].Type)
	}
}

// The hub's one timer tells each client when a frame is due: what comes
// at once is taken at once, counts and new jobs right after a frame wait
// for the frame interval, and a change to the viewer's own reservation
// goes in a frame of its own, paced apart.
func TestHubPacesFrames(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	c := hub.Join(ann)
	ready := func(n int64) *int64 { return &n }
	for i := range 20 {
		hub.Deliver(Notice{Type: JobAvailable, Queue: "mail", JobID: "j"})
		hub.Deliver(Notice{Type: QueueChanged, Queue: "mail", Ready: ready(int64(i))})
	}
	// due waits for the client's next frame, and returns how long that
	// took since the hub made its group's last.
	var taken time.Time
	due := func(what string) time.Duration {
		t.Helper()
		select {
		case <-c.Ready():
			return time.Since(taken)
		case <-time.After(waitTimeout):
			t.Fatalf("%s never due", what)
			return 0
		}
	}
	take := func() []*Notice {
		hub.mu.Lock()
		taken = c.group.pace.last
		hub.mu.Unlock()
		return took(c)
	}
	// What came at once goes at once: the twenty new jobs, and in each
	// frame the counts only as they are last (all in one frame, unless the
	// test was held up between two notices).
	jobs := 0
	for last := int64(-1); last != 19; {
		due("the first frames")
		hub.mu.Lock()
		taken = c.group.pace.last
		hub.mu.Unlock()
		for _, f := range c.Take() {
			counts := 0
			for _, n := range f.Notices() {
				switch n.Type {
				case JobAvailable:
					jobs++
				case QueueChanged:
					counts++
					last = *n.Ready
				}
			}
			if counts > 1 {
				t.Fatalf("a frame carries the counts %d times", counts)
			}
		}
	}
	if jobs != 20 {
		t.Fatalf("took %d new jobs, want 20", jobs)
	}
	hub.Deliver(Notice{Type: JobAvailable, Queue: "mail", JobID: "j2"})
	if waited := due("a new job"); waited < frameInterval {
		t.Fatalf("a new job went %v after the last frame, want at least %v", waited, frameInterval)
	}
	take()
	hub.Deliver(Notice{Type: ReservationCreated, Queue: "mail", JobID: "j2", Operator: "ann"})
	due("ann's reservation")
	if ns := took(c); len(ns) != 1 || ns[0].JobID != "j2" {
		t.Fatalf("took %v, want the reservation", ns)
	}
}

// The hub gives no counts older than the last it gave of the queue; counts
// of the same moment, or that do not say when they were made, it gives.
func TestHubLeavesOutOlderCounts(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	for _, step := range []struct {
		at, ready int64
		given     bool
	}{
		{100, 5, true},
		{99, 4, false},
		{100, 3, true},
		{0, 2, true},
		{99, 1, false},
		{101, 0, true},
	} {
		ready := step.ready
		hub.Deliver(Notice{Type: QueueChanged, Queue: "mail", Ready: &ready, At: step.at})
		hub.mu.Lock()
		last := *hub.queues["mail"].last.Ready
		hub.mu.Unlock()
		if given := last == step.ready; given != step.given {
			t.Fatalf("counts of %d made at %d: given %v, want %v", step.ready, step.at, given, step.given)
		}
	}
}
