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

// Jobs announces new jobs.
func (a *Announcer) Jobs(ctx context.Context, jobs []*tasks.Job) {
	var ns []Notice
	for _, j := range jobs {
		ns = append(ns, transition(j, "", false)...)
	}
	a.Publish(ctx, ns...)
}

// Reclaimed announces reservations that ran out.
func (a *Announcer) Reclaimed(ctx context.Context, moved []tasks.Reclaimed) {
	var ns []Notice
	for _, r := range moved {
		ns = append(ns, transition(&tasks.Job{ID: r.JobID, Queue: r.Queue, State: r.State}, r.Operator, true)...)
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

// Publish sends the notices, followed by a queue.changed with the counts of
// every queue they name.
func (a *Announcer) Publish(ctx context.Context, ns ...Notice) {
	if len(ns) == 0 {
		return
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
		ns = append(ns, Notice{Type: QueueChanged, Queue: n.Queue, Ready: &st.Ready, Reserved: &st.Reserved, Scheduled: &st.Scheduled})
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
	return ns
}
