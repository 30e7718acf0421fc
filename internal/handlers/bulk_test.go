package handlers_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Supervisors find jobs by title, person, batch and priority, requeue all
// dead in bounded steps, and cancel many at once, through the API and the
// queue's page.
func TestFindAndActInBulk(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	if _, _, err := a.tasks.PatchQueue(ctx, a.queue, tasks.QueuePatch{MaxAttempts: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, title := range []string{"Refund for Nordwind", "Refund for Südhang", "Address check"} {
		ids = append(ids, a.enqueue(title))
	}
	list := a.expect("GET", "/api/v1/jobs?queue="+a.queue+"&state=ready&q=refund", a.super, "", 200, "")
	if jobs := list["jobs"].([]any); len(jobs) != 2 || list["scanned"] != 3.0 {
		t.Fatalf("found %v", list)
	}
	a.expect("GET", "/api/v1/jobs?queue="+a.queue+"&priority=500", a.super, "", 400, "invalid_field")
	a.expect("GET", "/api/v1/jobs?queue="+a.queue+"&q="+strings.Repeat("x", 201), a.super, "", 400, "invalid_field")

	// Two fail for good; the person filter finds them by who held them.
	for range 2 {
		id, token := a.claim()
		a.expect("POST", "/api/v1/jobs/"+id+"/fail", a.operator, `{"token":"`+token+`","reason":"no"}`, 200, "")
	}
	dead := a.expect("GET", "/api/v1/jobs?queue="+a.queue+"&state=dead&person="+a.opName, a.super, "", 200, "")
	if len(dead["jobs"].([]any)) != 2 {
		t.Fatalf("dead of %s: %v", a.opName, dead)
	}
	if out := a.expect("POST", "/api/v1/queues/"+a.queue+"/requeue-dead?limit=0", a.super, "", 200, ""); out["requeued"] != 2.0 || out["dead_left"] != 0.0 {
		t.Fatalf("requeue all dead: %v", out)
	}
	a.expect("POST", "/api/v1/queues/"+a.queue+"/requeue-dead", a.operator, "", 403, "forbidden")
	a.expect("POST", "/api/v1/queues/"+a.queue+"/requeue-dead?limit=501", a.super, "", 400, "invalid_field")

	// Cancel many: one already gone is told, not an error.
	a.expect("DELETE", "/api/v1/jobs/"+ids[2], a.producer, "", 200, "")
	out := a.expect("POST", "/api/v1/jobs/cancel", a.super, `{"ids":["`+ids[0]+`","`+ids[2]+`"]}`, 200, "")
	if c := out["canceled"].([]any); len(c) != 1 || c[0] != ids[0] {
		t.Fatalf("canceled %v", out)
	}
	if f := out["failed"].([]any); len(f) != 1 || f[0].(map[string]any)["id"] != ids[2] || f[0].(map[string]any)["code"] != "invalid_state" || f[0].(map[string]any)["message"] == "" {
		t.Fatalf("failed %v", out)
	}
	a.expect("POST", "/api/v1/jobs/cancel", a.super, `{"ids":[]}`, 400, "invalid_field")

	// The page: a filter, and cancel selected.
	_, b := a.person(users.Supervisor)
	b.do("GET", "/supervisor/queues/"+a.queue+"?state=ready&q=S%C3%BCdhang", nil)
	if b.status != 200 || !strings.Contains(b.body, "Refund for Südhang") || strings.Contains(b.body, "Address check") ||
		!strings.Contains(b.body, `data-testid="scanned"`) {
		t.Fatalf("filtered page: %d", b.status)
	}
	b.do("POST", "/supervisor/queues/"+a.queue+"/cancel-selected", url.Values{"_csrf": {b.csrf}, "state": {"ready"}, "id": {ids[1]}})
	b.do("GET", "/supervisor/queues/"+a.queue+"?state=ready", nil)
	if !strings.Contains(b.body, "Canceled 1 job.") || !strings.Contains(b.body, "No ready jobs.") {
		t.Fatalf("after cancel selected: %s", b.body)
	}
}

func ptr(n int) *int { return &n }
