package desk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Work: producers enqueue jobs, operators claim them and end their
// reservations. The holder's actions are the holder's alone: the engine
// refuses a token that is not the live reservation of the job.

// Enqueue adds jobs to the queue, for a producer of the queue or a
// supervisor; the jobs that existed by their idempotency key are answered
// as they are (Created false).
func (d *Desk) Enqueue(ctx context.Context, a Actor, queue string, jobs []tasks.NewJob) ([]tasks.Enqueued, error) {
	if err := d.MayProduce(ctx, a, queue); err != nil {
		return nil, err
	}
	if err := d.routable(ctx, queue, jobs, false); err != nil {
		return nil, err
	}
	return d.tasks.Enqueue(ctx, queue, a.Name(), jobs)
}

// routable refuses jobs routed to someone who does not work the queue (no
// such user, disabled, or not an operator granted it): such a job would
// wait for nobody. The field named is the person's, after the job's place
// when the jobs are a batch's or more than one.
func (d *Desk) routable(ctx context.Context, queue string, jobs []tasks.NewJob, batched bool) error {
	works := map[string]bool{}
	check := func(field, person string) error {
		ok, known := works[person]
		if !known {
			u, err := d.users.Get(ctx, person)
			if err != nil && !errors.Is(err, users.ErrNotFound) {
				return err
			}
			ok = err == nil && !u.Disabled && u.CanWork(queue)
			works[person] = ok
		}
		if !ok {
			return &tasks.ValidationError{Field: field, Message: fmt.Sprintf("%s does not work %s", person, queue)}
		}
		return nil
	}
	for i, j := range jobs {
		at := ""
		if len(jobs) > 1 || batched {
			at = fmt.Sprintf("jobs[%d].", i)
		}
		if j.Assignee != "" {
			if err := check(at+"assignee", j.Assignee); err != nil {
				return err
			}
		}
		for k, p := range j.Preferred {
			if err := check(fmt.Sprintf("%spreferred[%d]", at, k), p); err != nil {
				return err
			}
		}
	}
	return nil
}

// MayProduce refuses an actor who may not put work into the queue (jobs,
// a batch): anyone but its producers and supervisors, as mayUse says
// (tasks.ErrQueueNotFound for a queue that does not exist). Enqueue and
// CreateBatch check it; an adapter may ask first, before it reads what
// would be put in, so that whoever may not is told so whatever they sent.
func (d *Desk) MayProduce(ctx context.Context, a Actor, queue string) error {
	return d.mayUse(ctx, a, queue, produce)
}

// claimAs claims as the actor, with their skills, idempotent by key if
// there is one.
func claimAs(a Actor, key string) []tasks.ClaimOption {
	opts := []tasks.ClaimOption{tasks.WithSkills(a.user.Skills)}
	if key != "" {
		opts = append(opts, tasks.WithClaimKey(key))
	}
	return opts
}

// Claim reserves the next job of the queue for an operator granted it; nil
// when nothing is waiting for them. A claim with the key of an earlier one
// answers that one's reservation while it is held (key "": none).
func (d *Desk) Claim(ctx context.Context, a Actor, queue, key string) (*tasks.Reservation, error) {
	if err := d.mayUse(ctx, a, queue, work); err != nil {
		return nil, err
	}
	return d.tasks.Claim(ctx, queue, a.Name(), claimAs(a, key)...)
}

// ClaimAny reserves the next job across the queues named (nil: every queue
// granted the operator), ranked as tasks.Store.ClaimAny says; nil when
// nothing is waiting.
func (d *Desk) ClaimAny(ctx context.Context, a Actor, queues []string, key string) (*tasks.Reservation, error) {
	switch {
	case queues == nil:
		if err := need(a, users.Operator); err != nil {
			return nil, err
		}
		queues = a.user.Queues
	case len(queues) == 0:
		return nil, invalid("queues must name at least one queue, or be left out")
	}
	for _, q := range queues {
		if err := d.mayUse(ctx, a, q, work); err != nil {
			return nil, err
		}
	}
	return d.tasks.ClaimAny(ctx, queues, a.Name(), claimAs(a, key)...)
}

// ClaimJob reserves the job named, if it is still waiting for the
// operator (tasks.ErrNotReady otherwise); a job of a queue not granted
// them is not found.
func (d *Desk) ClaimJob(ctx context.Context, a Actor, id string) (*tasks.Reservation, error) {
	queue, ok := tasks.QueueOf(id)
	if !ok || grantMissing(a, queue, work) != nil {
		return nil, tasks.ErrNotFound
	}
	return d.tasks.Claim(ctx, queue, a.Name(), tasks.OnlyJob(id), tasks.WithSkills(a.user.Skills))
}

// hold is the actor's hold of a job by its reservation's token.
func hold(a Actor, token string) tasks.Hold {
	return tasks.Hold{Holder: a.Name(), Token: token, Training: a.user.Training}
}

// Complete completes the job its holder holds by token, with its result
// (nil: none), which must fit the queue's outcome form: the engine judges
// it, and tells only the holder how it does not fit.
func (d *Desk) Complete(ctx context.Context, a Actor, id, token string, result json.RawMessage) (*tasks.Job, error) {
	return d.tasks.Complete(ctx, id, hold(a, token), result)
}

// CompleteNext completes the job as Complete does and claims the next job
// of its queue for its holder in the same atomic call. next is nil when
// nothing was claimed; why, when not nil, says why (the queue is paused,
// the holder is at its max_held, or the queue is no longer granted them:
// a person whose grant was taken away may finish what they hold, but
// claims nothing more from it).
func (d *Desk) CompleteNext(ctx context.Context, a Actor, id, token string, result json.RawMessage) (done *tasks.Job, next *tasks.Reservation, why, err error) {
	h := hold(a, token)
	if queue, _ := tasks.QueueOf(id); !a.canWork(queue) {
		done, err = d.tasks.Complete(ctx, id, h, result)
		return done, nil, nil, err
	}
	return d.tasks.CompleteNext(ctx, id, h, result, tasks.WithSkills(a.user.Skills))
}

// GiveBack ends the holder's reservation: the job goes back in line, in
// its place.
func (d *Desk) GiveBack(ctx context.Context, a Actor, id, token string) (*tasks.Job, error) {
	return d.tasks.Release(ctx, id, hold(a, token))
}

// Skip gives the job back as "not for me": it goes to someone else, never
// again to the holder.
func (d *Desk) Skip(ctx context.Context, a Actor, id, token string) (*tasks.Job, error) {
	return d.tasks.Skip(ctx, id, hold(a, token))
}

// SkipNext skips the job as Skip does and claims the next job of its
// queue, as people who skip mean it: "not for me, the next one". The
// claim's key is the skip's, so a skip sent twice (a double click, a
// resubmitted form) answers the same next job while it is held, and claims
// no second one. next is nil when nothing was claimed; why, when not nil,
// says why (the claim was refused: ErrForbidden when the queue is no
// longer theirs). The skip stands whatever the claim did.
func (d *Desk) SkipNext(ctx context.Context, a Actor, id, token string) (skipped *tasks.Job, next *tasks.Reservation, why, err error) {
	skipped, err = d.Skip(ctx, a, id, token)
	if err != nil {
		return nil, nil, nil, err
	}
	next, why = d.Claim(ctx, a, skipped.Queue, "after-skip:"+skipped.ID)
	return skipped, next, why, nil
}

// MoreTime moves the holder's deadline to seconds from now, within the
// queue's limits on extensions and on holding. With a key ("": none), a
// retry of the reservation's latest extension answers the job as it is
// and spends no second one.
func (d *Desk) MoreTime(ctx context.Context, a Actor, id, token string, seconds int, key string) (*tasks.Job, error) {
	return d.tasks.Extend(ctx, id, hold(a, token), seconds, tasks.WithExtendKey(key))
}

// AddTime moves the holder's deadline later by add (whole seconds), as
// MoreTime does: the page's choices are amounts added to the time left.
func (d *Desk) AddTime(ctx context.Context, a Actor, id, token string, add time.Duration, key string) (*tasks.Job, error) {
	return d.tasks.Extend(ctx, id, hold(a, token), int(add/time.Second), tasks.WithExtendKey(key), tasks.FromDeadline())
}

// SaveDraft saves what the holder has typed on the job so far (a JSON
// object) as its live draft, replacing the last, and returns when. If the
// job is taken from them, the draft is kept for the next holder and the
// supervisors (tasks.Draft).
func (d *Desk) SaveDraft(ctx context.Context, a Actor, id, token string, values json.RawMessage) (time.Time, error) {
	return d.tasks.SaveDraft(ctx, id, hold(a, token), values)
}

// CantBeDone ends the holder's reservation as failed, saying why: the job
// is tried again later by someone else, or is dead after its last attempt.
func (d *Desk) CantBeDone(ctx context.Context, a Actor, id, token, reason string) (*tasks.Job, error) {
	return d.tasks.Fail(ctx, id, hold(a, token), reason)
}
