package notify

import (
	"testing"
	"time"
)

// Counts go at most every frameInterval; news the viewer waits for at most
// every urgentInterval; the first after a quiet spell after frameGather.
func TestPacer(t *testing.T) {
	var p pacer
	t0 := time.Unix(1000, 0)
	counts := &Notice{Type: QueueChanged, Queue: "q"}
	job := &Notice{Type: JobAvailable, Queue: "q"}
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
	if ns := p.take(at(frameGather + urgentInterval)); len(ns) != 3 || ns[0] != counts || ns[1] != job || ns[2] != counts {
		t.Fatalf("took %v, want counts, the job, counts", ns)
	}
	mine := &Notice{Type: ReservationReleased, Operator: "ann"}
	theirs := &Notice{Type: ReservationReleased, Operator: "bob"}
	if !urgent(mine, "ann") || urgent(theirs, "ann") || urgent(counts, "ann") || !urgent(&Notice{Type: Resync}, "ann") {
		t.Fatal("urgent: only new jobs, resyncs and the viewer's own reservations")
	}
}

// The hub's one timer tells each client when its frame is due: what comes
// at once is taken at once, counts right after a frame wait for the frame
// interval, and a new job does not.
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
	// took since the last was taken.
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
		taken = time.Now() // no later than the pacer's own idea of it
		return c.Take()
	}
	due("the first frame")
	if ns := take(); len(ns) != 40 {
		t.Fatalf("took %d notices, want all 40 at once", len(ns))
	}
	hub.Deliver(Notice{Type: QueueChanged, Queue: "mail", Ready: ready(1)})
	if waited := due("counts"); waited < frameInterval {
		t.Fatalf("counts went %v after the last frame, want at least %v", waited, frameInterval)
	}
	take()
	hub.Deliver(Notice{Type: JobAvailable, Queue: "mail", JobID: "j2"})
	if waited := due("the new job"); waited < urgentInterval {
		t.Fatalf("a new job went %v after the last frame, want at least %v", waited, urgentInterval)
	}
	if ns := c.Take(); len(ns) != 1 || ns[0].JobID != "j2" {
		t.Fatalf("took %v, want the new job", ns)
	}
}
