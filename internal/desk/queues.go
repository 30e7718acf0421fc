package desk

import (
	"context"

	"claimdesk/internal/audit"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Queues: supervisors make queues, change their settings, pause, resume
// and delete them. Every change is told to this instance's caches
// (Config.SettingsChanged) and, but for a new queue, to every instance.

// VisibleQueues returns the queues a may see, with their settings and
// counts.
func (d *Desk) VisibleQueues(ctx context.Context, a Actor) ([]tasks.QueueStats, error) {
	all, err := d.queues(ctx)
	return visible(a, all), err
}

// visible keeps the queues of all that a may see.
func visible(a Actor, all []tasks.QueueStats) []tasks.QueueStats {
	qs := make([]tasks.QueueStats, 0, len(all))
	for _, q := range all {
		if a.canSee(q.Queue.Name) {
			qs = append(qs, q)
		}
	}
	return qs
}

// CreateQueue creates the queue; settings left zero take their defaults,
// unless asGiven says every setting was given (a zero then is meant).
func (d *Desk) CreateQueue(ctx context.Context, a Actor, q tasks.Queue, asGiven bool) (tasks.Queue, error) {
	if err := need(a, users.Supervisor); err != nil {
		return q, err
	}
	create := d.tasks.CreateQueue
	if asGiven {
		create = d.tasks.CreateQueueAsGiven
	}
	q, err := create(ctx, q)
	if err != nil {
		return q, err
	}
	d.settingsChanged(q.Name)
	if err := d.hooks.QueueCreated(context.WithoutCancel(ctx), q.Name); err != nil {
		d.trouble("the outbox of a new queue not turned on for the webhooks of every queue", err, "queue", q.Name)
	}
	if q.BreachQueue != "" {
		d.breachQueueSet(ctx, q)
	}
	d.record(ctx, a, audit.QueueCreated, q.Name, audit.SettingsDetail(q))
	return q, nil
}

// ChangeQueue changes the settings the patch gives, and answers the queue
// as it is now.
func (d *Desk) ChangeQueue(ctx context.Context, a Actor, name string, p tasks.QueuePatch) (tasks.Queue, error) {
	if err := d.mayUse(ctx, a, name, oversee); err != nil {
		return tasks.Queue{}, err
	}
	q, was, err := d.tasks.PatchQueue(ctx, name, p)
	if err != nil {
		return q, err
	}
	d.toldSettings(ctx, q.Name, q.Paused)
	if q.BreachQueue != was.BreachQueue {
		d.breachQueueSet(ctx, q)
	}
	d.record(ctx, a, audit.QueueChanged, q.Name, audit.SettingsChange(was, q))
	return q, nil
}

// breachQueueSet turns on the outbox of the queue's new breach queue
// while a webhook listens to the queue (the events of its jobs that move
// there are its webhooks' too), and off that of the old one if none
// listens to it any more.
func (d *Desk) breachQueueSet(ctx context.Context, q tasks.Queue) {
	if err := d.hooks.Sync(context.WithoutCancel(ctx)); err != nil {
		d.trouble("the outbox of a breach queue not turned on for the webhooks of its queue", err, "queue", q.Name)
	}
}

// PauseQueue pauses the queue: it takes enqueues, and claims nothing.
func (d *Desk) PauseQueue(ctx context.Context, a Actor, name string) (tasks.Queue, error) {
	return d.setPaused(ctx, a, name, true)
}

// ResumeQueue lets a paused queue's jobs be claimed again.
func (d *Desk) ResumeQueue(ctx context.Context, a Actor, name string) (tasks.Queue, error) {
	return d.setPaused(ctx, a, name, false)
}

func (d *Desk) setPaused(ctx context.Context, a Actor, name string, paused bool) (tasks.Queue, error) {
	if err := d.mayUse(ctx, a, name, oversee); err != nil {
		return tasks.Queue{}, err
	}
	q, err := d.tasks.SetPaused(ctx, name, paused)
	if err != nil {
		return q, err
	}
	d.toldSettings(ctx, q.Name, q.Paused)
	action := audit.QueueResumed
	if paused {
		action = audit.QueuePaused
	}
	d.record(ctx, a, action, q.Name, "")
	return q, nil
}

// DeleteQueue deletes an empty queue (tasks.ErrQueueNotEmpty otherwise).
func (d *Desk) DeleteQueue(ctx context.Context, a Actor, name string) error {
	if err := d.mayUse(ctx, a, name, oversee); err != nil {
		return err
	}
	if err := d.tasks.DeleteQueue(ctx, name); err != nil {
		return err
	}
	d.toldSettings(ctx, name, false)
	d.record(ctx, a, audit.QueueDeleted, name, "")
	return nil
}

// toldSettings tells this instance's caches, and every page showing the
// queue on any instance, that its settings changed (notify.QueueSettings).
func (d *Desk) toldSettings(ctx context.Context, queue string, paused bool) {
	d.settingsChanged(queue)
	d.bus.TellQueueSettings(ctx, queue, paused)
}
