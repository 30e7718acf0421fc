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
	// DueCompleted counts the jobs with a due time completed within the
	// minute (as sampled, like Claims), OnTime those before it.
	DueCompleted, OnTime int64
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
// since the minute sampled before it (none for the first), and so are its
// completions with a due time.
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
		// ready, claims, completed, dead, oldest wait, then (samples
		// since there were due times) the day and its completions with a
		// due time and on time (lua/numbers.lua).
		v [8]int64
	}
	samples := make([]sample, 0, len(raw))
	for _, member := range raw {
		parts := strings.Fields(member)
		if len(parts) < 5 || len(parts) > 9 {
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
			prev := samples[i-1]
			out[i].Claims = max(0, smp.v[1]-prev.v[1])
			// The day's counters start over with the day.
			due, onTime := smp.v[6], smp.v[7]
			if smp.v[5] == prev.v[5] {
				due, onTime = due-prev.v[6], onTime-prev.v[7]
			}
			out[i].DueCompleted, out[i].OnTime = max(0, due), max(0, onTime)
		}
	}
	return out, nil
}
