package handlers_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// jobIDs are the ids of a job listing's answer, in order.
func jobIDs(out map[string]any) []string {
	var ids []string
	for _, j := range out["jobs"].([]any) {
		ids = append(ids, j.(map[string]any)["id"].(string))
	}
	return ids
}

// Supervisors review finished jobs newest first or oldest first, within a
// time range, through the API and the queue's page, which shows who
// finished each and what it came to.
func TestReviewFinishedJobs(t *testing.T) {
	a := newApp(t)
	var done []string
	for _, decision := range []string{"first", "second", "third"} {
		a.enqueue("Invoice " + decision)
		id, token := a.claim()
		a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+token+`","result":{"decision":"`+decision+`","note":"`+strings.Repeat("long ", 40)+`"}}`, 200, "")
		done = append(done, id)
	}
	base := "/api/v1/jobs?queue=" + a.queue + "&state=completed"
	if got := strings.Join(jobIDs(a.expect("GET", base, a.super, "", 200, "")), " "); got != strings.Join(done, " ") {
		t.Fatalf("by default, oldest first: %s, want %v", got, done)
	}
	newest := a.expect("GET", base+"&order=desc&limit=2", a.super, "", 200, "")
	if got := jobIDs(newest); len(got) != 2 || got[0] != done[2] || got[1] != done[1] {
		t.Fatalf("newest first: %v, want %s %s", got, done[2], done[1])
	}
	rest := a.expect("GET", base+"&order=desc&limit=2&cursor="+newest["next_cursor"].(string), a.super, "", 200, "")
	if got := jobIDs(rest); len(got) != 1 || got[0] != done[0] || rest["next_cursor"] != nil {
		t.Fatalf("newest first, page 2: %v", rest)
	}
	if got := jobIDs(a.expect("GET", base+"&since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00Z", a.super, "", 200, "")); len(got) != 3 {
		t.Fatalf("finished since 2000: %v", got)
	}
	if got := jobIDs(a.expect("GET", base+"&since=2999-01-01T00:00:00Z", a.super, "", 200, "")); len(got) != 0 {
		t.Fatalf("finished in the future: %v", got)
	}
	for _, bad := range []string{"&order=sideways", "&since=yesterday", "&until=2026-13-01T00:00:00Z",
		"&since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z"} {
		a.expect("GET", base+bad, a.super, "", 400, "invalid_field")
	}
	a.expect("GET", "/api/v1/jobs?queue="+a.queue+"&state=ready&since=2026-11-01T00:00:00Z", a.super, "", 400, "invalid_field")

	_, b := a.person(users.Supervisor)
	page := "/supervisor/queues/" + a.queue + "?state=completed"
	b.do("GET", page, nil)
	if b.status != 200 || strings.Index(b.body, "Invoice third") > strings.Index(b.body, "Invoice first") ||
		!strings.Contains(b.body, "Completed by") || !strings.Contains(b.body, ">"+a.opName+"<") ||
		!strings.Contains(b.body, "Decision: third · Note: long long") || !strings.Contains(b.body, "…") {
		t.Fatalf("completed, newest first, with who and what: %d %s", b.status, b.body)
	}
	if b.do("GET", page+"&order=asc", nil); strings.Index(b.body, "Invoice first") > strings.Index(b.body, "Invoice third") {
		t.Fatalf("completed, oldest first: %s", b.body)
	}
	if b.do("GET", page+"&when=today&tz=Pacific%2FKiritimati", nil); b.status != 200 || !strings.Contains(b.body, "Invoice first") {
		t.Fatalf("finished today in the viewer's zone: %d", b.status)
	}
	if b.do("GET", page+"&from=2000-01-01T00%3A00&to=2000-01-02T00%3A00", nil); !strings.Contains(b.body, "No completed jobs match.") {
		t.Fatalf("finished in 2000: %s", b.body)
	}
	for _, bad := range []string{"&when=yesterday", "&from=soon", "&when=today&tz=Mars%2FOlympus", "&order=sideways"} {
		if b.do("GET", page+bad, nil); b.status != 400 {
			t.Errorf("%s: %d, want 400", bad, b.status)
		}
	}
}

// Dead jobs are requeued many at once, each with the reason given and an
// audit entry, through the API and the page; a job not dead is told, not
// taken.
func TestRequeueMany(t *testing.T) {
	a := newApp(t)
	if _, _, err := a.tasks.PatchQueue(context.Background(), a.queue, tasks.QueuePatch{MaxAttempts: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	var dead []string
	for range 3 {
		a.enqueue("Scan")
		id, token := a.claim()
		a.expect("POST", "/api/v1/jobs/"+id+"/fail", a.operator, `{"token":"`+token+`","reason":"404"}`, 200, "")
		dead = append(dead, id)
	}
	ready := a.enqueue("Waiting")
	body := `{"ids":["` + dead[0] + `","` + ready + `"],"reason":"vendor resent the scans"}`
	a.expect("POST", "/api/v1/jobs/requeue", a.operator, body, 403, "forbidden")
	a.expect("POST", "/api/v1/jobs/requeue", a.super, `{"ids":[]}`, 400, "invalid_field")
	a.expect("POST", "/api/v1/jobs/requeue", a.super, `{"ids":["`+dead[0]+`"],"reason":"`+strings.Repeat("x", 2001)+`"}`, 400, "invalid_field")
	out := a.expect("POST", "/api/v1/jobs/requeue", a.super, body, 200, "")
	if r := out["requeued"].([]any); len(r) != 1 || r[0] != dead[0] {
		t.Fatalf("requeued %v", out)
	}
	if f := out["failed"].([]any); len(f) != 1 || f[0].(map[string]any)["id"] != ready || f[0].(map[string]any)["code"] != "invalid_state" {
		t.Fatalf("failed %v", out)
	}
	h := a.expect("GET", "/api/v1/jobs/"+dead[0]+"/history", a.super, "", 200, "")
	entries := h["history"].([]any)
	last := entries[len(entries)-1].(map[string]any)
	if last["action"] != "requeued" || last["reason"] != "vendor resent the scans" {
		t.Fatalf("history ends %v", last)
	}
	if a.expect("GET", "/api/v1/jobs/"+ready, a.super, "", 200, "")["state"] != "ready" {
		t.Fatal("the ready job changed")
	}

	_, b := a.person(users.Supervisor)
	b.do("GET", "/supervisor/queues/"+a.queue+"?state=dead", nil)
	if !strings.Contains(b.body, `data-testid="requeue-selected"`) || !strings.Contains(b.body, "Last held by") || !strings.Contains(b.body, ">404<") {
		t.Fatalf("the dead list: %s", b.body)
	}
	b.do("POST", "/supervisor/queues/"+a.queue+"/requeue-selected", url.Values{"_csrf": {b.csrf}, "id": {dead[1], dead[2]}, "reason": {" "}})
	b.do("GET", "/supervisor/queues/"+a.queue+"?state=dead", nil)
	if !strings.Contains(b.body, "Requeued 2 jobs with fresh attempts.") || !strings.Contains(b.body, "No dead jobs.") {
		t.Fatalf("after requeue selected: %s", b.body)
	}
	b.do("POST", "/supervisor/queues/"+a.queue+"/requeue-selected", url.Values{"_csrf": {b.csrf}})
	if b.do("GET", "/supervisor/queues/"+a.queue+"?state=dead", nil); !strings.Contains(b.body, "Nothing was selected") {
		t.Fatalf("requeue of nothing: %s", b.body)
	}
	audit := a.expect("GET", "/api/v1/audit?limit=100", a.super, "", 200, "")
	n := 0
	for _, e := range audit["entries"].([]any) {
		if e := e.(map[string]any); e["action"] == "job.requeued" && slices.Contains(dead, e["target"].(string)) {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d requeue entries in the audit log, want 3: %v", n, audit)
	}
}

// A job's page links to its queue and its batch's jobs for supervisors,
// who may open them, and not for operators; the Batches page shows each
// batch's id and opens its jobs.
func TestJobAndBatchLinks(t *testing.T) {
	a := newApp(t)
	op, id, _ := a.claimOnPage("Check 2")
	batch, _ := a.createBatch(`{"title":"Address checks","jobs":[{"title":"Check 1"}]}`)
	a.enqueue("Check 3")
	if op.do("GET", "/jobs/"+id, nil); op.status != 200 || strings.Contains(op.body, `href="/supervisor/queues/`) || !strings.Contains(op.body, `data-testid="job-queue"`) {
		t.Fatalf("the holder's page links to the queue: %d %s", op.status, op.body)
	}
	_, sup := a.person(users.Supervisor)
	sup.do("GET", "/jobs/"+id, nil)
	if !strings.Contains(sup.body, `href="/supervisor/queues/`+a.queue+`" data-testid="job-queue"`) {
		t.Fatalf("the supervisor's job page has no link to its queue: %s", sup.body)
	}
	sup.do("GET", "/supervisor/batches", nil)
	link := `href="/supervisor/queues/` + a.queue + `?batch=` + url.QueryEscape(batch) + `&amp;state=ready"`
	if !strings.Contains(sup.body, link) || !strings.Contains(sup.body, ">"+batch+"</code>") {
		t.Fatalf("the batch's row neither links to its jobs (%s) nor shows its id: %s", link, sup.body)
	}
	sup.do("GET", "/supervisor/queues/"+a.queue+"?batch="+url.QueryEscape(batch)+"&state=ready", nil)
	if !strings.Contains(sup.body, "Check 1") || strings.Contains(sup.body, "Check 3") {
		t.Fatalf("the batch's jobs: %s", sup.body)
	}
}
