package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
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
	if len(jobs) != 3 {
		t.Fatalf("the batch came with jobs %v, want 3", jobs)
	}
	b := a.wantBatch(id, map[string]any{"queue": a.queue, "title": "Q3 invoices", "priority": 70, "max_concurrent": 2,
		"state": "sealed", "total": 3, "ready": 3, "reserved": 0, "completed": 0, "dead": 0, "canceled": 0, "finished_at": nil})
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
	a.expect("GET", "/api/v1/batches/"+id, a.super, "", 200, "")
}

// An open batch takes jobs until sealed; a wait on it does not end while
// more may come, though every job it has is done.
func TestOpenBatchAPI(t *testing.T) {
	a := newApp(t)
	id, jobs := a.createBatch(`{"title":"streamed","open":true}`)
	if len(jobs) != 0 {
		t.Fatalf("an empty open batch came with jobs %v", jobs)
	}
	out := a.expect("POST", "/api/v1/batches/"+id+"/jobs", a.producer, `{"jobs":[{"title":"a"},{"title":"b"}]}`, 201, "")
	added := out["jobs"].([]any)
	if len(added) != 2 || added[1].(map[string]any)["batch_id"] != id || added[1].(map[string]any)["title"] != "b" {
		t.Fatalf("added %v", out)
	}
	for range 2 {
		jid, token := a.claim()
		a.expect("POST", "/api/v1/jobs/"+jid+"/complete", a.operator, `{"token":"`+token+`"}`, 200, "")
	}
	_, waited := a.call("GET", "/api/v1/batches/"+id+"?wait=1", a.producer, "")
	if waited["state"] != "open" || waited["completed"] != 2.0 || waited["finished_at"] != nil {
		t.Fatalf("wait on an open batch returned %v", waited)
	}
	sealed := a.expect("POST", "/api/v1/batches/"+id+"/seal", a.producer, "", 200, "")
	if sealed["id"] != id || sealed["state"] != "completed" || sealed["finished_at"] == nil {
		t.Fatalf("sealing a batch whose jobs are done gave %v", sealed)
	}
	a.expect("POST", "/api/v1/batches/"+id+"/jobs", a.producer, `{"jobs":[{"title":"late"}]}`, 409, "invalid_state")
}

func TestCancelBatchAPI(t *testing.T) {
	a := newApp(t)
	id, _ := a.createBatch(`{"title":"to cancel","max_concurrent":1,"jobs":[{"title":"a"},{"title":"b"},{"title":"c"}]}`)
	a.claim()
	b := a.expect("DELETE", "/api/v1/batches/"+id, a.producer, "", 200, "")
	if b["id"] != id || b["state"] != "canceled" || b["canceled"] != 2.0 || b["reserved"] != 1.0 || b["finished_at"] != nil {
		t.Fatalf("canceled batch = %v", b)
	}
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
	// The batch routes are for producers and supervisors.
	a.expect("POST", "/api/v1/queues/"+a.queue+"/batches", a.operator, `{"title":"t","jobs":[{"title":"x"}]}`, 403, "forbidden")
	a.expect("GET", "/api/v1/batches/"+id, a.operator, "", 403, "forbidden")
	a.expect("GET", "/api/v1/batches/"+id, "", "", 401, "unauthenticated")
	// A producer of another queue is refused by the desk, and told so
	// whatever they sent.
	_, stranger := a.newUser(users.Producer, "elsewhere")
	a.expect("GET", "/api/v1/batches/"+id, stranger, "", 403, "forbidden")
	a.expect("POST", "/api/v1/queues/"+a.queue+"/batches", stranger, `{"title":`, 403, "forbidden")
	a.expect("POST", "/api/v1/queues/"+a.queue+"/jobs", stranger, `{"title":`, 403, "forbidden")
	if b, err := a.tasks.GetBatch(context.Background(), id); err != nil || b.State != tasks.BatchSealed || b.Total != 1 {
		t.Fatalf("after the stranger's requests the batch is %+v (%v)", b, err)
	}
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
}
