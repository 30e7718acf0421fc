package tasks

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/skills"

	"github.com/redis/go-redis/v9"
)

// Page is one page of a listing and the cursor of the next ("" at the end).
type Page struct {
	Jobs       []*Job
	NextCursor string
	// cursors are the cursors after each job of the page, in order.
	cursors []string
}

// MaxPageSize is the largest page a listing returns; 0 asks for DefaultPageSize.
const (
	MaxPageSize     = 500
	DefaultPageSize = 50
)

// ListJobs returns one page of the queue's jobs in a state, in the order of
// that state's index: ready by rank (next to be claimed first; jobs routed
// to people or skills after the open ones, lua/lib.lua), scheduled by
// due time, reserved by deadline, finished states by finish time; Descending
// reverses it. Queue "" lists every queue's, merged in that order. Pass the
// previous page's NextCursor to continue.
func (s *Store) ListJobs(ctx context.Context, queue string, state State, limit int, cursor string, opts ...ListOption) (Page, error) {
	if queue == "" {
		return s.listEveryQueue(ctx, state, limit, cursor, opts...)
	}
	if !validQueueName(queue) {
		return Page{}, ErrQueueNotFound
	}
	l, err := listingOf(state, opts)
	if err != nil {
		return Page{}, err
	}
	limit, err = pageSize(limit)
	if err != nil {
		return Page{}, err
	}
	score, after, err := decodeCursor(cursor)
	if err != nil {
		return Page{}, err
	}
	index := string(state)
	if l.sla != "" {
		// The jobs past their warn point, by due time: those due after
		// now are at risk, the others breached.
		index = "late"
		now := ms(s.now())
		if l.sla == SLAAtRisk {
			l.min = strconv.FormatInt(now+1, 10)
		} else {
			l.max = strconv.FormatInt(now, 10)
		}
	}
	r, err := s.run(ctx, listScript, queue, index, limit, score, after,
		word(!l.noPayloads, "payloads"), word(l.results, "results"), word(l.desc, "desc"), l.min, l.max)
	if err != nil {
		return Page{}, err
	}
	var page Page
	more := r.flag("more")
	for r.more() {
		id, score, raw, payload, result := r.str("job id"), r.str("score"), r.str("job metadata"), r.str("job payload"), r.str("job result")
		job, err := decodeJob(globalID(id, queue), raw, payload, s.now())
		if err != nil {
			return Page{}, err
		}
		if result != "" {
			job.Result = json.RawMessage(result)
		}
		page.Jobs = append(page.Jobs, job)
		page.cursors = append(page.cursors, encodeCursor(score, id))
	}
	if err := r.done(); err != nil {
		return Page{}, err
	}
	if more && len(page.cursors) > 0 {
		page.NextCursor = page.cursors[len(page.cursors)-1]
	}
	return page, nil
}

// word is w when on, else "": a script's optional word argument.
func word(on bool, w string) string {
	if on {
		return w
	}
	return ""
}

// Filter narrows a listing to the jobs that match every field set.
type Filter struct {
	// Person is who holds the job (one of them, for a job several hold
	// at once), or held it last (its reserved_by):
	// who completed, gave back or failed it.
	Person string
	// Batch is the id of the job's batch.
	Batch string
	// Priority, if set, is the job's priority.
	Priority *int
	// Text is found in the title, in any letter case.
	Text string
}

// Empty reports whether the filter lets every job through.
func (f Filter) Empty() bool { return f == Filter{} }

func (f Filter) matches(j *Job) bool {
	return (f.Person == "" || j.lastHolder == f.Person || j.HeldBy(f.Person) != nil) && (f.Batch == "" || j.BatchID == f.Batch) &&
		(f.Priority == nil || j.Priority == *f.Priority) &&
		(f.Text == "" || strings.Contains(strings.ToLower(j.Title), strings.ToLower(f.Text)))
}

// MaxScan bounds how many jobs one FindJobs looks through.
const MaxScan = 5000

// FindJobs returns up to limit jobs of the queue in the state that match
// the filter, in the order of ListJobs, from the cursor on. It looks
// through at most MaxScan jobs: the page's NextCursor goes on from where it
// stopped, whether the page is full or the scan reached its bound, and
// scanned says how many it looked through.
func (s *Store) FindJobs(ctx context.Context, queue string, state State, f Filter, limit int, cursor string, opts ...ListOption) (page Page, scanned int, err error) {
	if len(f.Text) > 200 {
		return Page{}, 0, invalid("q", "must be at most 200 bytes")
	}
	if limit, err = pageSize(limit); err != nil {
		return Page{}, 0, err
	}
	for scanned < MaxScan {
		p, err := s.ListJobs(ctx, queue, state, min(MaxPageSize, MaxScan-scanned), cursor, opts...)
		if err != nil {
			return Page{}, scanned, err
		}
		for i, j := range p.Jobs {
			scanned++
			cursor = p.cursors[i]
			if !f.matches(j) {
				continue
			}
			page.Jobs = append(page.Jobs, j)
			if len(page.Jobs) == limit {
				if i < len(p.Jobs)-1 || p.NextCursor != "" {
					page.NextCursor = cursor
				}
				return page, scanned, nil
			}
		}
		if p.NextCursor == "" {
			return page, scanned, nil
		}
	}
	page.NextCursor = cursor
	return page, scanned, nil
}

// ListOption changes what a listing returns.
type ListOption func(*listing)

// listing is what the options of a listing ask for.
type listing struct {
	noPayloads, results, desc bool
	// min and max bound the index's scores, inclusive ("": no bound).
	min, max string
	// sla, if set, lists the unfinished jobs that stand so (Standing).
	sla SLA
}

// WithoutPayloads leaves the jobs' payloads out of a listing (each job's
// Payload is empty): for a table that shows none.
func WithoutPayloads(l *listing) { l.noPayloads = true }

// WithResults fills in each completed job's Result: for a table that shows
// what people answered.
func WithResults(l *listing) { l.results = true }

// Descending reads the state's index from its end: the finished states
// newest first, the line of ready jobs from its back.
func Descending(l *listing) { l.desc = true }

// Finished keeps the jobs of a finished state (completed, dead, canceled)
// that finished in [since, until]; a zero time is no bound. It is a range
// of the index's scores, so it costs no scan.
func Finished(since, until time.Time) ListOption {
	return func(l *listing) {
		if !since.IsZero() {
			l.min = strconv.FormatInt(ms(since), 10)
		}
		if !until.IsZero() {
			l.max = strconv.FormatInt(ms(until), 10)
		}
	}
}

// listingOf reads a listing's options for the state, and checks them.
func listingOf(state State, opts []ListOption) (listing, error) {
	var l listing
	for _, o := range opts {
		o(&l)
	}
	if l.sla != "" {
		switch {
		case l.sla != SLAAtRisk && l.sla != SLABreached:
			return l, invalid("sla", "must be %q or %q", SLAAtRisk, SLABreached)
		case state != "":
			return l, invalid("sla", "lists jobs of every unfinished state: give no state with it")
		case l.min != "" || l.max != "":
			return l, invalid("sla", "lists unfinished jobs: give no time range with it")
		}
		return l, nil
	}
	if err := state.Check(); err != nil {
		return l, err
	}
	if (l.min != "" || l.max != "") && !state.Terminal() {
		return l, invalid("since", "a time range applies to completed, dead and canceled jobs only")
	}
	if l.min != "" && l.max != "" {
		lo, _ := strconv.ParseInt(l.min, 10, 64)
		hi, _ := strconv.ParseInt(l.max, 10, 64)
		if lo > hi {
			return l, invalid("until", "must not be before since")
		}
	}
	return l, nil
}

// Standing lists, instead of a state's jobs, the unfinished jobs of every
// state that stand so against their due time, SLAAtRisk or SLABreached,
// earliest due first (the state given must be ""). It reads the queue's
// index of jobs past their warn point (keys.Queue.Late), so it costs no
// scan, and is as current as the cron job's last look (WatchDue).
func Standing(sla SLA) ListOption { return func(l *listing) { l.sla = sla } }

// ListReservations returns one page of live reservations ordered by
// deadline, soonest first, of one queue or (queue "") of all queues.
func (s *Store) ListReservations(ctx context.Context, queue string, limit int, cursor string, opts ...ListOption) (Page, error) {
	p, err := s.ListJobs(ctx, queue, StateReserved, limit, cursor, opts...)
	p.Jobs = EachReservation(p.Jobs)
	return p, err
}

// EachReservation lists each reservation of the jobs (Job.Each): a job
// held by several people at once is there once per holder, soonest
// deadline first.
func EachReservation(jobs []*Job) []*Job {
	var out []*Job
	for _, j := range jobs {
		out = append(out, j.Each()...)
	}
	// (A job that ended meanwhile has none: last.)
	deadline := func(j *Job) int64 {
		if j.Deadline == nil {
			return math.MaxInt64
		}
		return ms(*j.Deadline)
	}
	slices.SortStableFunc(out, func(a, b *Job) int { return cmp.Compare(deadline(a), deadline(b)) })
	return out
}

// listEveryQueue is ListJobs of every queue: each queue's first page after
// the cursor, merged by the score and id of the state's index (which a
// cursor holds), so that the first limit of them are exactly the next page
// of all queues, in either order.
func (s *Store) listEveryQueue(ctx context.Context, state State, limit int, cursor string, opts ...ListOption) (Page, error) {
	l, err := listingOf(state, opts)
	if err != nil {
		return Page{}, err
	}
	limit, err = pageSize(limit)
	if err != nil {
		return Page{}, err
	}
	if _, _, err := decodeCursor(cursor); err != nil {
		return Page{}, err
	}
	names, err := s.QueueNames(ctx)
	if err != nil {
		return Page{}, err
	}
	type entry struct {
		job    *Job
		cursor string
		score  float64
		id     string
	}
	var all []entry
	more := false
	for _, q := range names {
		p, err := s.ListJobs(ctx, q, state, limit, cursor, opts...)
		if errors.Is(err, ErrQueueNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return Page{}, err
		}
		for i, j := range p.Jobs {
			score, id, _ := decodeCursor(p.cursors[i])
			f, _ := strconv.ParseFloat(score, 64)
			all = append(all, entry{j, p.cursors[i], f, id})
		}
		more = more || p.NextCursor != ""
	}
	slices.SortFunc(all, func(a, b entry) int {
		c := cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.id, b.id))
		if l.desc {
			return -c
		}
		return c
	})
	if len(all) > limit {
		all, more = all[:limit], true
	}
	var page Page
	for _, e := range all {
		page.Jobs = append(page.Jobs, e.job)
		page.cursors = append(page.cursors, e.cursor)
	}
	if more && len(all) > 0 {
		page.NextCursor = all[len(all)-1].cursor
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
		j, err := decodeJob(globalID(ids[i], queue), m, "", s.now())
		if err != nil {
			return nil, err
		}
		// (Held by several, it is filed by its first deadline.)
		for _, v := range j.Each() {
			if v.State == StateReserved && !v.Deadline.Before(from) && v.Deadline.Before(to) {
				jobs = append(jobs, v)
			}
		}
	}
	return jobs, nil
}

// MaxHolding bounds how many of one person's reservations Mine returns
// per queue.
const MaxHolding = MaxPageSize

// Mine returns what the person (with skills have) holds in the given
// queues, without payloads, soonest deadline first: each queue's engine
// keeps its reservations by holder (keys.Queue.Holding), so this reads
// only the person's. And, for each of the queues, what they may claim
// there (ForPerson; nothing in a queue that does not exist). In one
// round trip for all the queues, when the Store knows their skills lines
// (routing.go).
func (s *Store) Mine(ctx context.Context, person string, have skills.Set, queues []string) ([]*Job, map[string]ForPerson, error) {
	left := slices.DeleteFunc(slices.Clone(queues), func(q string) bool { return !validQueueName(q) })
	var held []*Job
	forPerson := map[string]ForPerson{}
	for try := 0; len(left) > 0; try++ {
		if try == routeTries {
			return nil, nil, errRoutesChanged
		}
		values, errs, err := s.readEachWith(ctx, holdingScript, left, func(q string) []any {
			version, lines := s.givenLines(q, have)
			return []any{person, MaxHolding, version, lines, MaxMine}
		})
		if err != nil {
			return nil, nil, err
		}
		var stale []string
		for i, r := range values {
			q := left[i]
			if errors.Is(errs[i], errRoutesChanged) {
				if err := s.readRoutes(ctx, q); err != nil {
					return nil, nil, err
				}
				stale = append(stale, q)
				continue
			}
			if errs[i] != nil {
				return nil, nil, errs[i]
			}
			read := func(n int64) ([]*Job, error) {
				var out []*Job
				for range n {
					id, raw := r.str("job id"), r.str("job metadata")
					if raw == "" {
						continue // finished in between
					}
					job, err := decodeJob(globalID(id, q), raw, "{}", s.now())
					if err != nil {
						return nil, err
					}
					out = append(out, job)
				}
				return out, nil
			}
			jobs, err := read(r.int("reservations"))
			if err != nil {
				return nil, nil, err
			}
			for _, j := range jobs {
				if v := j.HeldBy(person); v != nil {
					held = append(held, v)
				}
			}
			f := ForPerson{Routed: r.int("routed") == 1, Claimable: r.int("claimable")}
			for r.more() {
				mine, err := read(1)
				if err != nil {
					return nil, nil, err
				}
				f.Mine = append(f.Mine, mine...)
			}
			if err := r.done(); err != nil {
				return nil, nil, err
			}
			forPerson[q] = f
		}
		left = stale
	}
	slices.SortFunc(held, func(a, b *Job) int {
		return cmp.Or(a.Deadline.Compare(*b.Deadline), strings.Compare(a.ID, b.ID))
	})
	return held, forPerson, nil
}

// RequeueDead puts at most limit (1 to MaxPageSize) of the queue's dead
// jobs back in line with fresh attempts, oldest death first, each in its
// own atomic call: a bounded step of "requeue all dead". It returns how
// many it requeued and how many dead jobs are left. opts say why
// (WithReason), for each job.
func (s *Store) RequeueDead(ctx context.Context, queue, actor string, limit int, opts ...SuperviseOption) (requeued int, left int64, err error) {
	if err := ValidReason(ReasonOf(opts...)); err != nil {
		return 0, 0, err
	}
	p, err := s.ListJobs(ctx, queue, StateDead, limit, "", WithoutPayloads)
	if err != nil {
		return 0, 0, err
	}
	for _, j := range p.Jobs {
		_, _, err := s.Requeue(ctx, j.ID, actor, opts...)
		switch {
		case err == nil:
			requeued++
		case errors.Is(err, ErrInvalidState), errors.Is(err, ErrNotFound):
			// Requeued or purged meanwhile.
		default:
			return requeued, 0, err
		}
	}
	st, err := s.Stats(ctx, queue)
	return requeued, st.Dead, err
}
