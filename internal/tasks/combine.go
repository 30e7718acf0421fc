package tasks

import (
	"context"
	"encoding/json"
)

// enqueueRequest is one Enqueue's jobs, as script arguments (NewJob.args)
// and their payloads, and what the call answered for them once done is
// closed.
type enqueueRequest struct {
	args     []any
	payloads []string
	bytes    int // of payloads
	done     chan struct{}
	out      []Enqueued
	err      error
}

func (r *enqueueRequest) answered() chan struct{} { return r.done }

func (r *enqueueRequest) fail(err error) {
	r.err = err
	close(r.done)
}

func (r *enqueueRequest) jobs() int { return len(r.payloads) }

// enqueueCombined creates the jobs of req in the queue for actor, in one
// call of enqueue.lua with the enqueues of the same queue and producer
// that wait beside it (lines). Each request's jobs are still created all
// or none: the call creates every job of every request it carries, or none
// (the script fails before any write, or for the queue as a whole), and an
// idempotency key given by two of them names the job the first made, as
// two calls in a row would. Enqueues into a batch do not go together:
// each is checked against its batch.
func (s *Store) enqueueCombined(ctx context.Context, queue, actor string, req *enqueueRequest) ([]Enqueued, error) {
	req.done = make(chan struct{})
	// As many as one Enqueue may carry.
	take := func(waiting []*enqueueRequest) int {
		jobs, bytes := 0, 0
		for i, r := range waiting {
			if jobs, bytes = jobs+r.jobs(), bytes+r.bytes; jobs > MaxBatch || bytes > maxBatchBytes {
				return i
			}
		}
		return len(waiting)
	}
	send := func(ctx context.Context, group []*enqueueRequest) {
		jobs, values := 0, 0
		for _, r := range group {
			jobs, values = jobs+r.jobs(), values+len(r.args)
		}
		args := make([]any, 0, enqueueHead+values)
		args = append(args, s.nowArg(), strictStepMs, "", "", actor, jobs)
		payloads := make([]string, 0, jobs)
		for _, r := range group {
			args = append(args, r.args...)
			payloads = append(payloads, r.payloads...)
		}
		_, _, out, err := s.runEnqueue(ctx, queue, args, payloads)
		for _, r := range group {
			if err != nil {
				r.fail(err)
				continue
			}
			n := r.jobs()
			r.out, out = out[:n:n], out[n:]
			close(r.done)
		}
	}
	if !s.enqueues.call(ctx, queue+"\x00"+actor, req, take, send) {
		return nil, ctx.Err()
	}
	return req.out, req.err
}

// runEnqueue runs enqueue.lua with args (enqueueHead values, then each
// job's: NewJob.args) and reads its answer: the batch's id and record (""
// without a batch) and each job, with the payload it was given (payloads,
// one per job).
func (s *Store) runEnqueue(ctx context.Context, queue string, args []any, payloads []string) (batch, record string, _ []Enqueued, _ error) {
	r, err := s.run(ctx, enqueueScript, queue, args...)
	if err != nil {
		return "", "", nil, err
	}
	batch = globalID(r.str("batch id"), queue)
	record = r.str("batch")
	out := make([]Enqueued, len(payloads))
	moved := map[int]string{}
	for i := range out {
		switch r.str("created, existing or moved") {
		case "moved":
			// The key's job missed its due time and moved: it is
			// answered as it is in its new queue.
			id, to := r.str("job id"), r.str("queue it moved to")
			r.str("nothing")
			moved[i] = globalID(id, to)
			continue
		case "created":
			out[i].Created = true
		}
		out[i].Job = r.job()
		if out[i].Created && out[i].Job != nil {
			out[i].Job.Payload = json.RawMessage(payloads[i])
		}
	}
	if err := r.done(); err != nil {
		return "", "", nil, err
	}
	for i, id := range moved {
		var err error
		if out[i].Job, err = s.Get(ctx, id); err != nil {
			return "", "", nil, err
		}
	}
	return batch, record, out, nil
}
