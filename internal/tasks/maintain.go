package tasks

import (
	"context"
)

// Reclaimed is one expired reservation that ReclaimExpired ended.
type Reclaimed struct {
	JobID string
	Queue string
	// Operator held the reservation.
	Operator string
	// State is where the job went: ready, or dead when its attempts are
	// used up (canceled in a canceled batch).
	State State
	// BatchID is the job's batch, if any.
	BatchID string
}

// ReclaimExpired ends at most limit reservations of the queue whose deadline
// has passed, in one atomic script: each job goes back to its place in line
// with one attempt spent, or to dead. more reports that expired reservations
// remain; call again to continue.
func (s *Store) ReclaimExpired(ctx context.Context, queue string, limit int) (moved []Reclaimed, more bool, err error) {
	res, err := s.maintain(ctx, reclaimScript, queue, limit)
	if err != nil {
		return nil, false, err
	}
	for i := 1; i+3 < len(res); i += 4 {
		id, _ := res[i].(string)
		op, _ := res[i+1].(string)
		state, _ := res[i+2].(string)
		batch, _ := res[i+3].(string)
		moved = append(moved, Reclaimed{JobID: globalID(id, queue), Queue: queue, Operator: op, State: State(state), BatchID: globalID(batch, queue)})
	}
	return moved, res[0] == int64(1), nil
}

// PromoteDue moves at most limit scheduled jobs whose time has come to ready
// and returns their ids. more reports that due jobs remain.
func (s *Store) PromoteDue(ctx context.Context, queue string, limit int) (ids []string, more bool, err error) {
	res, err := s.maintain(ctx, promoteScript, queue, limit)
	if err != nil {
		return nil, false, err
	}
	for _, v := range res[1:] {
		id, _ := v.(string)
		ids = append(ids, globalID(id, queue))
	}
	return ids, res[0] == int64(1), nil
}

// Purge deletes at most limit finished jobs older than the queue's
// retention (completed and canceled) or dead retention (dead). more reports
// that such jobs remain.
func (s *Store) Purge(ctx context.Context, queue string, limit int) (deleted int, more bool, err error) {
	res, err := s.maintain(ctx, purgeScript, queue, limit)
	if err != nil {
		return 0, false, err
	}
	n, _ := res[1].(int64)
	return int(n), res[0] == int64(1), nil
}

// maintain runs one of the bounded maintenance scripts.
func (s *Store) maintain(ctx context.Context, sc script, queue string, limit int) ([]any, error) {
	if !validQueueName(queue) {
		return nil, ErrQueueNotFound
	}
	if limit < 1 || limit > MaxMaintainBatch {
		return nil, invalid("limit", "must be between 1 and %d", MaxMaintainBatch)
	}
	return sc.run(ctx, s.rdb, queue, s.nowArg(), limit)
}
