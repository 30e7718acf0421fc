package notify

import "time"

// How often notices go to one browser. Every notice waits in the hub
// until its frame is due, and then all that waited go in one websocket
// message (Frame): at most one every frameInterval, or, when news the
// viewer waits for is among them (a change to their own reservation, a
// queue paused or resumed, a resync), urgentInterval after the last. The
// first notice after a quiet spell goes frameGather later, with those of
// the same change (a new job's counts and its job.available, say). A new
// job is no such news: under a steady flow of work it goes with the next
// frame, at most frameInterval later, as the counts do. So a busy floor's
// pages get two frames a second each: a message costs the server a
// system call per page, most of what thousands of open pages cost it.
// One timer serves the whole hub.
const (
	frameInterval  = 500 * time.Millisecond
	urgentInterval = 50 * time.Millisecond
	frameGather    = 10 * time.Millisecond
	// maxPending bounds the notices waiting for one frame of a group (or of
	// one connection): more in one frame interval are more than a page can
	// show, and they are replaced by a resync, after which the page
	// fetches afresh.
	maxPending = 256
	// maxFrames bounds the frames waiting for one connection that does not
	// keep up: they are replaced by a resync (Client.push).
	maxFrames = 16
	// signalGroup is how many connections the hub tells at once that a
	// frame waits for them (signalDue).
	signalGroup = 32
)

// pacer gathers the notices of a group (or of one connection) until its
// next frame.
type pacer struct {
	pending []*Notice
	// first is when the oldest pending notice came; urgent says whether
	// one of them is news the viewer waits for; last is when the last
	// frame was taken.
	first, last time.Time
	urgent      bool
}

// add gathers the notice that came at now, and returns when the pending
// notices are due. Past maxPending, what waits is replaced by a resync.
func (p *pacer) add(n *Notice, now time.Time, urgent bool) time.Time {
	if len(p.pending) == 0 {
		p.first = now
	}
	if len(p.pending) >= maxPending {
		p.pending, urgent = append(p.pending[:0], resyncFrame.notices[0]), true
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

// urgent says whether a notice every viewer of a group sees alike is news
// they wait for: a queue paused or resumed, or a resync. What a viewer
// sees alone (seesAlone) always is.
func urgent(n *Notice) bool {
	return n.Type == Resync || n.Type == QueueSettings
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
