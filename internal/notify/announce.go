package notify

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"claimdesk/internal/tasks"
)

// Announcer turns the engine's state changes into notices and publishes
// them, with the touched queues' and batches' fresh counts. It is what
// handlers and cron call after a script succeeded, and it never makes them
// wait for Redis: it queues the notices and returns, and one goroutine
// publishes everything pending at once — one count lookup per touched queue
// and batch, and one pipeline, however many changes came in meanwhile. So
// under load many changes of a queue share one queue.changed, and a request
// costs the server no more Redis round trips than its own script. Notices
// keep the order in which they were announced. Failures are logged, never
// returned: notices are hints, and the change itself already happened.
//
// A process has one Announcer, shared by everything in it that changes
// state; Close publishes what is still pending.
type Announcer struct {
	bus   *Bus
	tasks *tasks.Store
	log   *slog.Logger
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

// announcement is one call's notices, or a marker of Flush (flushed set,
// no notices).
type announcement struct {
	notices []Notice
	// flushed is closed once everything queued before the marker has
	// been published.
	flushed chan struct{}
}

// NewAnnouncer returns an announcer publishing on bus, and starts its
// publishing goroutine; Close stops it.
func NewAnnouncer(bus *Bus, ts *tasks.Store, log *slog.Logger) *Announcer {
	return newAnnouncer(bus, ts, log, queueSize, fullWait)
}

func newAnnouncer(bus *Bus, ts *tasks.Store, log *slog.Logger, size int, wait time.Duration) *Announcer {
	a := &Announcer{bus: bus, tasks: ts, log: log, fullWait: wait,
		pending: make(chan announcement, size), done: make(chan struct{})}
	go a.run()
	return a
}

// Job announces that a job changed: holder is who held it before the change
// ("" if nobody), expired says its reservation ran out.
func (a *Announcer) Job(ctx context.Context, j *tasks.Job, holder string, expired bool) {
	a.Publish(ctx, transition(j, holder, expired)...)
}

// availablePerCall bounds the job.available notices one call announces
// per queue: a thousand jobs at once are one change of the counts, not a
// thousand toasts (and would overflow every browser's buffer).
const availablePerCall = 5

// Jobs announces new jobs, and the batch they joined (nil for none).
func (a *Announcer) Jobs(ctx context.Context, jobs []*tasks.Job, b *tasks.Batch) {
	var ns []Notice
	if b != nil {
		ns = batchNotices(b)
	}
	perQueue := map[string]int{}
	for _, j := range jobs {
		if j.State == tasks.StateReady {
			if perQueue[j.Queue]++; perQueue[j.Queue] > availablePerCall {
				continue
			}
		}
		ns = append(ns, transition(j, "", false)...)
	}
	a.Publish(ctx, ns...)
}

// Batch announces a batch's change that touched no single job (sealed,
// canceled): its counts, whether it ended, and its queue's counts.
func (a *Announcer) Batch(ctx context.Context, b *tasks.Batch) {
	a.Publish(ctx, batchNotices(b)...)
}

func batchNotices(b *tasks.Batch) []Notice {
	ns := []Notice{{Type: BatchChanged, Queue: b.Queue, BatchID: b.ID, State: string(b.State), Batch: b}}
	if b.Ended() {
		ns = append(ns, Notice{Type: BatchFinished, Queue: b.Queue, BatchID: b.ID, State: string(b.State)})
	}
	return ns
}

// Reclaimed announces reservations that ran out.
func (a *Announcer) Reclaimed(ctx context.Context, moved []tasks.Reclaimed) {
	var ns []Notice
	for _, r := range moved {
		ns = append(ns, transition(&tasks.Job{ID: r.JobID, Queue: r.Queue, State: r.State, BatchID: r.BatchID}, r.Operator, true)...)
	}
	a.Publish(ctx, ns...)
}

// Promoted announces scheduled jobs that became ready.
func (a *Announcer) Promoted(ctx context.Context, queue string, ids []string) {
	ns := make([]Notice, len(ids))
	for i, id := range ids {
		ns[i] = Notice{Type: JobAvailable, Queue: queue, JobID: id}
	}
	a.Publish(ctx, ns...)
}

// Publish queues the notices for publishing, followed by a batch.changed
// (and batch.finished, once it ended) for every batch they name without its
// counts, and a queue.changed with the counts of every queue they name. It
// returns at once; on a full queue it waits up to a second for room, and
// then drops the notices and has a resync published after the next ones
// instead. After Close it publishes them itself before it returns.
func (a *Announcer) Publish(ctx context.Context, ns ...Notice) {
	if len(ns) == 0 {
		return
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		a.publish(ctx, [][]Notice{ns})
		return
	}
	select {
	case a.pending <- announcement{notices: ns}:
		return
	default:
	}
	wait := time.NewTimer(a.fullWait)
	defer wait.Stop()
	select {
	case a.pending <- announcement{notices: ns}:
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
	calls := make([][]Notice, 0, len(group)+1)
	for _, an := range group {
		if len(an.notices) > 0 {
			calls = append(calls, an.notices)
		}
	}
	if a.lost.Swap(false) {
		calls = append(calls, []Notice{{Type: Resync}})
	}
	if len(calls) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		a.publish(ctx, calls)
		cancel()
	}
	for _, an := range group {
		if an.flushed != nil {
			close(an.flushed)
		}
	}
}

// publish sends the notices of one or more calls, in order, followed by a
// batch.changed (and batch.finished) for every batch they name whose counts
// the last call naming it did not carry, and a queue.changed with the
// counts of every queue they name: each looked up once, after every change
// the notices tell of.
func (a *Announcer) publish(ctx context.Context, calls [][]Notice) {
	var ns []Notice
	// fresh[id] says whether the last call naming the batch carried its
	// counts (they are those after the call's change).
	fresh := map[string]bool{}
	var batches []string
	for _, call := range calls {
		carried := map[string]bool{}
		for _, n := range call {
			if n.Batch != nil {
				carried[n.BatchID] = true
			}
		}
		for _, n := range call {
			if n.BatchID == "" {
				continue
			}
			if _, named := fresh[n.BatchID]; !named {
				batches = append(batches, n.BatchID)
			}
			fresh[n.BatchID] = carried[n.BatchID]
		}
		ns = append(ns, call...)
	}
	for _, id := range batches {
		if fresh[id] {
			continue
		}
		b, err := a.tasks.GetBatch(ctx, id)
		if err != nil {
			a.log.Warn("notice: batch counts", "batch", id, "err", err)
			continue
		}
		ns = append(ns, batchNotices(b)...)
	}
	seen := map[string]bool{}
	for _, n := range ns {
		if n.Queue == "" || seen[n.Queue] {
			continue
		}
		seen[n.Queue] = true
		st, err := a.tasks.Stats(ctx, n.Queue)
		if err != nil {
			a.log.Warn("notice: queue counts", "queue", n.Queue, "err", err)
			continue
		}
		ns = append(ns, Notice{Type: QueueChanged, Queue: n.Queue, Ready: &st.Ready, Reserved: &st.Reserved, Scheduled: &st.Scheduled, Held: &st.Held})
	}
	if err := a.bus.Publish(ctx, ns...); err != nil {
		a.log.Warn("notice not sent", "err", err)
	}
}

// transition lists the notices for a job now in j.State that was held by
// holder before.
func transition(j *tasks.Job, holder string, expired bool) []Notice {
	var ns []Notice
	switch {
	case j.State == tasks.StateReserved:
		kind := ReservationCreated
		if holder != "" {
			kind = ReservationExtended
		}
		ns = append(ns, Notice{Type: kind, Queue: j.Queue, JobID: j.ID, Title: j.Title, Operator: j.ReservedBy, Deadline: j.Deadline})
	case holder != "" && expired:
		ns = append(ns, Notice{Type: ReservationExpired, Queue: j.Queue, JobID: j.ID, Operator: holder})
	case holder != "" && j.State == tasks.StateCompleted:
		ns = append(ns, Notice{Type: ReservationCompleted, Queue: j.Queue, JobID: j.ID, Operator: holder})
	case holder != "":
		ns = append(ns, Notice{Type: ReservationReleased, Queue: j.Queue, JobID: j.ID, Operator: holder, State: string(j.State)})
	}
	switch {
	case j.State == tasks.StateReady:
		n := Notice{Type: JobAvailable, Queue: j.Queue, JobID: j.ID}
		if j.Title != "" { // a reclaim knows only the id
			p := j.Priority
			n.Title, n.Priority = j.Title, &p
		}
		ns = append(ns, n)
	case j.State.Terminal():
		ns = append(ns, Notice{Type: JobFinished, Queue: j.Queue, JobID: j.ID, State: string(j.State)})
	}
	for i := range ns {
		ns[i].BatchID = j.BatchID
	}
	return ns
}
