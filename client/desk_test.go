package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"claimdesk/client"
	"claimdesk/internal/servertest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// pollInterval is how often an operator with nothing to claim asks again.
const pollInterval = 20 * time.Millisecond

// desk is a claimdesk server of the test with a queue of its own and a
// producer, an operator granted the queue and a supervisor, each with a
// Desk of their token.
type desk struct {
	srv                        *servertest.Server
	queue                      string
	producer, operator, super  *client.Desk
	producerName, operatorName string
}

var seq atomic.Int64

// newDesk starts a server with the settings in env (NAME=value).
func newDesk(t *testing.T, env ...string) *desk {
	t.Helper()
	n := seq.Add(1)
	d := &desk{srv: servertest.Start(t, env...), queue: fmt.Sprintf("q%d", n),
		producerName: fmt.Sprintf("producer%d", n), operatorName: fmt.Sprintf("operator%d", n)}
	d.srv.Command(t, "", "queue", "add", d.queue)
	d.producer = d.as(t, d.srv.Token(t, d.producerName, "producer", d.queue))
	d.operator = d.as(t, d.srv.Token(t, d.operatorName, "operator", d.queue))
	d.super = d.as(t, d.srv.Token(t, fmt.Sprintf("super%d", n), "supervisor"))
	return d
}

// as is a Desk of the server with the token.
func (d *desk) as(t *testing.T, token string) *client.Desk {
	t.Helper()
	c, err := client.New(d.srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// claimSoon claims the next job of the queue as the operator, asking
// again while nothing is ready, for up to 10 seconds.
func (d *desk) claimSoon(t *testing.T) *client.Claim {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		c, err := d.operator.Claim(ctx, d.queue)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if c != nil {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatal("nothing to claim within 10s")
		case <-time.After(pollInterval):
		}
	}
}

// enqueue puts jobs of these titles into the queue as the producer.
func (d *desk) enqueue(t *testing.T, titles ...string) []client.Job {
	t.Helper()
	var jobs []client.NewJob
	for _, title := range titles {
		jobs = append(jobs, client.NewJob{Title: title})
	}
	got, err := d.producer.Enqueue(t.Context(), d.queue, jobs...)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return got
}

// apiError is the *client.APIError in err; it fails the test if there is
// none.
func apiError(t *testing.T, err error) *client.APIError {
	t.Helper()
	var e *client.APIError
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *client.APIError", err, err)
	}
	return e
}

// EnqueueAndWait answers the job once its holder has completed it, with
// the result.
func TestEnqueueAndWait(t *testing.T) {
	t.Parallel()
	d := newDesk(t)
	type answer struct {
		job *client.Job
		err error
	}
	done := make(chan answer, 1)
	go func() {
		job, err := d.producer.EnqueueAndWait(t.Context(), d.queue,
			client.NewJob{Title: "Check invoice INV-2026-0701", Payload: &client.Payload{"gross": 980.0}})
		done <- answer{job, err}
	}()
	c := d.claimSoon(t)
	if c.Job.Title != "Check invoice INV-2026-0701" || (*c.Job.Payload)["gross"] != 980.0 || c.Reservation.Token == "" {
		t.Fatalf("claimed %+v", c)
	}
	select {
	case a := <-done:
		t.Fatalf("EnqueueAndWait answered before the job was completed: %+v, %v", a.job, a.err)
	default:
	}
	completed, err := d.operator.Complete(t.Context(), c, client.Result{"approved": true})
	if err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.job.ID != c.Job.ID || a.job.State != client.JobStateCompleted || a.job.CompletedBy == nil || *a.job.CompletedBy != d.operatorName ||
		a.job.Result == nil || !reflect.DeepEqual(*a.job.Result, client.Result{"approved": true}) {
		t.Fatalf("EnqueueAndWait answered %+v, want the completed job with its result", a.job)
	}
	if completed.ID != c.Job.ID || completed.State != client.JobStateCompleted {
		t.Fatalf("Complete answered %+v", completed)
	}
}

// Enqueue sends many jobs in one request and answers them in order; a
// repeated idempotency key answers the job it made. Wait answers a job
// that has finished at once, whatever way it finished, and ends with its
// context while the job is not finished.
func TestEnqueueManyAndWait(t *testing.T) {
	t.Parallel()
	d := newDesk(t)
	jobs := d.enqueue(t, "first", "second")
	if len(jobs) != 2 || jobs[0].Title != "first" || jobs[1].Title != "second" || jobs[0].State != client.JobStateReady {
		t.Fatalf("enqueued %+v", jobs)
	}
	key := "erp-4711"
	once, err := d.producer.Enqueue(t.Context(), d.queue, client.NewJob{Title: "once", IdempotencyKey: &key})
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.producer.Enqueue(t.Context(), d.queue, client.NewJob{Title: "twice", IdempotencyKey: &key})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].ID != once[0].ID || again[0].Title != "once" {
		t.Fatalf("a repeated key answered %+v, want %+v", again[0], once[0])
	}

	if r, err := d.producer.API.CancelWithResponse(t.Context(), jobs[1].ID, nil); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("cancel: %v %v", r, err)
	}
	canceled, err := d.producer.Wait(t.Context(), jobs[1].ID)
	if err != nil || canceled.State != client.JobStateCanceled {
		t.Fatalf("Wait on a canceled job: %+v, %v", canceled, err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	job, err := d.producer.Wait(ctx, jobs[0].ID)
	if !errors.Is(err, context.DeadlineExceeded) || job != nil {
		t.Fatalf("Wait on a ready job past its context's deadline: %+v, %v", job, err)
	}
	if took := time.Since(start); took < 1400*time.Millisecond {
		t.Fatalf("Wait gave up after %v, before its context's deadline", took)
	}
}

// An operator's loop: Claim, then CompleteNext until nothing is ready. A
// paused queue completes the job and says why nothing came next.
func TestClaimCompleteNext(t *testing.T) {
	t.Parallel()
	d := newDesk(t)
	jobs := d.enqueue(t, "one", "two", "three")

	c, err := d.operator.Claim(t.Context(), d.queue)
	var claimed []string
	for c != nil && err == nil {
		claimed = append(claimed, c.Job.ID)
		c, err = d.operator.CompleteNext(t.Context(), c, client.Result{"title": c.Job.Title})
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{jobs[0].ID, jobs[1].ID, jobs[2].ID}; !reflect.DeepEqual(claimed, want) {
		t.Fatalf("claimed %v, want %v", claimed, want)
	}
	for _, j := range jobs {
		done, err := d.producer.Wait(t.Context(), j.ID)
		if err != nil || done.State != client.JobStateCompleted || !reflect.DeepEqual(*done.Result, client.Result{"title": j.Title}) {
			t.Fatalf("job %s: %+v, %v", j.Title, done, err)
		}
	}
	if c, err := d.operator.Claim(t.Context(), d.queue); c != nil || err != nil {
		t.Fatalf("a claim of an empty queue answered %+v, %v; want nothing", c, err)
	}

	last := d.enqueue(t, "four", "five")
	c = d.claimSoon(t)
	if r, err := d.super.API.PauseQueueWithResponse(t.Context(), d.queue); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("pause: %v %v", r, err)
	}
	next, err := d.operator.CompleteNext(t.Context(), c, nil)
	if e := apiError(t, err); next != nil || e.Status != http.StatusConflict || e.Code != client.ErrorCodeQueuePaused || e.Message == "" {
		t.Fatalf("CompleteNext in a paused queue: %+v, %+v", next, e)
	}
	if done, err := d.producer.Wait(t.Context(), last[0].ID); err != nil || done.State != client.JobStateCompleted {
		t.Fatalf("the job completed in a paused queue: %+v, %v", done, err)
	}
}

// Each refusal of the server is an APIError with its status, code and
// message, and what is wrong with each field of a result that does not fit
// the queue's outcome form.
func TestRefusals(t *testing.T) {
	t.Parallel()
	d := newDesk(t)
	form := "formal" + d.queue
	d.srv.Command(t, "", "queue", "add", form, "--outcome", `{"fields": [{"name": "amount", "type": "number", "required": true}]}`)
	formOperator := d.as(t, d.srv.Token(t, "formal"+d.operatorName, "operator", form))

	for _, tc := range []struct {
		name   string
		call   func(t *testing.T) error
		status int
		code   client.ErrorCode
		fields map[string]string
	}{
		{"an unknown token", func(t *testing.T) error {
			_, err := d.as(t, "cdt_no-such-token-0000000000000000").Claim(t.Context(), d.queue)
			return err
		}, http.StatusUnauthorized, client.ErrorCodeUnauthenticated, nil},
		{"a producer's claim", func(t *testing.T) error {
			_, err := d.producer.Claim(t.Context(), d.queue)
			return err
		}, http.StatusForbidden, client.ErrorCodeForbidden, nil},
		{"no such job", func(t *testing.T) error {
			_, err := d.producer.Wait(t.Context(), "01KAQ3Z7M8R2C4V6X9B1N5T0HD."+d.queue)
			return err
		}, http.StatusNotFound, client.ErrorCodeJobNotFound, nil},
		{"a title too long", func(t *testing.T) error {
			_, err := d.producer.Enqueue(t.Context(), d.queue, client.NewJob{Title: strings.Repeat("x", 201)})
			return err
		}, http.StatusBadRequest, client.ErrorCodeInvalidField, nil},
		{"a reservation taken back", func(t *testing.T) error {
			d.enqueue(t, "taken back")
			c := d.claimSoon(t)
			if r, err := d.super.API.RequeueWithResponse(t.Context(), c.Job.ID, client.RequeueJSONRequestBody{}); err != nil || r.StatusCode() != http.StatusOK {
				t.Fatalf("requeue: %v %v", r, err)
			}
			_, err := d.operator.Complete(t.Context(), c, nil)
			return err
		}, http.StatusConflict, client.ErrorCodeReservationLost, nil},
		{"a result that does not fit the outcome form", func(t *testing.T) error {
			if _, err := d.super.Enqueue(t.Context(), form, client.NewJob{Title: "formal"}); err != nil {
				t.Fatal(err)
			}
			c, err := formOperator.Claim(t.Context(), form)
			if err != nil || c == nil {
				t.Fatalf("claim: %+v, %v", c, err)
			}
			_, err = formOperator.Complete(t.Context(), c, client.Result{"amount": "a lot"})
			return err
		}, http.StatusBadRequest, client.ErrorCodeInvalidField, map[string]string{"amount": "must be a number"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apiError(t, tc.call(t))
			if e.Status != tc.status || e.Code != tc.code || e.Message == "" || !reflect.DeepEqual(e.Fields, tc.fields) || e.RetryAfter != 0 {
				t.Fatalf("got %+v, want status %d, code %s, fields %v and a message", e, tc.status, tc.code, tc.fields)
			}
		})
	}
}

// A 429 and a 503 say how long to wait before a retry.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	t.Run("rate limited", func(t *testing.T) {
		t.Parallel()
		d := newDesk(t, "CLAIMDESK_RATE_USER=2/m")
		var err error
		for range 3 {
			if _, err = d.operator.Claim(t.Context(), d.queue); err != nil {
				break
			}
		}
		e := apiError(t, err)
		if e.Status != http.StatusTooManyRequests || e.Code != client.ErrorCodeRateLimited || e.RetryAfter < time.Second || e.RetryAfter > time.Minute {
			t.Fatalf("the third request of a user allowed two a minute: %+v", e)
		}
	})
	t.Run("store unavailable", func(t *testing.T) {
		t.Parallel()
		d := newDesk(t)
		d.srv.Redis.Kill()
		_, err := d.producer.Enqueue(t.Context(), d.queue, client.NewJob{Title: "while the store is down"})
		e := apiError(t, err)
		if e.Status != http.StatusServiceUnavailable || e.Code != client.ErrorCodeUnavailable || e.RetryAfter != time.Second {
			t.Fatalf("an enqueue while the store is down: %+v", e)
		}
	})
}

// A job that misses its due time and moves to its queue's breach queue
// is followed there by its old id: EnqueueAndWait answers it as its new
// queue's operator completed it.
func TestWaitFollowsAMove(t *testing.T) {
	t.Parallel()
	d := newDesk(t, "CLAIMDESK_CRON_INTERVAL=1s")
	leads := d.queue + "-leads"
	d.srv.Command(t, "", "queue", "add", leads)
	d.srv.Command(t, "", "queue", "add", d.queue, "--breach-queue", leads)
	lead := d.as(t, d.srv.Token(t, d.operatorName+"-lead", "operator", leads))
	type answer struct {
		job *client.Job
		err error
	}
	done := make(chan answer, 1)
	past := time.Now().Add(-time.Minute)
	go func() {
		job, err := d.producer.EnqueueAndWait(t.Context(), d.queue, client.NewJob{Title: "Answer the escalation", DueAt: &past})
		done <- answer{job, err}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var c *client.Claim
	for c == nil {
		var err error
		if c, err = lead.Claim(ctx, leads); err != nil {
			t.Fatalf("claim from the breach queue: %v", err)
		}
		if c == nil {
			select {
			case <-ctx.Done():
				t.Fatal("the overdue job did not come to the breach queue within 10s")
			case <-time.After(pollInterval):
			}
		}
	}
	if c.Job.MovedFrom == nil || *c.Job.MovedFrom != d.queue {
		t.Fatalf("claimed %+v, want the job moved from %s", c.Job, d.queue)
	}
	if _, err := lead.Complete(t.Context(), c, client.Result{"answered": true}); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.job.ID != c.Job.ID || a.job.State != client.JobStateCompleted {
		t.Fatalf("EnqueueAndWait answered %+v, %v; want the job completed in %s", a.job, a.err, leads)
	}
}
