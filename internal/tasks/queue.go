package tasks

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"claimdesk/internal/keys"

	"github.com/redis/go-redis/v9"
)

// validQueueName reports whether name is a queue's name
// (keys.QueueNamePattern).
func validQueueName(name string) bool { return keys.ValidQueue(name) }

// Queue is a named line of jobs and the rules for reserving them. A job takes
// the lease and max attempts of its queue when it is enqueued, unless it sets
// its own.
type Queue struct {
	// Name matches keys.QueueNamePattern.
	Name string `json:"name"`
	// LeaseSeconds is how long a claim holds a job before it is reclaimed.
	// Default 300; 1 to 86400.
	LeaseSeconds int `json:"lease_seconds"`
	// MaxAttempts is how many failed or expired reservations a job may have
	// before it is dead. Default 5; 1 to 1000.
	MaxAttempts int `json:"max_attempts"`
	// MaxExtensions is how often one reservation may be extended.
	// Default (and when 0) 10; at most 1000. To forbid extending, set
	// MaxHoldSeconds to LeaseSeconds.
	MaxExtensions int `json:"max_extensions"`
	// MaxHoldSeconds caps how long one reservation may last, extensions
	// included. Default 4 hours, at least the lease; at most 7 days.
	MaxHoldSeconds int `json:"max_hold_seconds"`
	// AgingSeconds, when above 0, makes each point of priority worth that
	// many seconds of waiting, so low-priority work is never starved.
	// Default 0: strict priority. At most 100,000,000.
	AgingSeconds int `json:"aging_seconds"`
	// RetentionSeconds is how long completed and canceled jobs are kept.
	// Default 7 days; 60 to 10 years.
	RetentionSeconds int `json:"retention_seconds"`
	// DeadRetentionSeconds is how long dead jobs are kept for a requeue.
	// Default 30 days; 60 to 10 years.
	DeadRetentionSeconds int `json:"dead_retention_seconds"`
	// MaxHeld is how many of the queue's jobs one person may hold at once;
	// a claim beyond it fails with ErrHoldLimit. Default 0: no cap; at
	// most 1000.
	MaxHeld int `json:"max_held"`
	// Paused is set while the queue takes enqueues but no claims
	// (ErrQueuePaused). Only SetPaused changes it; PutQueue keeps it.
	Paused bool `json:"paused"`
	// RequireReason, when set, makes every cancel, requeue and force
	// release of the queue's jobs say why (WithReason): without a reason
	// it fails with ErrReasonRequired. Default false.
	RequireReason bool `json:"require_reason"`
	// Outcome is the queue's outcome form, if it has one: what completing
	// one of its jobs must say (Outcome.Check).
	Outcome *Outcome `json:"outcome,omitempty"`
	// SLASeconds, when above 0, makes each job due that long after it is
	// enqueued, unless it is given a due time of its own (NewJob.DueAt,
	// DueInSeconds). Default 0: no due time; at most 365 days.
	SLASeconds int `json:"sla_seconds"`
	// WarnFraction says when a job with a due time is at risk: once that
	// share of the time between its enqueue and its due time has passed.
	// Default DefaultWarnFraction; 0.01 to 1.
	WarnFraction float64 `json:"warn_fraction"`
	// Order is how claims choose among ready jobs: OrderRank (priority,
	// then age, with ageing; the default) or OrderDue (earliest due time
	// first, then the jobs without one by rank).
	Order string `json:"order"`
	// BreachPriority, when above 0, raises the priority of each job that
	// misses its due time to this (a job already at it or above keeps its
	// own). Default 0: a breach changes no priority; at most 100.
	BreachPriority int `json:"breach_priority"`
	// BreachQueue, when set, names another queue that each waiting job
	// (ready or scheduled) moves to when it misses its due time, keeping
	// its id's ULID, history, attempts, due time and batch
	// (MoveBreached). Default "": jobs stay.
	BreachQueue string `json:"breach_queue"`
	// Overlap is how many people answer each job: each answer is kept
	// (Job.Answers), nobody answers or holds one job twice, and the last
	// answer completes it with what the answers agree on (Outcome.Agree).
	// Default 1: one person, whose result completes it; at most
	// MaxOverlap.
	Overlap int `json:"overlap"`
	// OverlapAtOnce lets as many people as a job of a queue with overlap
	// still needs answers from hold it at once, each with a reservation
	// of their own (lua/lib.lua, Seats). Default false: one at a time.
	OverlapAtOnce bool `json:"overlap_at_once"`
	// ReviewFraction is the share of the completions (by people not in
	// training, whose every completion is reviewed) that wait for a
	// reviewer's approval before they complete the job (lua/lib.lua,
	// Review). Default 0: none; at most 1.
	ReviewFraction float64 `json:"review_fraction"`
	// MinAgreement, above 0, sends to review each job of a queue with
	// overlap whose answers agree less than this on some field (their
	// share: Agreed.Share). Default 0: none; at most 1.
	MinAgreement float64 `json:"min_agreement"`
}

// The orders a queue may claim its ready jobs in (Queue.Order).
const (
	OrderRank = "rank"
	OrderDue  = "due"
)

// DefaultWarnFraction is a queue's WarnFraction unless set.
const DefaultWarnFraction = 0.8

// QueuePatch is a change to some settings of a queue (PatchQueue): the
// fields given (not nil) change, the others stay.
type QueuePatch struct {
	LeaseSeconds         *int `json:"lease_seconds"`
	MaxAttempts          *int `json:"max_attempts"`
	MaxExtensions        *int `json:"max_extensions"`
	MaxHoldSeconds       *int `json:"max_hold_seconds"`
	AgingSeconds         *int `json:"aging_seconds"`
	RetentionSeconds     *int `json:"retention_seconds"`
	DeadRetentionSeconds *int `json:"dead_retention_seconds"`
	MaxHeld              *int `json:"max_held"`
	// RequireReason turns the need for a reason on or off.
	RequireReason *bool `json:"require_reason"`
	// Outcome replaces the outcome form; an empty one ({}) removes it.
	Outcome        *Outcome `json:"outcome"`
	SLASeconds     *int     `json:"sla_seconds"`
	WarnFraction   *float64 `json:"warn_fraction"`
	Order          *string  `json:"order"`
	BreachPriority *int     `json:"breach_priority"`
	// BreachQueue sets the queue breached jobs move to; "" for none.
	BreachQueue    *string  `json:"breach_queue"`
	Overlap        *int     `json:"overlap"`
	OverlapAtOnce  *bool    `json:"overlap_at_once"`
	ReviewFraction *float64 `json:"review_fraction"`
	MinAgreement   *float64 `json:"min_agreement"`
}

// settings pairs each setting of q with its field of the patch.
func (p QueuePatch) settings(q *Queue) []struct {
	to  *int
	set *int
} {
	return []struct {
		to  *int
		set *int
	}{
		{&q.LeaseSeconds, p.LeaseSeconds}, {&q.MaxAttempts, p.MaxAttempts},
		{&q.MaxExtensions, p.MaxExtensions}, {&q.MaxHoldSeconds, p.MaxHoldSeconds},
		{&q.AgingSeconds, p.AgingSeconds}, {&q.RetentionSeconds, p.RetentionSeconds},
		{&q.DeadRetentionSeconds, p.DeadRetentionSeconds}, {&q.MaxHeld, p.MaxHeld},
		{&q.SLASeconds, p.SLASeconds}, {&q.BreachPriority, p.BreachPriority},
		{&q.Overlap, p.Overlap},
	}
}

const (
	day   = 24 * 60 * 60
	years = 10 * 365 * day
	// strictStepMs is the rank value of one priority point when a queue does
	// not age: 10^11 ms (about 3 years) outweighs any real wait, so priority
	// is strict, and ranks stay exact in a double and in Lua's JSON (at most
	// 14 digits).
	strictStepMs = 100_000_000_000
)

// WithDefaults fills unset (zero) settings with their defaults.
func (q Queue) WithDefaults() Queue {
	q.LeaseSeconds = cmp.Or(q.LeaseSeconds, 300)
	q.MaxAttempts = cmp.Or(q.MaxAttempts, 5)
	q.MaxExtensions = cmp.Or(q.MaxExtensions, 10)
	q.MaxHoldSeconds = cmp.Or(q.MaxHoldSeconds, max(4*60*60, q.LeaseSeconds))
	q.RetentionSeconds = cmp.Or(q.RetentionSeconds, 7*day)
	q.DeadRetentionSeconds = cmp.Or(q.DeadRetentionSeconds, 30*day)
	q.WarnFraction = cmp.Or(q.WarnFraction, DefaultWarnFraction)
	q.Order = cmp.Or(q.Order, OrderRank)
	q.Overlap = cmp.Or(q.Overlap, 1)
	if q.Outcome.Empty() {
		q.Outcome = nil
	}
	return q
}

// Validate checks the settings as they are (zero is no default here).
func (q Queue) Validate() error {
	checks := []struct {
		field  string
		value  int
		lo, hi int
	}{
		{"lease_seconds", q.LeaseSeconds, 1, day},
		{"max_attempts", q.MaxAttempts, 1, 1000},
		{"max_extensions", q.MaxExtensions, 0, 1000},
		{"max_hold_seconds", q.MaxHoldSeconds, q.LeaseSeconds, 7 * day},
		{"aging_seconds", q.AgingSeconds, 0, 100_000_000},
		{"retention_seconds", q.RetentionSeconds, 60, years},
		{"dead_retention_seconds", q.DeadRetentionSeconds, 60, years},
		{"max_held", q.MaxHeld, 0, 1000},
		{"sla_seconds", q.SLASeconds, 0, 365 * day},
		{"breach_priority", q.BreachPriority, 0, 100},
		{"overlap", q.Overlap, 1, MaxOverlap},
	}
	if !validQueueName(q.Name) {
		return invalid("name", "must match ^"+keys.QueueNamePattern+"$")
	}
	// Also NaN is out of range.
	if !(q.WarnFraction >= 0.01 && q.WarnFraction <= 1) {
		return invalid("warn_fraction", "must be between 0.01 and 1")
	}
	for _, f := range []struct {
		field string
		value float64
	}{{"review_fraction", q.ReviewFraction}, {"min_agreement", q.MinAgreement}} {
		if !(f.value >= 0 && f.value <= 1) {
			return invalid(f.field, "must be between 0 and 1")
		}
	}
	if q.Order != OrderRank && q.Order != OrderDue {
		return invalid("order", "must be %q or %q", OrderRank, OrderDue)
	}
	if q.BreachQueue != "" && (!validQueueName(q.BreachQueue) || q.BreachQueue == q.Name) {
		return invalid("breach_queue", "must name another queue")
	}
	for _, c := range checks {
		if c.value < c.lo || c.value > c.hi {
			return outOfRange(c.field, c.lo, c.hi)
		}
	}
	if q.Outcome != nil {
		return q.Outcome.Validate()
	}
	return nil
}

// check validates q, and that the queue it names as its breach queue
// exists. The queue may still be deleted after: its breached jobs then
// stay (MoveBreached).
func (s *Store) check(ctx context.Context, q Queue) error {
	if err := q.Validate(); err != nil {
		return err
	}
	if q.BreachQueue == "" {
		return nil
	}
	known, err := s.rdb.SIsMember(ctx, keys.Queues, q.BreachQueue).Result()
	if err != nil {
		return redisErr(err)
	}
	if !known {
		return invalid("breach_queue", "no queue is named %q", q.BreachQueue)
	}
	return nil
}

// fields are the queue's settings as stored (keys.Queue.Conf): setting,
// value, … in the order of QueuePatch.settings, then whether jobs with
// overlap are held at once, the outcome form (its JSON, "" for none),
// whether a reason is required, the warn
// fraction, the order, the breach queue, the review fraction and the
// minimum agreement; Paused is not among them.
func (q Queue) fields() []any {
	return []any{
		"lease_seconds", q.LeaseSeconds,
		"max_attempts", q.MaxAttempts,
		"max_extensions", q.MaxExtensions,
		"max_hold_seconds", q.MaxHoldSeconds,
		"aging_ms", int64(q.AgingSeconds) * 1000,
		"retention_seconds", q.RetentionSeconds,
		"dead_retention_seconds", q.DeadRetentionSeconds,
		"max_held", q.MaxHeld,
		"sla_seconds", q.SLASeconds,
		"breach_priority", q.BreachPriority,
		"overlap", q.Overlap,
		"overlap_at_once", flag(q.OverlapAtOnce),
		"outcome", q.Outcome.String(),
		"require_reason", flag(q.RequireReason),
		"warn_fraction", strconv.FormatFloat(q.WarnFraction, 'g', -1, 64),
		"order", q.Order,
		"breach_queue", q.BreachQueue,
		"review_fraction", strconv.FormatFloat(q.ReviewFraction, 'g', -1, 64),
		"min_agreement", strconv.FormatFloat(q.MinAgreement, 'g', -1, 64),
	}
}

// CreateQueue creates a queue; zero settings take their defaults. It fails
// with ErrQueueExists if the name is taken, and returns the settings as
// stored.
func (s *Store) CreateQueue(ctx context.Context, q Queue) (Queue, error) {
	return s.CreateQueueAsGiven(ctx, q.WithDefaults())
}

// CreateQueueAsGiven creates a queue with exactly the settings given, zeros
// included (a form that shows every setting means the zero typed in it),
// as CreateQueue does otherwise.
func (s *Store) CreateQueueAsGiven(ctx context.Context, q Queue) (Queue, error) {
	if err := s.check(ctx, q); err != nil {
		return Queue{}, err
	}
	return s.writeQueue(ctx, "create", q.Name, append(q.fields(), "paused", flag(q.Paused))...)
}

// PutQueue creates the queue or replaces its settings; zero settings take
// their defaults. Whether it is paused stays as it was. It returns the
// settings as stored.
func (s *Store) PutQueue(ctx context.Context, q Queue) (Queue, error) {
	q = q.WithDefaults()
	if err := s.check(ctx, q); err != nil {
		return Queue{}, err
	}
	return s.writeQueue(ctx, "put", q.Name, q.fields()...)
}

// PatchQueue changes the settings the patch gives, and only those. The
// queue's settings after the change must be valid together (a lease no
// longer than the max hold, say): checked against the settings as read,
// and written only if they still are (else read again, and checked again).
// It returns the settings as stored, and as they were.
func (s *Store) PatchQueue(ctx context.Context, name string, p QueuePatch) (now, was Queue, err error) {
	for range patchTries {
		now, was, err = s.patchOnce(ctx, name, p)
		if !errors.Is(err, errSettingsChanged) {
			break
		}
	}
	return now, was, err
}

// patchTries bounds how often PatchQueue reads again settings that changed
// between its read and its write.
const patchTries = 10

// patchOnce is one try of PatchQueue.
func (s *Store) patchOnce(ctx context.Context, name string, p QueuePatch) (now, was Queue, err error) {
	q, rev, err := s.queueAt(ctx, name)
	if err != nil {
		return Queue{}, Queue{}, err
	}
	was = q
	var changed []any
	all := q.fields()
	for i, f := range p.settings(&q) {
		if f.set != nil {
			*f.to = *f.set
			changed = append(changed, all[2*i])
		}
	}
	if p.Outcome != nil {
		q.Outcome = p.Outcome
		if q.Outcome.Empty() {
			q.Outcome = nil
		}
		changed = append(changed, "outcome")
	}
	if p.RequireReason != nil {
		q.RequireReason = *p.RequireReason
		changed = append(changed, "require_reason")
	}
	if p.OverlapAtOnce != nil {
		q.OverlapAtOnce = *p.OverlapAtOnce
		changed = append(changed, "overlap_at_once")
	}
	if p.WarnFraction != nil {
		q.WarnFraction = *p.WarnFraction
		changed = append(changed, "warn_fraction")
	}
	if p.Order != nil {
		q.Order = *p.Order
		changed = append(changed, "order")
	}
	if p.BreachQueue != nil {
		q.BreachQueue = *p.BreachQueue
		changed = append(changed, "breach_queue")
	}
	if p.ReviewFraction != nil {
		q.ReviewFraction = *p.ReviewFraction
		changed = append(changed, "review_fraction")
	}
	if p.MinAgreement != nil {
		q.MinAgreement = *p.MinAgreement
		changed = append(changed, "min_agreement")
	}
	if err := s.check(ctx, q); err != nil {
		return Queue{}, Queue{}, err
	}
	if len(changed) == 0 {
		return q, was, nil
	}
	// The new values of just the settings given.
	all = q.fields()
	var write []any
	for i := 0; i < len(all); i += 2 {
		for _, c := range changed {
			if all[i] == c {
				write = append(write, all[i], all[i+1])
			}
		}
	}
	now, err = s.writeQueue(ctx, "update "+rev, name, write...)
	return now, was, err
}

// SetPaused pauses the queue (it takes enqueues, but claims fail with
// ErrQueuePaused) or resumes it.
func (s *Store) SetPaused(ctx context.Context, name string, paused bool) (Queue, error) {
	if !validQueueName(name) {
		return Queue{}, ErrQueueNotFound
	}
	return s.writeQueue(ctx, "update", name, "paused", flag(paused))
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// writeQueue writes settings of the named queue (queue_put.lua says how,
// by mode) and lists it among the queues. It returns the settings as
// stored.
func (s *Store) writeQueue(ctx context.Context, mode, name string, settings ...any) (Queue, error) {
	r, err := s.run(ctx, queuePutScript, name, append([]any{mode}, settings...)...)
	if err != nil {
		return Queue{}, err
	}
	stored := r.settings()
	if err := r.done(); err != nil {
		return Queue{}, err
	}
	// The settings first: a queue listed in the registry always has them.
	if err := s.durably(ctx, keys.Queues, func(p redis.Pipeliner) { p.SAdd(ctx, keys.Queues, name) }); err != nil {
		return Queue{}, redisErr(err)
	}
	return queueFrom(name, stored), nil
}

// DeleteQueue deletes an empty queue (no job ready, scheduled, reserved or
// dead, no batch unfinished: else ErrQueueNotEmpty), with what is kept of
// its finished jobs and batches.
func (s *Store) DeleteQueue(ctx context.Context, name string) error {
	if !validQueueName(name) {
		return ErrQueueNotFound
	}
	r, err := s.run(ctx, queueDeleteScript, name)
	if err == nil {
		err = r.done()
	}
	if err != nil {
		return err
	}
	keyLists.Delete(name)
	s.forms.Delete(name)
	s.routes.Delete(name)
	err = s.durably(ctx, keys.Queues, func(p redis.Pipeliner) { p.SRem(ctx, keys.Queues, name) })
	if err != nil {
		return redisErr(err)
	}
	// Made again meanwhile (its settings first, then the registry): list
	// it again.
	if n, err := s.rdb.Exists(ctx, keysFor(name).Conf()).Result(); err == nil && n == 1 {
		err = s.durably(ctx, keys.Queues, func(p redis.Pipeliner) { p.SAdd(ctx, keys.Queues, name) })
		if err != nil {
			return redisErr(err)
		}
	}
	return nil
}

// Queue returns the settings of the named queue.
func (s *Store) Queue(ctx context.Context, name string) (Queue, error) {
	q, _, err := s.queueAt(ctx, name)
	return q, err
}

// queueAt reads the named queue's settings and their revision
// (queue_put.lua).
func (s *Store) queueAt(ctx context.Context, name string) (q Queue, rev string, err error) {
	if !validQueueName(name) {
		return Queue{}, "", ErrQueueNotFound
	}
	raw, err := s.rdb.HGetAll(ctx, keysFor(name).Conf()).Result()
	if err != nil {
		return Queue{}, "", redisErr(err)
	}
	if len(raw) == 0 {
		return Queue{}, "", ErrQueueNotFound
	}
	return queueFrom(name, raw), cmp.Or(raw["rev"], "0"), nil
}

// queueFrom reads the settings of the named queue out of the fields of
// its settings hash (keys.Queue.Conf).
func queueFrom(name string, raw map[string]string) Queue {
	n := func(f string) int { v, _ := strconv.Atoi(raw[f]); return v }
	q := Queue{
		Name: name, LeaseSeconds: n("lease_seconds"), MaxAttempts: n("max_attempts"),
		MaxExtensions: n("max_extensions"), MaxHoldSeconds: n("max_hold_seconds"),
		AgingSeconds: n("aging_ms") / 1000, RetentionSeconds: n("retention_seconds"),
		DeadRetentionSeconds: n("dead_retention_seconds"), MaxHeld: n("max_held"),
		Paused: raw["paused"] == "1", Outcome: storedOutcome(raw["outcome"]),
		RequireReason: raw["require_reason"] == "1", SLASeconds: n("sla_seconds"),
		BreachPriority: n("breach_priority"), Order: cmp.Or(raw["order"], OrderRank),
		BreachQueue: raw["breach_queue"], Overlap: cmp.Or(n("overlap"), 1),
		OverlapAtOnce: raw["overlap_at_once"] == "1",
	}
	// A queue made before due times has no warn_fraction: the default.
	q.WarnFraction, _ = strconv.ParseFloat(raw["warn_fraction"], 64)
	q.WarnFraction = cmp.Or(q.WarnFraction, DefaultWarnFraction)
	q.ReviewFraction, _ = strconv.ParseFloat(raw["review_fraction"], 64)
	q.MinAgreement, _ = strconv.ParseFloat(raw["min_agreement"], 64)
	return q
}

// storedOutcome reads an outcome form as stored (checked when written);
// "" is none.
func storedOutcome(raw string) *Outcome {
	if raw == "" {
		return nil
	}
	var o Outcome
	if json.Unmarshal([]byte(raw), &o) != nil || o.Empty() {
		return nil
	}
	return &o
}

// QueueNames returns the names of all queues, sorted.
func (s *Store) QueueNames(ctx context.Context) ([]string, error) {
	names, err := s.rdb.SMembers(ctx, keys.Queues).Result()
	if err != nil {
		return nil, redisErr(err)
	}
	slices.Sort(names)
	return names, nil
}

// Stats counts a queue's jobs per state.
type Stats struct {
	Queue string `json:"queue"`
	// Ready counts every ready job, Held included.
	Ready int64 `json:"ready"`
	// Held counts the ready jobs that wait for a free slot of their batch's
	// max_concurrent; they are not claimable until one frees.
	Held      int64 `json:"held"`
	Scheduled int64 `json:"scheduled"`
	Reserved  int64 `json:"reserved"`
	Completed int64 `json:"completed"`
	Dead      int64 `json:"dead"`
	// DeadToday counts the dead jobs that died since the UTC day began.
	DeadToday int64 `json:"dead_today"`
	Canceled  int64 `json:"canceled"`
	// CompletedLastHour counts jobs completed in the hour before now.
	CompletedLastHour int64 `json:"completed_last_hour"`
	// Due counts scheduled jobs whose time has come but that are not yet
	// promoted to ready.
	Due int64 `json:"due"`
	// NextWaitingSince is when the job a claim would take next became
	// ready; zero when nothing is ready.
	NextWaitingSince *time.Time `json:"next_waiting_since,omitempty"`
	// OldestWaitingSince is since when the queue's oldest ready job (held
	// ones too) waits; zero when nothing is ready, or while a queue made by
	// an earlier version is being indexed (IndexWaiting).
	OldestWaitingSince *time.Time `json:"oldest_waiting_since,omitempty"`
	// AtRisk counts the unfinished jobs past their warn point and before
	// their due time, Breached those at or past it, of the jobs the cron
	// job has seen past their warn point (WatchDue, within a tick of it).
	AtRisk   int64 `json:"at_risk"`
	Breached int64 `json:"breached"`
	// DueCompletedToday counts the jobs with a due time completed since
	// the UTC day began, OnTimeToday those of them completed before it.
	DueCompletedToday int64 `json:"due_completed_today"`
	OnTimeToday       int64 `json:"on_time_today"`
}

// Attainment is the share of today's completions of jobs with a due time
// that came before it, and false when there were none.
func (s Stats) Attainment() (float64, bool) {
	return Tally{Due: s.DueCompletedToday, OnTime: s.OnTimeToday}.Attainment()
}

// Stats returns the counts of a queue's jobs per state.
func (s *Store) Stats(ctx context.Context, queue string) (Stats, error) {
	if !validQueueName(queue) {
		return Stats{}, ErrQueueNotFound
	}
	r, err := s.run(ctx, statsScript, queue, s.nowArg(), time.Hour.Milliseconds())
	if err != nil {
		return Stats{}, err
	}
	st, _, err := statsFrom(r)
	return st, err
}

// Counts are the counts a change of the queue reports (Effects.Counts).
func (s Stats) Counts() Counts {
	return Counts{Ready: s.Ready, Held: s.Held, Scheduled: s.Scheduled, Reserved: s.Reserved, Dead: s.Dead}
}

// QueueStats is a queue's settings and counts, read at one instant.
type QueueStats struct {
	Queue Queue
	Stats Stats
}

// Queues returns every queue's settings and counts, sorted by name, in two
// round trips however many queues there are.
func (s *Store) Queues(ctx context.Context) ([]QueueStats, error) {
	names, err := s.QueueNames(ctx)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	return s.QueuesNamed(ctx, names)
}

// QueuesNamed returns the settings and counts of the named queues, in the
// order named, in one round trip however many they are. A name of no queue
// (not a queue's name, its settings not written yet, or gone) is left out.
func (s *Store) QueuesNamed(ctx context.Context, names []string) ([]QueueStats, error) {
	names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !validQueueName(n) })
	if len(names) == 0 {
		return nil, nil
	}
	values, errs, err := s.readEach(ctx, statsScript, names, s.nowArg(), time.Hour.Milliseconds())
	if err != nil {
		return nil, err
	}
	out := make([]QueueStats, 0, len(names))
	for i, r := range values {
		if errors.Is(errs[i], ErrQueueNotFound) {
			continue // listed, but its settings are not written yet, or gone
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
		st, q, err := statsFrom(r)
		if err != nil {
			return nil, err
		}
		out = append(out, QueueStats{Queue: q, Stats: st})
	}
	return out, nil
}

// statsFrom reads the answer of stats.lua: the queue's counts and its
// settings.
func statsFrom(r *reply) (Stats, Queue, error) {
	st := Stats{Queue: r.queue, Ready: r.int("ready"), Scheduled: r.int("scheduled"), Reserved: r.int("reserved"),
		Completed: r.int("completed"), Dead: r.int("dead"), Canceled: r.int("canceled"),
		CompletedLastHour: r.int("completed recently"), Due: r.int("due"),
		NextWaitingSince: optTime(r.int("next waiting since")), Held: r.int("held"),
		OldestWaitingSince: optTime(r.int("oldest waiting since")), DeadToday: r.int("dead today"),
		AtRisk: r.int("at risk"), Breached: r.int("breached"),
		DueCompletedToday: r.int("due completed today"), OnTimeToday: r.int("on time today")}
	q := queueFrom(r.queue, r.settings())
	return st, q, r.done()
}
