package notify

import (
	"context"
	"log/slog"

	"claimdesk/internal/tasks"
)

// Announcer turns the engine's state changes into notices and publishes
// them, with each touched queue's fresh counts. It is what handlers and
// cron call after a script succeeded. Failures are logged, never returned:
// notices are hints, and the change itself already happened.
type Announcer struct {
	bus   *Bus
	tasks *tasks.Store
	log   *slog.Logger
}

// NewAnnouncer returns an announcer publishing on bus.
func NewAnnouncer(bus *Bus, ts *tasks.Store, log *slog.Logger) *Announcer {
	return &Announcer{bus: bus, tasks: ts, log: log}
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

// Publish sends the notices, followed by a batch.changed (and
// batch.finished, once it ended) for every batch they name without its
// counts, and a queue.changed with the counts of every queue they name.
func (a *Announcer) Publish(ctx context.Context, ns ...Notice) {
	if len(ns) == 0 {
		return
	}
	batches := map[string]bool{}
	for _, n := range ns {
		if n.Batch != nil {
			batches[n.BatchID] = true
		}
	}
	for _, n := range ns {
		if n.BatchID == "" || batches[n.BatchID] {
			continue
		}
		batches[n.BatchID] = true
		b, err := a.tasks.GetBatch(ctx, n.BatchID)
		if err != nil {
			a.log.Warn("notice: batch counts", "batch", n.BatchID, "err", err)
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
