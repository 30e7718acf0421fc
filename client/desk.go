package client

import (
	"context"
	"math"
	"net/http"
	"time"
)

// maxWait is the longest one request may ask the server to wait for a job
// to finish (?wait=, at most 60 seconds).
const maxWait = 60 * time.Second

// Desk is a claimdesk server as seen with one API token: the generated
// client for every operation, and helpers for the common loops of
// producers and operators. Every error a helper returns for an answer of
// the server is an [*APIError].
type Desk struct {
	// API is the generated client, for the operations the helpers leave
	// out; it sends the token too.
	API *ClientWithResponses
}

// New returns a Desk of the server at baseURL (such as
// http://localhost:8080) that sends token in every request, as
// "Authorization: Bearer <token>". The options are the generated
// client's, such as [WithHTTPClient]; an HTTP client's Timeout must be
// longer than a minute, the longest a wait for a job asks of the server.
func New(baseURL, token string, opts ...ClientOption) (*Desk, error) {
	bearer := WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
	api, err := NewClientWithResponses(baseURL, append([]ClientOption{bearer}, opts...)...)
	if err != nil {
		return nil, err
	}
	return &Desk{API: api}, nil
}

// jobsAnswer is an enqueue's answer: one job, or the jobs sent, in order.
type jobsAnswer interface {
	AsOneJob() (OneJob, error)
	AsJobList() (JobList, error)
}

// Enqueue puts jobs into the queue in one request, all or none, and
// returns them as created, in the order given. A job whose
// idempotency_key was used before in the queue is answered as it was
// first created.
func (d *Desk) Enqueue(ctx context.Context, queue string, jobs ...NewJob) ([]Job, error) {
	var body EnqueueRequest
	var err error
	if len(jobs) == 1 {
		err = body.FromNewJob(jobs[0])
	} else {
		err = body.FromNewJobs(NewJobs{Jobs: jobs})
	}
	if err != nil {
		return nil, err
	}
	r, err := d.API.EnqueueWithResponse(ctx, queue, nil, body)
	if err != nil {
		return nil, err
	}
	var answer jobsAnswer
	switch {
	case r.JSON201 != nil:
		answer = r.JSON201
	case r.JSON200 != nil:
		answer = r.JSON200
	default:
		return nil, refusal(r.HTTPResponse, r.Body)
	}
	if len(jobs) == 1 {
		one, err := answer.AsOneJob()
		return []Job{one.Job}, err
	}
	list, err := answer.AsJobList()
	return list.Jobs, err
}

// Wait waits until the job has finished (completed, dead or canceled) and
// returns it as it is then: a completed job carries the holder's result.
// It asks the server to wait (GET /api/v1/jobs/{id}?wait=…) as often as
// it takes; the context's end ends it, with an error that is the
// context's (errors.Is).
func (d *Desk) Wait(ctx context.Context, id string) (*Job, error) {
	for {
		wait := maxWait
		if deadline, ok := ctx.Deadline(); ok {
			// At least a second, so that the last request waits too
			// rather than asking again and again until the deadline.
			wait = min(max(time.Until(deadline), time.Second), maxWait)
		}
		seconds := int(math.Ceil(wait.Seconds()))
		r, err := d.API.GetJobWithResponse(ctx, id, &GetJobParams{Wait: &seconds})
		if err != nil {
			return nil, err
		}
		if r.JSON200 == nil {
			return nil, refusal(r.HTTPResponse, r.Body)
		}
		switch r.JSON200.State {
		case JobStateCompleted, JobStateDead, JobStateCanceled:
			return r.JSON200, nil
		}
	}
}

// EnqueueAndWait puts the job into the queue, waits until it has finished
// and returns it as it is then (see [Desk.Wait]).
func (d *Desk) EnqueueAndWait(ctx context.Context, queue string, job NewJob) (*Job, error) {
	jobs, err := d.Enqueue(ctx, queue, job)
	if err != nil {
		return nil, err
	}
	return d.Wait(ctx, jobs[0].ID)
}

// Claim reserves the next job of the queue for the caller, an operator
// granted it, and returns it with its reservation; nil, and no error,
// when nothing is ready. With [Desk.CompleteNext], an operator's loop is:
//
//	c, err := d.Claim(ctx, queue)
//	for c != nil && err == nil {
//		c, err = d.CompleteNext(ctx, c, work(c.Job))
//	}
func (d *Desk) Claim(ctx context.Context, queue string) (*Claim, error) {
	r, err := d.API.ClaimWithResponse(ctx, queue, nil)
	if err != nil {
		return nil, err
	}
	switch {
	case r.JSON200 != nil:
		return r.JSON200, nil
	case r.StatusCode() == http.StatusNoContent:
		return nil, nil
	}
	return nil, refusal(r.HTTPResponse, r.Body)
}

// Complete completes the job of the claim with the result (nil: none)
// and returns the job, completed.
func (d *Desk) Complete(ctx context.Context, c *Claim, result Result) (*Job, error) {
	r, err := d.complete(ctx, c, result, false)
	if err != nil {
		return nil, err
	}
	job, err := r.AsJob()
	return &job, err
}

// CompleteNext completes the job of the claim with the result (nil: none)
// and, in the same step, claims the next job of its queue: it returns
// that claim, or nil when nothing is ready. When the queue's rules
// refused the next claim (it is paused, or the caller holds as many of
// its jobs as it allows), the job is completed all the same and the
// error is an [*APIError] of status 409 with the code the claim would
// have been refused with: queue_paused or hold_limit.
func (d *Desk) CompleteNext(ctx context.Context, c *Claim, result Result) (*Claim, error) {
	r, err := d.complete(ctx, c, result, true)
	if err != nil {
		return nil, err
	}
	both, err := r.AsCompletedAndNext()
	if err != nil {
		return nil, err
	}
	if e := both.NextError; e != nil {
		return nil, &APIError{Status: http.StatusConflict, Code: ErrorCode(e.Code), Message: e.Message}
	}
	return both.Next, nil
}

// complete sends the complete of the claim's job, with ?next=next.
func (d *Desk) complete(ctx context.Context, c *Claim, result Result, next bool) (*Complete200JSONResponseBody, error) {
	body := CompleteRequest{Token: c.Reservation.Token}
	if result != nil {
		body.Result = &result
	}
	r, err := d.API.CompleteWithResponse(ctx, c.Job.ID, &CompleteParams{Next: &next}, body)
	if err != nil {
		return nil, err
	}
	if r.JSON200 == nil {
		return nil, refusal(r.HTTPResponse, r.Body)
	}
	return r.JSON200, nil
}
