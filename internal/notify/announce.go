package notify

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"claimdesk/internal/tasks"
)

// Announcer turns the engine's transitions into notices and publishes them.
// The Store tells it of every change (Observe), from requests and cron
// alike, with the counts of the queue and the batches after the change:
// so notices come from what the scripts did alone, and nothing is read
// back. It never makes the caller wait for Redis: it queues the notices
// and returns, and one goroutine publishes everything pending at once, in
// one pipeline, however many changes came in meanwhile. So under load many
// changes of a queue share one queue.changed. Notices keep the order in
// which they were announced. What is kept of people (their recent work,
// when they last acted) is not written here, where it could be dropped,
// but on the change's path (RecordWork).
// Failures are logged, never returned: notices are hints, and the change
// itself already happened.
//
// A process has one Announcer, shared by everything in it that changes
// state; Close publishes what is still pending.
type Announcer struct {
	bus *Bus
	log *slog.Logger
	// fullWait is how long a caller waits for room in a full queue before
	// its notices are dropped.
	fullWait time.Duration

	pending chan announcement
	// mu is held for reading while a caller queues, for writing by Close,
	// so that nothing is sent on pending once it is closed.
	mu     sync.RWMutex
	closed bool
	// done is closed when the publishing goroutine has published everything
	// and returned.
	done chan struct{}
	// lost is set when notices were dropped: the next publish adds a
	// resync, so that browsers fetch afresh and waiters look again.
	lost atomic.Bool
}

// Sizes and timing of the announcer's queue.
const (
	// queueSize is how many announcements (each one call's notices) may
	// wait to be published: seconds' worth on a busy server.
	queueSize = 4096
	// fullWait is how long a caller blocks on a full queue (Redis is slow to
	// take what is pending) before its notices are dropped for a resync.
	fullWait = time.Second
	// flushNotices is how many notices one publish takes at most, unless a
	// single announcement brings more: a pipeline of bounded size, well
	// under an instance's list cap (maxBacklog).
	flushNotices = 500
	// flushTimeout bounds the Redis calls of one publish.
	flushTimeout = 5 * time.Second
)

// announcement is one change's notices, or a marker of
// Flush (flushed set, nothing else).
type announcement struct {
	notices []Notice
	// counts are the queue's after the change, and batches its batches';
	// at is when it happened (the latest of each wins).
	counts  *Notice
	batches []*tasks.Batch
	at      time.Time
	// flushed is closed once everything queued before the marker has
	// been published.
	flushed chan struct{}
}

// NewAnnouncer returns an announcer publishing on bus, and starts its
// publishing goroutine; Close stops it. Have the Store call Observe.
func NewAnnouncer(bus *Bus, log *slog.Logger) *Announcer {
	return newAnnouncer(bus, log, queueSize, fullWait)
}

func newAnnouncer(bus *Bus, log *slog.Logger, size int, wait time.Duration) *Announcer {
	a := &Announcer{bus: bus, log: log, fullWait: wait,
		pending: make(chan announcement, size), done: make(chan struct{})}
	go a.run()
	return a
}

// perCall bounds the job.available and the job.sla notices one change
// announces per queue, each: a thousand jobs at once are one change of
// the counts, not a thousand toasts (and would overflow every browser's
// buffer).
const perCall = 5

// Observe announces what one script call changed: a tasks.Observer.
func (a *Announcer) Observe(ctx context.Context, fx tasks.Effects) {
	an := announcement{at: fx.At, batches: fx.Batches}
	told := map[string]int{}
	for _, t := range fx.Transitions {
		ns := noticesOf(t)
		if last := len(ns) - 1; last >= 0 && (ns[last].Type == JobAvailable || ns[last].Type == JobSLA) {
			if told[ns[last].Type]++; told[ns[last].Type] > perCall {
				ns = ns[:last]
			}
		}
		an.notices = append(an.notices, ns...)
	}
	if len(fx.Transitions) > 0 {
		an.counts = countsNotice(fx.Queue, fx.Counts, fx.At.UnixMilli())
	}
	a.queue(ctx, an)
}

// countsNotice is the queue.changed that carries a queue's counts as they
// were at (ms by the Redis clock).
func countsNotice(queue string, c tasks.Counts, at int64) *Notice {
	claimable := c.Claimable()
	return &Notice{Type: QueueChanged, Queue: queue, Ready: &c.Ready, Reserved: &c.Reserved,
		Scheduled: &c.Scheduled, Held: &c.Held, Claimable: &claimable, Dead: &c.Dead, At: at}
}

// sameCounts reports whether two queue.changed carry the same counts.
func sameCounts(a, b *Notice) bool {
	same := func(x, y *int64) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	return same(a.Ready, b.Ready) && same(a.Held, b.Held) && same(a.Scheduled, b.Scheduled) &&
		same(a.Reserved, b.Reserved) && same(a.Dead, b.Dead)
}

// Publish announces notices that come from no change of state (a warning
// that a deadline is near).
func (a *Announcer) Publish(ctx context.Context, ns ...Notice) {
	if len(ns) > 0 {
		a.queue(ctx, announcement{notices: ns})
	}
}

// queue queues the announcement for publishing. It returns at once; on a
// full queue it waits up to a second for room, and then drops it and has a
// resync published after the next ones instead. After Close it publishes
// it itself before it returns.
func (a *Announcer) queue(ctx context.Context, an announcement) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		a.publish(ctx, []announcement{an})
		return
	}
	select {
	case a.pending <- an:
		return
	default:
	}
	wait := time.NewTimer(a.fullWait)
	defer wait.Stop()
	select {
	case a.pending <- an:
		return
	case <-wait.C:
	}
	// Redis takes notices more slowly than they come: these are lost, and
	// the resync after the next publish heals the pages (and the waits on
	// jobs) that missed them. Logged once until that resync went out.
	if !a.lost.Swap(true) {
		a.log.Warn("notices dropped: the notice queue stayed full", "waited", a.fullWait)
	}
}

// Flush waits until everything announced before it has been published (or
// failed to be), or until ctx ends.
func (a *Announcer) Flush(ctx context.Context) error {
	flushed := make(chan struct{})
	a.mu.RLock()
	if a.closed {
		a.mu.RUnlock()
		flushed = a.done
	} else {
		select {
		case a.pending <- announcement{flushed: flushed}:
			a.mu.RUnlock()
		case <-ctx.Done():
			a.mu.RUnlock()
			return ctx.Err()
		}
	}
	select {
	case <-flushed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close publishes everything still queued and stops the publishing
// goroutine; announcements after Close are published by their caller. It
// returns once all is published, or with ctx's error when ctx ends first
// (the publishing goes on meanwhile).
func (a *Announcer) Close(ctx context.Context) error {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.pending)
	}
	a.mu.Unlock()
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run publishes announcements until the queue is closed and empty: it
// takes everything pending (up to flushNotices notices) and publishes it
// at once.
func (a *Announcer) run() {
	defer close(a.done)
	for first := range a.pending {
		group, n := []announcement{first}, len(first.notices)
	take:
		for n < flushNotices {
			select {
			case next, ok := <-a.pending:
				if !ok {
					break take
				}
				group, n = append(group, next), n+len(next.notices)
			default:
				break take
			}
		}
		a.flush(group)
	}
}

// flush publishes a group of announcements as one, then releases the
// Flush calls waiting on it.
func (a *Announcer) flush(group []announcement) {
	if a.lost.Swap(false) {
		group = append(group, announcement{notices: []Notice{{Type: Resync}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	a.publish(ctx, group)
	cancel()
	for _, an := range group {
		if an.flushed != nil {
			close(an.flushed)
		}
	}
}

// publish sends the notices of the announcements, in order, followed by a
// batch.changed (and batch.finished, once it ended) for every batch they
// changed and a queue.changed for every queue, each with the latest counts
// among them. One pipeline.
func (a *Announcer) publish(ctx context.Context, group []announcement) {
	var ns []Notice
	type latest struct {
		at time.Time
		i  int // index in tail
	}
	var tail []Notice
	seen := map[string]latest{}
	last := func(key string, at time.Time, n ...Notice) {
		if l, ok := seen[key]; ok {
			if at.Before(l.at) {
				return // an older change's counts, told late
			}
			tail[l.i] = Notice{} // superseded
		}
		seen[key] = latest{at, len(tail)}
		tail = append(tail, n...)
	}
	for _, an := range group {
		ns = append(ns, an.notices...)
		for _, b := range an.batches {
			bn := batchNotices(b)
			last("batch "+b.ID, an.at, bn[0])
			if len(bn) > 1 {
				ns = append(ns, bn[1]) // batch.finished is news, once
			}
		}
		if an.counts != nil {
			last("queue "+an.counts.Queue, an.at, *an.counts)
		}
	}
	for _, n := range tail {
		if n.Type != "" {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return
	}
	if err := a.bus.Publish(ctx, ns...); err != nil {
		a.log.Warn("notice not sent", "err", err)
	}
}

func batchNotices(b *tasks.Batch) []Notice {
	ns := []Notice{{Type: BatchChanged, Queue: b.Queue, BatchID: b.ID, State: string(b.State), Batch: b}}
	if b.Ended() {
		ns = append(ns, Notice{Type: BatchFinished, Queue: b.Queue, BatchID: b.ID, State: string(b.State)})
	}
	return ns
}

// noticesOf lists the notices of one transition.
func noticesOf(t tasks.Transition) []Notice {
	var ns []Notice
	base := Notice{Queue: t.Queue, JobID: t.JobID, BatchID: t.BatchID, Action: string(t.Action), Actor: t.Actor}
	with := func(typ string) Notice { n := base; n.Type = typ; return n }
	switch {
	case t.Action == tasks.ActionAtRisk || t.Action == tasks.ActionBreached:
		// The job stays as it was, in line or held.
		n := with(JobSLA)
		p := t.Priority
		n.Title, n.Priority, n.Operator, n.State = t.Title, &p, t.Holder, string(t.To)
		return []Notice{n}
	case t.Action == tasks.ActionMoved && t.To == "":
		// Overdue, it left for its queue's breach queue, in the state
		// it had: where it went says job.available there.
		n := with(JobSLA)
		p := t.Priority
		n.Title, n.Priority, n.State = t.Title, &p, string(t.From)
		return []Notice{n}
	case t.Action == tasks.ActionClaimed:
		n := with(ReservationCreated)
		n.Title, n.Operator, n.Deadline = t.Title, t.Actor, t.Deadline
		ns = append(ns, n)
	case t.Action == tasks.ActionExtended:
		n := with(ReservationExtended)
		n.Title, n.Operator, n.Deadline = t.Title, t.Holder, t.Deadline
		ns = append(ns, n)
	case t.EndsReservation():
		typ := ReservationReleased
		switch t.Action {
		case tasks.ActionCompleted:
			typ = ReservationCompleted
		case tasks.ActionExpired:
			typ = ReservationExpired
		}
		n := with(typ)
		n.Operator, n.State, n.Deadline, n.Reason = t.Holder, string(t.To), t.Deadline, t.Reason
		ns = append(ns, n)
	}
	switch {
	case t.To == tasks.StateReady:
		n := with(JobAvailable)
		p := t.Priority
		n.Title, n.Priority = t.Title, &p
		ns = append(ns, n)
	case t.To.Terminal():
		n := with(JobFinished)
		n.State = string(t.To)
		ns = append(ns, n)
	}
	return ns
}
