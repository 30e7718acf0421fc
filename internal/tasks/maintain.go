package tasks

import (
	"context"
)

// ReclaimExpired ends at most limit reservations of the queue whose deadline
// has passed, in one atomic script: each job goes back to its place in line
// with one attempt spent, or to dead. It returns how many it ended; more
// reports that expired reservations remain: call again to continue.
func (s *Store) ReclaimExpired(ctx context.Context, queue string, limit int) (n int, more bool, err error) {
	return s.moved(s.maintain(ctx, reclaimScript, queue, limit))
}

// PromoteDue moves at most limit scheduled jobs whose time has come to
// ready, and returns how many. more reports that due jobs remain.
func (s *Store) PromoteDue(ctx context.Context, queue string, limit int) (n int, more bool, err error) {
	return s.moved(s.maintain(ctx, promoteScript, queue, limit))
}

// WatchDue handles at most limit of the moments of due times that came
// in the queue: a job whose warn point came is at risk, one whose due time
// came is breached, and raised to the queue's BreachPriority if that is
// above its own. Each is a transition (ActionAtRisk, ActionBreached) of
// the job in its state, told to the observers; a breach is also the
// webhook event job.sla_breached. It returns how many it handled; more
// reports that others came.
func (s *Store) WatchDue(ctx context.Context, queue string, limit int) (n int, more bool, err error) {
	if !validQueueName(queue) {
		return 0, false, ErrQueueNotFound
	}
	if limit < 1 || limit > MaxMaintainBatch {
		return 0, false, invalid("limit", "must be between 1 and %d", MaxMaintainBatch)
	}
	return s.moved(s.run(ctx, slaScript, queue, s.nowArg(), limit, strictStepMs))
}

// moved reads the answer of a maintenance script: more, how many jobs it
// moved (or deleted, or indexed).
func (s *Store) moved(r *reply, err error) (int, bool, error) {
	if err != nil {
		return 0, false, err
	}
	more, n := r.flag("more"), r.int("jobs")
	return int(n), more, r.done()
}

// Purge deletes at most limit finished jobs older than the queue's
// retention (completed and canceled) or dead retention (dead). more reports
// that such jobs remain.
func (s *Store) Purge(ctx context.Context, queue string, limit int) (deleted int, more bool, err error) {
	return s.moved(s.maintain(ctx, purgeScript, queue, limit))
}

// IndexWaiting indexes, by how long they wait, the ready jobs of a queue
// made by an earlier version, about limit jobs' metadata at a time: once
// whole, the queue's oldest waiting job is known (Stats). more reports
// that the walk goes on; a queue indexed already answers at once.
func (s *Store) IndexWaiting(ctx context.Context, queue string, limit int) (indexed int, more bool, err error) {
	return s.moved(s.maintain(ctx, waitingIndexScript, queue, limit))
}

// maintain runs one of the bounded maintenance scripts.
func (s *Store) maintain(ctx context.Context, sc script, queue string, limit int) (*reply, error) {
	if !validQueueName(queue) {
		return nil, ErrQueueNotFound
	}
	if limit < 1 || limit > MaxMaintainBatch {
		return nil, invalid("limit", "must be between 1 and %d", MaxMaintainBatch)
	}
	return s.run(ctx, sc, queue, s.nowArg(), limit)
}
