package tasks

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
)

// Enqueues that arrive while an enqueue of the same queue and producer is
// under way wait for it to end, then go together, in one call of
// enqueue.lua: group commit. A lone enqueue goes at once, as its own call,
// so combining adds no wait; under a steady flow from many callers, each
// call carries the jobs of every caller that came meanwhile, and Redis
// pays a call's fixed cost (receiving it, its keys, its answer, a replica's
// confirmation) once for them all. Each request's jobs are still created
// all or none: the call creates every job of every request, or none (the
// script fails before any write, or for the queue as a whole), and an
// idempotency key given by two of them names the job the first made, as
// two calls in a row would. Enqueues into a batch do not combine: they
// are checked against the batch one by one.
type combiner struct {
	mu    sync.Mutex
	lines map[string]*line // queue + "\x00" + actor
}

// line is the enqueues of one queue and producer waiting for the call
// under way, if one is (busy).
type line struct {
	busy    bool
	waiting []*enqueueRequest
}

// enqueueRequest is one Enqueue's jobs, as script arguments (enqueueFields
// each), and what the call answered for them once done is closed.
type enqueueRequest struct {
	args  []any
	bytes int // of payloads
	done  chan struct{}
	out   []Enqueued
	err   error
}

func (r *enqueueRequest) jobs() int { return len(r.args) / enqueueFields }

// enqueueCombined creates the jobs of req in the queue for actor, in a call
// of its own or with the enqueues waiting beside it.
func (s *Store) enqueueCombined(ctx context.Context, queue, actor string, req *enqueueRequest) ([]Enqueued, error) {
	c := &s.combining
	key := queue + "\x00" + actor
	c.mu.Lock()
	if c.lines == nil {
		c.lines = map[string]*line{}
	}
	l := c.lines[key]
	if l == nil {
		l = &line{}
		c.lines[key] = l
	}
	l.waiting = append(l.waiting, req)
	lead := !l.busy
	l.busy = true
	c.mu.Unlock()
	if lead {
		// The calls run to their end whatever becomes of this request:
		// others ride on them.
		go s.sendCombined(context.WithoutCancel(ctx), queue, actor, key, l)
	}
	select {
	case <-req.done:
		return req.out, req.err
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(l.waiting, req); i >= 0 {
			l.waiting = slices.Delete(l.waiting, i, i+1)
		}
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// sendCombined sends the requests waiting in line l, in one call as many
// as one Enqueue may carry, tells each what became of its jobs, and goes
// on with those that came meanwhile until none is left.
func (s *Store) sendCombined(ctx context.Context, queue, actor, key string, l *line) {
	c := &s.combining
	for {
		c.mu.Lock()
		var group []*enqueueRequest
		jobs, bytes := 0, 0
		for len(l.waiting) > 0 {
			r := l.waiting[0]
			if len(group) > 0 && (jobs+r.jobs() > MaxBatch || bytes+r.bytes > maxBatchBytes) {
				break
			}
			group = append(group, r)
			jobs, bytes = jobs+r.jobs(), bytes+r.bytes
			l.waiting = l.waiting[1:]
		}
		if len(group) == 0 {
			l.busy = false
			delete(c.lines, key)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()

		args := make([]any, 0, enqueueHead+jobs*enqueueFields)
		args = append(args, s.nowArg(), strictStepMs, "", "", actor, jobs)
		for _, r := range group {
			args = append(args, r.args...)
		}
		_, _, out, err := s.runEnqueue(ctx, queue, args)
		for _, r := range group {
			n := r.jobs()
			if err != nil {
				r.err = err
			} else {
				r.out, out = out[:n:n], out[n:]
			}
			close(r.done)
		}
	}
}

// runEnqueue runs enqueue.lua with args (enqueueHead values, then
// enqueueFields per job) and reads its answer: the batch's id and record
// ("" without a batch) and each job, with the payload it was given.
func (s *Store) runEnqueue(ctx context.Context, queue string, args []any) (batch, record string, _ []Enqueued, _ error) {
	r, err := s.run(ctx, enqueueScript, queue, args...)
	if err != nil {
		return "", "", nil, err
	}
	batch = globalID(r.str("batch id"), queue)
	record = r.str("batch")
	out := make([]Enqueued, (len(args)-enqueueHead)/enqueueFields)
	for i := range out {
		out[i].Created = r.str("created or existing") == "created"
		out[i].Job = r.job()
		if out[i].Created && out[i].Job != nil {
			out[i].Job.Payload = json.RawMessage(args[enqueueHead+i*enqueueFields+8].(string))
		}
	}
	if err := r.done(); err != nil {
		return "", "", nil, err
	}
	return batch, record, out, nil
}
