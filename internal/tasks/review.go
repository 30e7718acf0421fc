package tasks

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Why a completion waits for review (Job.Review.Reason).
const (
	// ReviewTraining: its author is in training (Hold.Training).
	ReviewTraining = "training"
	// ReviewSample: it is in the share of the queue's completions that
	// are reviewed (Queue.ReviewFraction).
	ReviewSample = "sample"
	// ReviewDisagreement: the answers to a job with overlap agree less
	// than the queue's MinAgreement on some field.
	ReviewDisagreement = "disagreement"
)

// reviewLine is what a review claim hands claim.lua for the skills lines
// (lua/lib.lua, Review); "!" and it name the review line (REVIEW_LINE).
const reviewLine = "review"

// seatLine begins the name of each seat line (lua/lib.lua, Seats), where
// a job with overlap waits for more people while some hold it.
const seatLine = "~"

// SendBackWait is how long a job sent back waits for its author alone
// before anyone who may take it may (unless the author is away).
const SendBackWait = time.Hour

// Review is a completion that waits for review: why, whose, and the result
// that the job completes with when a reviewer approves it.
type Review struct {
	Reason string          `json:"reason"`
	Author string          `json:"author"`
	Result json.RawMessage `json:"result,omitempty"`
}

// ForReview claims a job waiting for review, and only such a job: the
// best-ranked one the reviewer did not do (or skip). Who may review is the
// caller's to check.
func ForReview() ClaimOption { return func(a *claimArgs) { a.review = true } }

// Approve completes the job its holder holds for review (ForReview), with
// the result that waited, or with result when it is not empty (it must
// fit the queue's outcome form, as a completion's). A job held otherwise
// gives ErrInvalidState, as does a review's reservation to Complete.
func (s *Store) Approve(ctx context.Context, id string, h Hold, result json.RawMessage) (*Job, error) {
	return s.complete(ctx, id, h, result, "approve")
}

// SendBack ends the review its holder holds with a note (1 to 2000 bytes)
// and drops the result that waited: a job with overlap goes back in line
// for one more answer; any other goes back to its author, who may claim it
// again: to them alone for SendBackWait when authorFirst, else (an author
// who is away) at once to anyone who may take it. A job held otherwise
// gives ErrInvalidState.
func (s *Store) SendBack(ctx context.Context, id string, h Hold, note string, authorFirst bool) (*Job, error) {
	if strings.TrimSpace(note) == "" {
		return nil, invalid("note", "must say what to change")
	}
	if err := ValidReason(note); err != nil {
		return nil, invalid("note", "must be at most 2000 bytes of UTF-8 text")
	}
	wait := ""
	if authorFirst {
		wait = strconv.FormatInt(SendBackWait.Milliseconds(), 10)
	}
	return s.fenced(ctx, sendBackScript, id, h, note, wait)
}

// ReviewsWaiting counts, per queue named, the jobs waiting for a reviewer
// (not held), in one round trip per Redis node.
func (s *Store) ReviewsWaiting(ctx context.Context, queues []string) (map[string]int64, error) {
	cmds := make(map[string]*redis.IntCmd, len(queues))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range queues {
			if validQueueName(q) {
				line := "r!" + reviewLine + "|"
				cmds[q] = p.ZLexCount(ctx, keysFor(q).Routed(), "["+line, "("+line[:len(line)-1]+"}")
			}
		}
		return nil
	})
	if err != nil {
		return nil, redisErr(err)
	}
	out := make(map[string]int64, len(cmds))
	for q, c := range cmds {
		out[q] = c.Val()
	}
	return out, nil
}

// ReviewBacklog returns the jobs waiting for a reviewer (not held) in the
// queues named, best-ranked first in each queue, at most limit of each: in
// two round trips per Redis node, whatever the number of queues.
func (s *Store) ReviewBacklog(ctx context.Context, queues []string, limit int) ([]*Job, error) {
	line := "r!" + reviewLine + "|"
	queues = slices.DeleteFunc(slices.Clone(queues), func(q string) bool { return !validQueueName(q) })
	ranges := make([]*redis.StringSliceCmd, len(queues))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, q := range queues {
			ranges[i] = p.ZRangeArgs(ctx, redis.ZRangeArgs{Key: keysFor(q).Routed(), Start: "[" + line, Stop: "(" + line[:len(line)-1] + "}",
				ByLex: true, Count: int64(limit)})
		}
		return nil
	}); err != nil {
		return nil, redisErr(err)
	}
	ids := make([][]string, len(queues))
	metas := make([]*redis.SliceCmd, len(queues))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, q := range queues {
			for _, m := range ranges[i].Val() {
				ids[i] = append(ids[i], m[strings.LastIndexByte(m, '|')+1:])
			}
			if len(ids[i]) > 0 {
				metas[i] = p.HMGet(ctx, keysFor(q).Meta(), ids[i]...)
			}
		}
		return nil
	}); err != nil {
		return nil, redisErr(err)
	}
	var out []*Job
	for i, q := range queues {
		if metas[i] == nil {
			continue
		}
		for k, raw := range metas[i].Val() {
			text, ok := raw.(string)
			if !ok {
				continue // ended meanwhile
			}
			j, err := decodeJob(globalID(ids[i][k], q), text, "", s.now())
			if err != nil {
				return nil, err
			}
			out = append(out, j)
		}
	}
	return out, nil
}
