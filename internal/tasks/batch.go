package tasks

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// A batch is one producer request made of many jobs of one queue: say 500
// documents to review. Its jobs are claimed through the normal Claim, in
// rank order, but at most MaxConcurrent of them are reserved at once. A
// batch may stay open while jobs are added in several calls; once sealed, it
// ends when its last job ends, and waiters learn of it.

// BatchState is where a batch is in its life.
type BatchState string

// The states of a batch.
const (
	BatchOpen      BatchState = "open"      // jobs may still be added
	BatchSealed    BatchState = "sealed"    // complete, jobs still running
	BatchCompleted BatchState = "completed" // every job completed
	// BatchCompletedWithFailures: every job ended, some dead or canceled.
	BatchCompletedWithFailures BatchState = "completed_with_failures"
	// BatchCanceled: canceled; it ends when its reserved jobs have.
	BatchCanceled BatchState = "canceled"
)

// MaxConcurrentLimit is the largest max_concurrent a batch may set.
const MaxConcurrentLimit = 100_000

// batchCancelStep bounds the jobs one batch_cancel.lua call cancels.
const batchCancelStep = 500

// Batch is a batch and the count of its jobs per state. Its JSON form is the
// batch object of the HTTP API.
type Batch struct {
	ID       string `json:"id"`
	Queue    string `json:"queue"`
	Title    string `json:"title"`
	Priority int    `json:"priority"`
	// MaxConcurrent caps how many of its jobs may be reserved at once; nil
	// for no cap.
	MaxConcurrent *int       `json:"max_concurrent"`
	State         BatchState `json:"state"`
	Total         int        `json:"total"`
	// Ready counts jobs waiting: ready (claimable or held back by the cap)
	// and scheduled.
	Ready     int `json:"ready"`
	Reserved  int `json:"reserved"`
	Completed int `json:"completed"`
	Dead      int `json:"dead"`
	Canceled  int `json:"canceled"`
	// Moved counts its jobs that missed their due time waiting and moved
	// to the queue's breach queue, and have not ended there.
	Moved      int        `json:"moved"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Ended reports whether every job of the batch has ended and no more may
// join: waiting on it is over.
func (b *Batch) Ended() bool { return b.FinishedAt != nil }

// batchRecord is a batch as the scripts store it (lua/lib.lua).
type batchRecord struct {
	Title         string     `json:"title"`
	Priority      int        `json:"priority"`
	MaxConcurrent int        `json:"max_concurrent"`
	State         BatchState `json:"state"`
	Total         int        `json:"total"`
	Ready         int        `json:"ready"`
	Reserved      int        `json:"reserved"`
	Completed     int        `json:"completed"`
	Dead          int        `json:"dead"`
	Canceled      int        `json:"canceled"`
	Moved         int        `json:"moved"`
	// Admitted counts the batch's jobs in the claim line (ready, not held).
	Admitted  int   `json:"admitted"`
	CreatedAt int64 `json:"created_at"`
	// FinishedAt is absent until the batch ends (the scripts test for nil).
	FinishedAt int64 `json:"finished_at,omitempty"`
}

func decodeBatch(id, raw string) (*Batch, error) {
	var r batchRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, fmt.Errorf("decode batch %s: %w", id, err)
	}
	q, _ := queueOf(id)
	b := &Batch{
		ID: id, Queue: q, Title: r.Title, Priority: r.Priority, State: r.State,
		Total: r.Total, Ready: r.Ready, Reserved: r.Reserved, Completed: r.Completed,
		Dead: r.Dead, Canceled: r.Canceled, Moved: r.Moved, CreatedAt: msTime(r.CreatedAt), FinishedAt: optTime(r.FinishedAt),
	}
	if r.MaxConcurrent > 0 {
		n := r.MaxConcurrent
		b.MaxConcurrent = &n
	}
	return b, nil
}

// NewBatch is what a producer gives to create a batch.
type NewBatch struct {
	// Title says what the request is: 1 to 200 characters.
	Title string `json:"title"`
	// Priority (0 to 100, default 50) is the priority of its jobs that set
	// none of their own.
	Priority *int `json:"priority"`
	// MaxConcurrent, if set (1 to 100,000), caps how many of its jobs may be
	// reserved at once.
	MaxConcurrent *int `json:"max_concurrent"`
	// Open lets jobs be added later (AddToBatch) until SealBatch.
	Open bool `json:"open"`
	// Jobs are its first jobs: at least one unless Open, at most MaxBatch.
	Jobs []NewJob `json:"jobs"`
}

// CreateBatch creates a batch in the queue with its first jobs, all in one
// atomic script. Invalid input changes nothing. A request whose jobs all
// exist already by their idempotency keys, all in one batch, repeats the
// request that made that batch: it creates nothing and returns that batch
// (other such repeats give ErrInvalidState).
func (s *Store) CreateBatch(ctx context.Context, queue, actor string, nb NewBatch) (*Batch, []Enqueued, error) {
	if !validQueueName(queue) {
		return nil, nil, ErrQueueNotFound
	}
	title, err := validTitle(nb.Title)
	if err != nil {
		return nil, nil, err
	}
	priority, err := validPriority(nb.Priority, DefaultPriority)
	if err != nil {
		return nil, nil, err
	}
	limit := 0
	if nb.MaxConcurrent != nil {
		if limit = *nb.MaxConcurrent; limit < 1 || limit > MaxConcurrentLimit {
			return nil, nil, invalid("max_concurrent", "must be between 1 and %d, or absent for no cap", MaxConcurrentLimit)
		}
	}
	if len(nb.Jobs) == 0 && !nb.Open {
		return nil, nil, invalid("jobs", "must hold at least one job, unless the batch is open")
	}
	state := BatchSealed
	if nb.Open {
		state = BatchOpen
	}
	record, _ := json.Marshal(batchRecord{Title: title, Priority: priority, MaxConcurrent: limit, State: state})
	return s.addJobs(ctx, queue, actor, newID(queue, s.now()), string(record), priority, nb.Jobs)
}

// AddToBatch adds jobs to an open batch for actor, all or none. A batch
// that is no longer open gives ErrInvalidState.
func (s *Store) AddToBatch(ctx context.Context, id, actor string, jobs []NewJob) (*Batch, []Enqueued, error) {
	b, err := s.GetBatch(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if b.State != BatchOpen {
		return nil, nil, ErrInvalidState
	}
	if len(jobs) == 0 {
		return nil, nil, invalid("jobs", "must hold at least one job")
	}
	return s.addJobs(ctx, b.Queue, actor, id, "", b.Priority, jobs)
}

// addJobs enqueues jobs into batch id for actor (creating it from record,
// unless record is ""); jobs without a priority take the batch's.
func (s *Store) addJobs(ctx context.Context, queue, actor, id, record string, priority int, jobs []NewJob) (*Batch, []Enqueued, error) {
	jobs = slices.Clone(jobs)
	for i := range jobs {
		if jobs[i].Priority == nil {
			jobs[i].Priority = &priority
		}
	}
	id, raw, out, err := s.enqueue(ctx, queue, actor, id, record, jobs)
	if err != nil {
		return nil, nil, err
	}
	b, err := decodeBatch(id, raw)
	return b, out, err
}

// SealBatch closes an open batch to new jobs; from then on it ends when its
// last job does. Sealing a batch that is not open changes nothing.
func (s *Store) SealBatch(ctx context.Context, id string) (*Batch, error) {
	r, err := s.batchScript(ctx, batchSealScript, id)
	if err != nil {
		return nil, err
	}
	record := r.str("batch")
	if err := r.done(); err != nil {
		return nil, err
	}
	return decodeBatch(id, record)
}

// CancelBatch cancels the batch for actor: every job of it not reserved is
// canceled, and the reserved ones end as they would (given back or
// reclaimed, they are canceled); the batch ends with the last of them.
// Canceling a canceled batch resumes an interrupted cancel; one that
// completed gives ErrInvalidState. It returns the batch.
func (s *Store) CancelBatch(ctx context.Context, id, actor string) (*Batch, error) {
	if err := validName("actor", actor); err != nil {
		return nil, err
	}
	cursor := ""
	for {
		// Bounded steps, so no script runs long however big the batch.
		r, err := s.batchScript(ctx, batchCancelScript, id, cursor, batchCancelStep, actor)
		if err != nil {
			return nil, err
		}
		record := r.str("batch")
		if cursor = r.str("cursor"); r.done() != nil {
			return nil, r.done()
		}
		if cursor == "" {
			return decodeBatch(id, record)
		}
	}
}

// batchScript runs a script on a batch: now, the batch id, then args.
func (s *Store) batchScript(ctx context.Context, sc script, id string, args ...any) (*reply, error) {
	queue, ok := queueOf(id)
	if !ok {
		return nil, ErrBatchNotFound
	}
	return s.run(ctx, sc, queue, append([]any{s.nowArg(), localID(id)}, args...)...)
}

// GetBatch returns the batch with its counts.
func (s *Store) GetBatch(ctx context.Context, id string) (*Batch, error) {
	queue, ok := queueOf(id)
	if !ok {
		return nil, ErrBatchNotFound
	}
	raw, err := s.rdb.HGet(ctx, keysFor(queue).Batches(), localID(id)).Result()
	if err == redis.Nil {
		return nil, ErrBatchNotFound
	}
	if err != nil {
		return nil, redisErr(err)
	}
	return decodeBatch(id, raw)
}

// ListBatches returns the newest limit batches (1 to MaxPageSize) of the
// queue, or of every queue when queue is "", newest first.
func (s *Store) ListBatches(ctx context.Context, queue string, limit int) ([]*Batch, error) {
	limit, err := pageSize(limit)
	if err != nil {
		return nil, err
	}
	names := []string{queue}
	if queue == "" {
		if names, err = s.QueueNames(ctx); err != nil {
			return nil, err
		}
	} else if !validQueueName(queue) {
		return nil, ErrQueueNotFound
	}
	var all []*Batch
	for _, q := range names {
		k := keysFor(q)
		ids, err := s.rdb.ZRevRange(ctx, k.BatchIndex(), 0, int64(limit-1)).Result()
		if err != nil {
			return nil, redisErr(err)
		}
		if len(ids) == 0 {
			continue
		}
		raws, err := s.rdb.HMGet(ctx, k.Batches(), ids...).Result()
		if err != nil {
			return nil, redisErr(err)
		}
		for i, raw := range raws {
			r, ok := raw.(string)
			if !ok {
				continue // purged in between
			}
			b, err := decodeBatch(globalID(ids[i], q), r)
			if err != nil {
				return nil, err
			}
			all = append(all, b)
		}
	}
	slices.SortFunc(all, func(a, b *Batch) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return all[:min(len(all), limit)], nil
}
