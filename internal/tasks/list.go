package tasks

import (
	"cmp"
	"context"
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Page is one page of a listing and the cursor of the next ("" at the end).
type Page struct {
	Jobs       []*Job
	NextCursor string
}

// MaxPageSize is the largest page a listing returns; 0 asks for DefaultPageSize.
const (
	MaxPageSize     = 500
	DefaultPageSize = 50
)

// ListJobs returns one page of the queue's jobs in a state, in the order of
// that state's index: ready by rank (next to be claimed first), scheduled by
// due time, reserved by deadline, finished states by finish time. Pass the
// previous page's NextCursor to continue.
func (s *Store) ListJobs(ctx context.Context, queue string, state State, limit int, cursor string, opts ...ListOption) (Page, error) {
	if !validQueueName(queue) {
		return Page{}, ErrQueueNotFound
	}
	if !state.Valid() {
		return Page{}, invalid("state", "must be one of scheduled, ready, reserved, completed, dead, canceled")
	}
	limit, err := pageSize(limit)
	if err != nil {
		return Page{}, err
	}
	score, after, err := decodeCursor(cursor)
	if err != nil {
		return Page{}, err
	}
	withPayloads := "payloads"
	for _, o := range opts {
		if o == WithoutPayloads {
			withPayloads = ""
		}
	}
	res, err := s.run(ctx, listScript, queue, string(state), limit, score, after, withPayloads)
	if err != nil {
		return Page{}, err
	}
	var page Page
	for i := 1; i+3 < len(res); i += 4 {
		job, err := jobFrom(queue, []any{res[i], res[i+2], res[i+3]})
		if err != nil {
			return Page{}, err
		}
		page.Jobs = append(page.Jobs, job)
	}
	if res[0] == int64(1) {
		last := len(res) - 4
		page.NextCursor = encodeCursor(res[last+1].(string), res[last].(string))
	}
	return page, nil
}

// ListOption changes what a listing returns.
type ListOption int

// WithoutPayloads leaves the jobs' payloads out of a listing (each job's
// Payload is empty): for a table that shows none.
const WithoutPayloads ListOption = 1

// ListReservations returns one page of live reservations ordered by
// deadline, soonest first, of one queue or (queue "") of all queues.
func (s *Store) ListReservations(ctx context.Context, queue string, limit int, cursor string, opts ...ListOption) (Page, error) {
	if queue != "" {
		return s.ListJobs(ctx, queue, StateReserved, limit, cursor, opts...)
	}
	names, err := s.QueueNames(ctx)
	if err != nil {
		return Page{}, err
	}
	limit, err = pageSize(limit)
	if err != nil {
		return Page{}, err
	}
	// Each queue's first page after the cursor, merged by deadline: the
	// merged first limit are exactly the next page of all queues.
	var all []*Job
	more := false
	for _, q := range names {
		p, err := s.ListJobs(ctx, q, StateReserved, limit, cursor, opts...)
		if err != nil {
			return Page{}, err
		}
		all = append(all, p.Jobs...)
		more = more || p.NextCursor != ""
	}
	slices.SortFunc(all, func(a, b *Job) int {
		return cmp.Or(a.Deadline.Compare(*b.Deadline), strings.Compare(a.ID, b.ID))
	})
	var page Page
	if len(all) > limit {
		all, more = all[:limit], true
	}
	page.Jobs = all
	if more && len(all) > 0 {
		last := all[len(all)-1]
		page.NextCursor = encodeCursor(strconv.FormatInt(ms(*last.Deadline), 10), last.ID)
	}
	return page, nil
}

func pageSize(limit int) (int, error) {
	if limit == 0 {
		return DefaultPageSize, nil
	}
	if limit < 1 || limit > MaxPageSize {
		return 0, invalid("limit", "must be between 1 and %d", MaxPageSize)
	}
	return limit, nil
}

// A cursor is the score and id of the last job of a page, so the next page
// starts right after it even when jobs come and go in between.
func encodeCursor(score, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(score + " " + id))
}

func decodeCursor(cursor string) (score, id string, err error) {
	if cursor == "" {
		return "", "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	score, id, ok := strings.Cut(string(raw), " ")
	f, perr := strconv.ParseFloat(score, 64)
	if err != nil || !ok || perr != nil || math.IsNaN(f) || math.IsInf(f, 0) || id == "" {
		return "", "", invalid("cursor", "is not a cursor of this listing")
	}
	// Canonical digits, which Lua's tonumber reads as Go does.
	return strconv.FormatFloat(f, 'f', -1, 64), id, nil
}

// ReservationsDue returns at most limit reservations of the queue whose
// deadline falls in [from, to), soonest first: the holders to warn.
func (s *Store) ReservationsDue(ctx context.Context, queue string, from, to time.Time, limit int) ([]*Job, error) {
	if !validQueueName(queue) {
		return nil, ErrQueueNotFound
	}
	k := keysFor(queue)
	ids, err := s.rdb.ZRangeByScore(ctx, k.Reserved(), &redis.ZRangeBy{
		Min: strconv.FormatInt(ms(from), 10), Max: "(" + strconv.FormatInt(ms(to), 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, redisErr(err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	metas, err := s.rdb.HMGet(ctx, k.Meta(), ids...).Result()
	if err != nil {
		return nil, redisErr(err)
	}
	jobs := make([]*Job, 0, len(ids))
	for i, raw := range metas {
		m, ok := raw.(string)
		if !ok {
			continue // finished in between
		}
		j, err := decodeJob(globalID(ids[i], queue), m, "")
		if err != nil {
			return nil, err
		}
		if j.State == StateReserved {
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

// MaxHolding bounds how many of one person's reservations Holding returns
// per queue.
const MaxHolding = MaxPageSize

// Holding returns what the operator holds in the given queues, without
// payloads, soonest deadline first: each queue's engine keeps its
// reservations by holder (keys.Queue.Holding), so this reads only the
// operator's, in one round trip for all the queues.
func (s *Store) Holding(ctx context.Context, operator string, queues []string) ([]*Job, error) {
	queues = slices.DeleteFunc(slices.Clone(queues), func(q string) bool { return !validQueueName(q) })
	if len(queues) == 0 {
		return nil, nil
	}
	values, errs, err := s.readEach(ctx, holdingScript, queues, operator, MaxHolding)
	if err != nil {
		return nil, err
	}
	var held []*Job
	for i, res := range values {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for j := 0; j+1 < len(res); j += 2 {
			raw, _ := res[j+1].(string)
			if raw == "" {
				continue
			}
			job, err := jobFrom(queues[i], []any{res[j], raw, "{}"})
			if err != nil {
				return nil, err
			}
			if job.Deadline != nil {
				held = append(held, job)
			}
		}
	}
	slices.SortFunc(held, func(a, b *Job) int {
		return cmp.Or(a.Deadline.Compare(*b.Deadline), strings.Compare(a.ID, b.ID))
	})
	return held, nil
}
