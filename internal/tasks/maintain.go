package tasks

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
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
	if err := maintainable(queue, limit); err != nil {
		return 0, false, err
	}
	return s.moved(s.run(ctx, slaScript, queue, s.nowArg(), limit, strictStepMs))
}

// MoveBreached moves at most limit of the queue's jobs that missed their
// due time while waiting to the queue's breach queue (Queue.BreachQueue):
// WatchDue took them out of the queue's line and filed them as moving.
// Each is made in the breach queue first, as it was (move_in.lua), then
// deleted here (move_out.lua), its old id leading to its new one
// (MovedTo): a crash between the two leaves the job moving, and the next
// run makes it again, which finds it made. A job whose breach queue is
// gone goes back in line here. It returns how many moved, and whether
// more are moving.
func (s *Store) MoveBreached(ctx context.Context, queue string, limit int) (n int, more bool, err error) {
	if err := maintainable(queue, limit); err != nil {
		return 0, false, err
	}
	k := keysFor(queue)
	pairs, cursor, err := s.rdb.HScan(ctx, k.Moving(), 0, "", int64(limit)).Result()
	if err != nil {
		return 0, false, redisErr(err)
	}
	more = cursor != 0 || len(pairs) > 2*limit
	pairs = pairs[:min(len(pairs), 2*limit)]
	if len(pairs) == 0 {
		return 0, more, nil
	}
	// Each job's record, payload, kept drafts, answers, agreement and
	// result waiting for review, in one round trip: one slot, so one pipeline reaches one
	// node even on a cluster.
	reads := make([][6]*redis.StringCmd, len(pairs)/2)
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range reads {
			id := pairs[2*i]
			reads[i] = [6]*redis.StringCmd{p.HGet(ctx, k.Meta(), id), p.HGet(ctx, k.Payload(), id), p.HGet(ctx, k.Drafts(), id+"\nkept"),
				p.HGet(ctx, k.Result(), id+"\nanswers"), p.HGet(ctx, k.Result(), id+"\nreview"), p.HGet(ctx, k.Result(), id+"\nagreement")}
		}
		return nil
	}); err != nil && err != redis.Nil {
		return 0, more, redisErr(err)
	}
	for i, read := range reads {
		id, to := pairs[2*i], pairs[2*i+1]
		meta, payload, kept, answers, review, agreement := read[0], read[1], read[2], read[3], read[4], read[5]
		outcome := "gone"
		if meta.Err() == nil && validQueueName(to) {
			r, err := s.run(ctx, moveInScript, to, s.nowArg(), id, meta.Val(), payload.Val(), kept.Val(), queue, strictStepMs, answers.Val(), review.Val(), agreement.Val())
			if err == nil {
				r.flag("made")
				err = r.done()
			}
			switch {
			case err == nil:
				outcome = "made"
			case !errors.Is(err, ErrQueueNotFound):
				return n, more, err
			}
		}
		r, err := s.run(ctx, moveOutScript, queue, s.nowArg(), id, outcome)
		if err != nil {
			return n, more, err
		}
		if r.flag("moved") {
			n++
		}
		if err := r.done(); err != nil {
			return n, more, err
		}
	}
	return n, more, nil
}

// ReturnToBatches tells the batches of other queues how at most limit of
// their jobs that moved to this queue, and ended here (or were requeued
// after they ended), stand now (keys.Queue.Returns): each batch counts
// such a job as moved until it ends, and ends itself when its last job
// does. A batch is told first (batch_return.lua), then the job forgotten
// here unless it changed again meanwhile (returned.lua): a crash between
// them tells the batch again, which changes nothing. It returns how many
// it told, and whether more are left.
func (s *Store) ReturnToBatches(ctx context.Context, queue string, limit int) (n int, more bool, err error) {
	if err := maintainable(queue, limit); err != nil {
		return 0, false, err
	}
	k := keysFor(queue)
	changed, err := s.rdb.ZRangeWithScores(ctx, k.Returns(), 0, int64(limit)).Result()
	if err != nil {
		return 0, false, redisErr(err)
	}
	more = len(changed) > limit
	changed = changed[:min(len(changed), limit)]
	if len(changed) == 0 {
		return 0, false, nil
	}
	metas := make([]*redis.StringCmd, len(changed))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, z := range changed {
			metas[i] = p.HGet(ctx, k.Meta(), z.Member.(string))
		}
		return nil
	}); err != nil && err != redis.Nil {
		return 0, more, redisErr(err)
	}
	for i, z := range changed {
		id := z.Member.(string)
		// Gone (purged), it has nothing more to tell.
		if raw, err := metas[i].Result(); err == nil {
			m, err := decodeMeta(raw)
			if err != nil {
				return n, more, err
			}
			counter := "moved"
			if m.State.Terminal() {
				counter = string(m.State)
			}
			if m.BatchFrom != "" && validQueueName(m.MovedFrom) {
				r, err := s.run(ctx, batchReturnScript, m.MovedFrom, s.nowArg(), m.BatchFrom, id, counter)
				if err == nil && r.flag("changed") {
					n++
				}
				if err == nil {
					err = r.done()
				}
				if err != nil && !errors.Is(err, ErrQueueNotFound) {
					return n, more, err
				}
			}
		}
		r, err := s.run(ctx, returnedScript, queue, id, strconv.FormatInt(int64(z.Score), 10))
		if err == nil {
			err = r.done()
		}
		if err != nil {
			return n, more, err
		}
	}
	return n, more, nil
}

// MovedTo returns the id that the job of the given id has in the queue
// it moved to when it missed its due time (MoveBreached), or false if it
// did not move (or so long ago that its old id is forgotten, as a
// finished job would be).
func (s *Store) MovedTo(ctx context.Context, id string) (string, bool, error) {
	queue, ok := queueOf(id)
	if !ok {
		return "", false, nil
	}
	to, err := s.rdb.HGet(ctx, keysFor(queue).Moved(), localID(id)).Result()
	if err == redis.Nil {
		return "", false, nil
	}
	if err != nil {
		return "", false, redisErr(err)
	}
	to, _, _ = strings.Cut(to, "\n") // then its idempotency key and batch
	return globalID(localID(id), to), true, nil
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
// made by an earlier version, or of one that stopped being plain with more
// ready jobs than are indexed at once (lua/lib.lua, The oldest wait), about
// limit jobs' metadata at a time: once whole, the queue's oldest waiting
// job is known (Stats). more reports that the walk goes on; a queue
// indexed already, or plain, answers at once.
func (s *Store) IndexWaiting(ctx context.Context, queue string, limit int) (indexed int, more bool, err error) {
	return s.moved(s.maintain(ctx, waitingIndexScript, queue, limit))
}

// maintain runs one of the bounded maintenance scripts.
func (s *Store) maintain(ctx context.Context, sc script, queue string, limit int) (*reply, error) {
	if err := maintainable(queue, limit); err != nil {
		return nil, err
	}
	return s.run(ctx, sc, queue, s.nowArg(), limit)
}

// maintainable checks the queue's name and the limit of one step of
// maintenance.
func maintainable(queue string, limit int) error {
	if !validQueueName(queue) {
		return ErrQueueNotFound
	}
	if limit < 1 || limit > MaxMaintainBatch {
		return invalid("limit", "must be between 1 and %d", MaxMaintainBatch)
	}
	return nil
}
