package notify

import (
	"strings"
	"time"
)

// How often notices go to one browser. Every notice for a client waits in
// the hub until its frame is due, and then all that waited go in one
// websocket message (Frame): at most one every frameInterval, or, when news
// the viewer waits for is among them (a new job, a change to their own
// reservation, a resync), urgentInterval after the last. The first notice
// after a quiet spell goes frameGather later, with those of the same
// change (a new job's counts and its job.available, say). One timer serves
// the whole hub: with thousands of sockets, a timer per socket, moved on
// every notice, cost more than writing the frames.
const (
	frameInterval  = 200 * time.Millisecond
	urgentInterval = 50 * time.Millisecond
	frameGather    = 10 * time.Millisecond
	// maxPending bounds the notices waiting for one client; a client that
	// would have more is too slow, and is dropped to resync.
	maxPending = 256
	// signalGroup is how many clients the hub tells at once that their
	// frame is due (signalDue).
	signalGroup = 32
)

// pacer gathers one client's notices until its next frame.
type pacer struct {
	pending []*Notice
	// first is when the oldest pending notice came; urgent says whether
	// one of them is news the viewer waits for; last is when the last
	// frame was taken.
	first, last time.Time
	urgent      bool
}

// add gathers the notice that came at now, and returns when the pending
// notices are due.
func (p *pacer) add(n *Notice, now time.Time, urgent bool) time.Time {
	if len(p.pending) == 0 {
		p.first = now
	}
	p.pending = append(p.pending, n)
	p.urgent = p.urgent || urgent
	return p.due()
}

// due is when the pending notices may go.
func (p *pacer) due() time.Time {
	gap := frameInterval
	if p.urgent {
		gap = urgentInterval
	}
	return later(p.last.Add(gap), p.first.Add(frameGather))
}

// take returns the pending notices, taken at now, and forgets them.
func (p *pacer) take(now time.Time) []*Notice {
	ns := p.pending
	p.pending, p.urgent, p.last = nil, false, now
	return ns
}

// urgent says whether a notice is news the viewer waits for: a new job, a
// change to their own reservation, a queue paused or resumed, or a resync.
func urgent(n *Notice, viewer string) bool {
	return n.Type == JobAvailable || n.Type == Resync || n.Type == QueueSettings ||
		n.Operator == viewer && strings.HasPrefix(n.Type, "reservation.")
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
