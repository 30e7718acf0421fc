package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks"
)

// createBatch posts a batch to the app's queue and returns its id and the
// ids of its jobs.
func (a *app) createBatch(body string) (string, []string) {
	a.t.Helper()
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/batches", a.producer, body, 201, "")
	var ids []string
	for _, j := range out["jobs"].([]any) {
		ids = append(ids, j.(map[string]any)["id"].(string))
	}
	return out["batch"].(map[string]any)["id"].(string), ids
}

// wantBatch checks fields of GET /api/v1/batches/{id}.
func (a *app) wantBatch(id string, want map[string]any) map[string]any {
	a.t.Helper()
	b := a.expect("GET", "/api/v1/batches/"+id, a.producer, "", 200, "")
	for k, v := range want {
		if fmt.Sprint(b[k]) != fmt.Sprint(v) {
			a.t.Fatalf("batch %s = %s, want %v (%v)", k, fmt.Sprint(b[k]), v, b)
		}
	}
	return b
}

func TestBatchAPI(t *testing.T) {
	a := newApp(t)
	id, jobs := a.createBatch(`{"title":"Q3 invoices","priority":70,"max_concurrent":2,
		"jobs":[{"title":"one"},{"title":"two","priority":10},{"title":"three"}]}`)
	b := a.wantBatch(id, map[string]any{"queue": a.queue, "title": "Q3 invoices", "priority": 70, "max_concurrent": 2,
		"state": "sealed", "total": 3, "ready": 3, "reserved": 0, "completed": 0, "finished_at": nil})
	if _, ok := b["created_at"].(string); !ok {
		t.Fatalf("batch has no created_at: %v", b)
	}
	job := a.expect("GET", "/api/v1/jobs/"+jobs[0], a.producer, "", 200, "")
	if job["batch_id"] != id || job["priority"] != 70.0 {
		t.Fatalf("job of the batch = %v", job)
	}
	queues := a.expect("GET", "/api/v1/queues", a.producer, "", 200, "")["queues"].([]any)
	if q := queues[0].(map[string]any); q["ready"] != 3.0 || q["held"] != 1.0 {
		t.Fatalf("queue counts with a capped batch = %v", q)
	}

	// Two may be reserved at once; the third claim finds nothing.
	first, t1 := a.claim()
	second, t2 := a.claim()
	if first != jobs[0] || second != jobs[2] {
		t.Fatalf("claimed %s then %s, want the batch's priority-70 jobs first", first, second)
	}
	a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", a.operator, "", 204, "")
	a.wantBatch(id, map[string]any{"reserved": 2, "ready": 1})

	// A producer waiting on the batch wakes when its last job ends.
	done := make(chan map[string]any)
	go func() {
		_, out := a.call("GET", "/api/v1/batches/"+id+"?wait=20", a.producer, "")
		done <- out
	}()
	a.expect("POST", "/api/v1/jobs/"+first+"/complete", a.operator, `{"token":"`+t1+`"}`, 200, "")
	third, t3 := a.claim()
	if third != jobs[1] {
		t.Fatalf("the freed slot gave %s, want %s", third, jobs[1])
	}
	a.expect("POST", "/api/v1/jobs/"+second+"/complete", a.operator, `{"token":"`+t2+`"}`, 200, "")
	select {
	case out := <-done:
		t.Fatalf("wait returned before the batch ended: %v", out)
	case <-time.After(200 * time.Millisecond):
	}
	a.expect("POST", "/api/v1/jobs/"+third+"/complete", a.operator, `{"token":"`+t3+`"}`, 200, "")
	select {
	case out := <-done:
		if out["state"] != "completed" || out["completed"] != 3.0 || out["finished_at"] == nil {
			t.Fatalf("wait returned %v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return when the batch completed")
	}
	a.expect("DELETE", "/api/v1/batches/"+id, a.producer, "", 409, "invalid_state")
}

func TestOpenBatchAPI(t *testing.T) {
	a := newApp(t)
	id, jobs := a.createBatch(`{"title":"streamed","open":true}`)
	if len(jobs) != 0 {
		t.Fatalf("an empty open batch came with jobs %v", jobs)
	}
	out := a.expect("POST", "/api/v1/batches/"+id+"/jobs", a.producer, `{"jobs":[{"title":"a"},{"title":"b"}]}`, 201, "")
	if n := len(out["jobs"].([]any)); n != 2 {
		t.Fatalf("added %d jobs", n)
	}
	for range 2 {
		jid, token := a.claim()
		a.expect("POST", "/api/v1/jobs/"+jid+"/complete", a.operator, `{"token":"`+token+`"}`, 200, "")
	}
	// Every job is done, but more may come: not completed until sealed.
	a.wantBatch(id, map[string]any{"state": "open", "completed": 2, "finished_at": nil})
	_, waited := a.call("GET", "/api/v1/batches/"+id+"?wait=1", a.producer, "")
	if waited["state"] != "open" {
		t.Fatalf("wait on an open batch returned %v", waited)
	}
	sealed := a.expect("POST", "/api/v1/batches/"+id+"/seal", a.producer, "", 200, "")
	if sealed["state"] != "completed" || sealed["finished_at"] == nil {
		t.Fatalf("sealing a batch whose jobs are done gave %v", sealed)
	}
	a.expect("POST", "/api/v1/batches/"+id+"/jobs", a.producer, `{"jobs":[{"title":"late"}]}`, 409, "invalid_state")
	a.expect("POST", "/api/v1/batches/"+id+"/seal", a.producer, "", 200, "")
}

func TestCancelBatchAPI(t *testing.T) {
	a := newApp(t)
	id, jobs := a.createBatch(`{"title":"to cancel","max_concurrent":1,"jobs":[{"title":"a"},{"title":"b"},{"title":"c"}]}`)
	held, token := a.claim()
	if held != jobs[0] {
		t.Fatalf("claimed %s, want %s", held, jobs[0])
	}
	b := a.expect("DELETE", "/api/v1/batches/"+id, a.producer, "", 200, "")
	if b["state"] != "canceled" || b["canceled"] != 2.0 || b["reserved"] != 1.0 || b["finished_at"] != nil {
		t.Fatalf("canceled batch = %v", b)
	}
	for _, j := range jobs[1:] {
		if got := a.expect("GET", "/api/v1/jobs/"+j, a.producer, "", 200, ""); got["state"] != "canceled" {
			t.Fatalf("job %s of the canceled batch is %v", j, got["state"])
		}
	}
	a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", a.operator, "", 204, "")
	// The job in progress finishes normally, and then the batch has ended.
	a.expect("POST", "/api/v1/jobs/"+held+"/complete", a.operator, `{"token":"`+token+`"}`, 200, "")
	a.wantBatch(id, map[string]any{"state": "canceled", "completed": 1, "canceled": 2})
	if b := a.wantBatch(id, nil); b["finished_at"] == nil {
		t.Fatalf("canceled batch did not end with its last job: %v", b)
	}
	a.expect("DELETE", "/api/v1/batches/"+id, a.producer, "", 200, "") // again: harmless
}

func TestBatchAPIRefusesBadInput(t *testing.T) {
	a := newApp(t)
	path := "/api/v1/queues/" + a.queue + "/batches"
	big := `{"title":"big","jobs":[` + strings.TrimSuffix(strings.Repeat(`{"title":"x"},`, 1001), ",") + `]}`
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"title":"","jobs":[{"title":"x"}]}`, 400, "invalid_field"},
		{`{"title":"t","jobs":[]}`, 400, "invalid_field"},
		{`{"title":"t","max_concurrent":0,"jobs":[{"title":"x"}]}`, 400, "invalid_field"},
		{`{"title":"t","priority":101,"jobs":[{"title":"x"}]}`, 400, "invalid_field"},
		{`{"title":"t","jobs":[{"title":"x"},{"title":""}]}`, 400, "invalid_field"},
		{`{"title":"t","max_concurrent":"two","jobs":[{"title":"x"}]}`, 400, "invalid_field"},
		{`{"title":"t","jobs":[{"title":"x"}],"extra":1}`, 400, "invalid_json"},
		{`{"title":"t",`, 400, "invalid_json"},
		{big, 413, "too_large"},
	} {
		a.expect("POST", path, a.producer, tc.body, tc.status, tc.code)
	}
	out := a.expect("POST", path, a.producer, `{"title":"t","jobs":[{"title":"x"},{"title":""}]}`, 400, "invalid_field")
	if msg := out["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "jobs[1].title") {
		t.Fatalf("error message %q does not name the job", msg)
	}
	// Nothing of the refused requests was stored.
	if q := a.expect("GET", "/api/v1/queues", a.producer, "", 200, "")["queues"].([]any)[0].(map[string]any); q["ready"] != 0.0 {
		t.Fatalf("refused batches left jobs: %v", q)
	}
	a.expect("POST", "/api/v1/queues/nope/batches", a.super, `{"title":"t","jobs":[{"title":"x"}]}`, 404, "queue_not_found")
	for _, id := range []string{"nope", "01M849P5RVVXVBMYD523T0E2HQ." + a.queue} {
		a.expect("GET", "/api/v1/batches/"+id, a.producer, "", 404, "batch_not_found")
		a.expect("POST", "/api/v1/batches/"+id+"/seal", a.producer, "", 404, "batch_not_found")
		a.expect("POST", "/api/v1/batches/"+id+"/jobs", a.producer, `{"jobs":[{"title":"x"}]}`, 404, "batch_not_found")
		a.expect("DELETE", "/api/v1/batches/"+id, a.producer, "", 404, "batch_not_found")
	}
	id, _ := a.createBatch(`{"title":"t","jobs":[{"title":"x"}]}`)
	a.expect("GET", "/api/v1/batches/"+id+"?wait=61", a.producer, "", 400, "invalid_field")
}

func TestBatchAPIAccess(t *testing.T) {
	a := newApp(t)
	id, _ := a.createBatch(`{"title":"private","jobs":[{"title":"x"}]}`)
	// Operators may not create or read batches, nor a producer of
	// another queue.
	a.expect("POST", "/api/v1/queues/"+a.queue+"/batches", a.operator, `{"title":"t","jobs":[{"title":"x"}]}`, 403, "forbidden")
	a.expect("GET", "/api/v1/batches/"+id, a.operator, "", 403, "forbidden")
	a.expect("GET", "/api/v1/batches/"+id, "", "", 401, "unauthenticated")
	a.expect("GET", "/api/v1/batches/"+id, a.super, "", 200, "")
	queue := a.queue
	t.Run("producer of another queue", func(t *testing.T) {
		stranger := newApp(t)
		stranger.expect("GET", "/api/v1/batches/"+id, stranger.producer, "", 403, "forbidden")
		stranger.expect("DELETE", "/api/v1/batches/"+id, stranger.producer, "", 403, "forbidden")
		stranger.expect("POST", "/api/v1/batches/"+id+"/jobs", stranger.producer, `{"jobs":[{"title":"x"}]}`, 403, "forbidden")
		stranger.expect("POST", "/api/v1/queues/"+queue+"/batches", stranger.producer, `{"title":"t","jobs":[{"title":"x"}]}`, 403, "forbidden")
		// Told they may not, whatever they sent.
		stranger.expect("POST", "/api/v1/queues/"+queue+"/batches", stranger.producer, `{"title":`, 403, "forbidden")
		stranger.expect("POST", "/api/v1/queues/"+queue+"/jobs", stranger.producer, `{"title":`, 403, "forbidden")
		if b, err := stranger.tasks.GetBatch(context.Background(), id); err != nil || b.State != tasks.BatchSealed || b.Canceled != 0 {
			t.Fatalf("after the stranger's requests the batch is %+v (%v)", b, err)
		}
	})
}

func TestBatchRepeatedWithIdempotencyKeys(t *testing.T) {
	a := newApp(t)
	body := `{"title":"retried","jobs":[{"title":"a","idempotency_key":"k-a"},{"title":"b","idempotency_key":"k-b"}]}`
	id, jobs := a.createBatch(body)
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/batches", a.producer, body, 200, "")
	if got := out["batch"].(map[string]any)["id"]; got != id {
		t.Fatalf("the repeat answered batch %v, want %s", got, id)
	}
	if got := out["jobs"].([]any)[1].(map[string]any)["id"]; got != jobs[1] {
		t.Fatalf("the repeat answered job %v, want %s", got, jobs[1])
	}
	a.wantBatch(id, map[string]any{"total": 2})
}
