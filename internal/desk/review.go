package desk

import (
	"context"
	"encoding/json"
	"errors"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Review: a share of a queue's completions, every completion of a person
// in training, and each job whose answers disagree wait for a reviewer,
// who approves or sends back (tasks.Store, lua/lib.lua's Review).
// Reviewers are the operators of the queue who have users.ReviewSkill.

// mayReview refuses an actor who may not review the queue's completions.
func (d *Desk) mayReview(ctx context.Context, a Actor, queue string) error {
	if err := d.mayUse(ctx, a, queue, work); err != nil {
		return err
	}
	if !a.user.Reviews(queue) {
		return forbidden("reviewing needs the skill %q: ask a supervisor", users.ReviewSkill)
	}
	return nil
}

// ClaimReview reserves the next completion of the queue that waits for
// review, for a reviewer who did not do it; nil when none waits for them.
// A claim with the key of an earlier one answers that one's reservation
// while it is held (key "": none).
func (d *Desk) ClaimReview(ctx context.Context, a Actor, queue, key string) (*tasks.Reservation, error) {
	if err := d.mayReview(ctx, a, queue); err != nil {
		return nil, err
	}
	return d.tasks.Claim(ctx, queue, a.Name(), append(claimAs(a, key), tasks.ForReview())...)
}

// Approve completes the job its reviewer holds for review: with the
// result that waited, or the one given (which must fit the queue's
// outcome form).
func (d *Desk) Approve(ctx context.Context, a Actor, id, token string, result json.RawMessage) (*tasks.Job, error) {
	if err := d.mayReviewJob(ctx, a, id); err != nil {
		return nil, err
	}
	return d.tasks.Approve(ctx, id, hold(a, token), result)
}

// mayReviewJob refuses an actor who may not review the job's queue (a job
// of no queue is not found).
func (d *Desk) mayReviewJob(ctx context.Context, a Actor, id string) error {
	queue, ok := tasks.QueueOf(id)
	if !ok {
		return tasks.ErrNotFound
	}
	return d.mayReview(ctx, a, queue)
}

// SendBack ends the review its reviewer holds, with a note for the author:
// the job goes back to its author first (to anyone at once when they are
// away, or no longer work the queue), or, with overlap, for one more
// answer.
func (d *Desk) SendBack(ctx context.Context, a Actor, id, token, note string) (*tasks.Job, error) {
	if err := d.mayReviewJob(ctx, a, id); err != nil {
		return nil, err
	}
	j, err := d.tasks.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	first := false
	if j.Review != nil && j.Answers == nil {
		author, err := d.users.Get(ctx, j.Review.Author)
		if err != nil && !errors.Is(err, users.ErrNotFound) {
			return nil, err
		}
		first = err == nil && !author.Away && !author.Disabled && author.CanWork(j.Queue)
	}
	return d.tasks.SendBack(ctx, id, hold(a, token), note, first)
}

// ReviewsWaiting counts the completions waiting for review in each of the
// queues the actor reviews (none for anyone else).
func (d *Desk) ReviewsWaiting(ctx context.Context, a Actor) (map[string]int64, error) {
	var queues []string
	for _, q := range a.user.Queues {
		if a.user.Reviews(q) {
			queues = append(queues, q)
		}
	}
	if len(queues) == 0 {
		return map[string]int64{}, nil
	}
	return d.tasks.ReviewsWaiting(ctx, queues)
}

// ReviewBacklog returns, for a supervisor, the completions that wait for a
// reviewer in every queue, at most limit of each queue, best-ranked first.
func (d *Desk) ReviewBacklog(ctx context.Context, a Actor, limit int) ([]*tasks.Job, error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, err
	}
	queues, err := d.tasks.QueueNames(ctx)
	if err != nil {
		return nil, err
	}
	return d.tasks.ReviewBacklog(ctx, queues, limit)
}
