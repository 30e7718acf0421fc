package tasks

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// NumbersKept is how many minutes of a queue's numbers are kept: a day.
const NumbersKept = 24 * 60

// Minute is a queue's numbers in one minute.
type Minute struct {
	At time.Time
	// Ready is how many jobs were ready when the minute was last sampled.
	Ready int64
	// Claims, Completed and Dead count the claims answered, the jobs
	// completed and the jobs that died within the minute.
	Claims, Completed, Dead int64
	// OldestWait is how long the oldest ready job had waited when the
	// minute was last sampled: 0 if none was ready (or it was not known).
	OldestWait time.Duration
}

// SampleNumbers records the queue's numbers of the minute under way (the
// cron job calls it every run): the ready jobs now, the claims counter,
// the jobs completed and dead within the minute, and how long the oldest
// ready job has waited. Minutes a day old go.
func (s *Store) SampleNumbers(ctx context.Context, queue string) error {
	if !validQueueName(queue) {
		return ErrQueueNotFound
	}
	r, err := s.run(ctx, numbersScript, queue, s.nowArg(), NumbersKept)
	if err != nil {
		return err
	}
	return r.done()
}

// Numbers returns the queue's numbers of the last day, one per minute
// sampled, oldest first. A minute's claims are the claims counter's rise
// since the minute sampled before it (none for the first).
func (s *Store) Numbers(ctx context.Context, queue string) ([]Minute, error) {
	if !validQueueName(queue) {
		return nil, ErrQueueNotFound
	}
	raw, err := s.rdb.ZRange(ctx, keysFor(queue).Numbers(), 0, -1).Result()
	if err != nil {
		return nil, redisErr(err)
	}
	type sample struct {
		minute int64
		v      [5]int64
	}
	samples := make([]sample, 0, len(raw))
	for _, member := range raw {
		parts := strings.Fields(member)
		if len(parts) < 5 || len(parts) > 6 {
			continue
		}
		var smp sample
		smp.minute, _ = strconv.ParseInt(parts[0], 10, 64)
		for i, p := range parts[1:] {
			smp.v[i], _ = strconv.ParseInt(p, 10, 64)
		}
		samples = append(samples, smp)
	}
	// In score order already: by minute.
	out := make([]Minute, len(samples))
	for i, smp := range samples {
		out[i] = Minute{At: time.UnixMilli(smp.minute * 60000).UTC(), Ready: smp.v[0], Completed: smp.v[2], Dead: smp.v[3],
			OldestWait: time.Duration(smp.v[4]) * time.Millisecond}
		if i > 0 {
			out[i].Claims = max(0, smp.v[1]-samples[i-1].v[1])
		}
	}
	return out, nil
}
