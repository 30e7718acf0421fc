package tasks

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/redis/go-redis/v9"
)

// ClaimAny claims the next job across the operator's queues, under one rule
// that holds whatever each queue's ageing:
//
// Each queue's next job counts as its priority, plus, in a queue with
// aging_seconds, one point for every aging_seconds it has waited. The job
// with the highest count is claimed; on a tie, the one that has waited
// longest. (A strict queue's job never gains points: its priority is all.)
//
// A queue that claims earliest due first (order "due") whose next job has
// a due time goes before those: among them, the earliest due first.
//
// This is how each queue already orders its own jobs, so the rule agrees
// with every queue's own line. Queues are looked at one by one: if the
// operator skipped a queue's next job, or someone claims it first, the
// claim goes to that queue's next job for them, and then on to the next
// queue. Paused queues and those whose max_held the operator reached are
// passed by. It returns nil when nothing is ready in any of them, or, if
// every one was passed by, ErrQueuePaused or ErrHoldLimit. With
// WithClaimKey, a live reservation made with the key in any of the queues
// is answered again.
func (s *Store) ClaimAny(ctx context.Context, queues []string, operator string, opts ...ClaimOption) (*Reservation, error) {
	var a claimArgs
	for _, o := range opts {
		o(&a)
	}
	if a.key != "" {
		if r, err := s.claimedAgain(ctx, queues, operator, a.key); err != nil || r != nil {
			return r, err
		}
	}
	type head struct {
		queue      string
		points     float64
		waitingFor int64
		due        int64 // 0: none
	}
	var heads []head
	for _, q := range queues {
		r, err := s.routed(ctx, q, a.skills, func(version, lines string) (*reply, error) {
			return s.run(ctx, headScript, q, s.nowArg(), operator, version, lines)
		})
		switch {
		case errors.Is(err, ErrQueueNotFound):
			continue
		case err != nil:
			return nil, err
		case !r.more():
			continue // nothing ready (a claim there may still promote some)
		}
		r.str("head id")
		priority, since, aging, now := r.int("priority"), r.int("waiting since"), r.int("ageing"), r.int("now")
		due := r.int("due time")
		if err := r.done(); err != nil {
			return nil, err
		}
		h := head{queue: q, points: float64(priority), waitingFor: now - since, due: due}
		if aging > 0 {
			h.points += float64(now-since) / float64(aging)
		}
		heads = append(heads, h)
	}
	slices.SortStableFunc(heads, func(x, y head) int {
		if (x.due > 0) != (y.due > 0) {
			if x.due > 0 {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(x.due, y.due), cmp.Compare(y.points, x.points), cmp.Compare(y.waitingFor, x.waitingFor))
	})
	order := make([]string, 0, len(queues))
	for _, h := range heads {
		order = append(order, h.queue)
	}
	for _, q := range queues {
		if !slices.Contains(order, q) {
			order = append(order, q)
		}
	}
	// A paused queue, or one whose max_held the operator reached, is passed
	// by; if every queue was, the claim says why.
	var refused error
	open := false
	for _, q := range order {
		r, err := s.Claim(ctx, q, operator, opts...)
		switch {
		case errors.Is(err, ErrQueueNotFound):
			continue
		case errors.Is(err, ErrQueuePaused) || errors.Is(err, ErrHoldLimit):
			refused = cmp.Or(refused, err)
			continue
		case err != nil || r != nil:
			return r, err
		}
		open = true
	}
	if open {
		return nil, nil
	}
	return nil, refused
}

// claimedAgain answers again the operator's live reservation made with
// key in any of these queues (nil for none). Whether it still lasts is the
// claim script's to judge, on the clock of every claim.
func (s *Store) claimedAgain(ctx context.Context, queues []string, operator, key string) (*Reservation, error) {
	cmds := map[string]*redis.BoolCmd{}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range queues {
			if validQueueName(q) {
				cmds[q] = p.HExists(ctx, keysFor(q).Claims(), operator+"\n"+key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, redisErr(err)
	}
	for _, q := range queues {
		if c := cmds[q]; c == nil || !c.Val() {
			continue
		}
		r, err := s.Claim(ctx, q, operator, WithClaimKey(key), func(a *claimArgs) { a.again = true })
		if err != nil && !errors.Is(err, ErrQueueNotFound) || r != nil {
			return r, err
		}
	}
	return nil, nil
}
