package handlers_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"claimdesk/internal/users"
	"claimdesk/views"
)

// lastReason is the reason of the latest entry of the job's history.
func (a *app) lastReason(id string) string {
	a.t.Helper()
	h := a.expect("GET", "/api/v1/jobs/"+id+"/history", a.super, "", 200, "")["history"].([]any)
	r, _ := h[len(h)-1].(map[string]any)["reason"].(string)
	return r
}

// Cancel, requeue, cancel many and requeue all dead take a reason,
// through the API and the pages; a queue that requires one refuses each
// without it, 422 reason_required, changing nothing.
func TestTakeBackReasons(t *testing.T) {
	a := newApp(t)
	// Optional by default.
	a.enqueue("first")
	id, _ := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, `{"reason":"customer called"}`, 200, "")
	if r := a.lastReason(id); r != "customer called" {
		t.Fatalf("force release's reason = %q", r)
	}
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, `{"reason":7}`, 400, "invalid_field")
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, `{"why":"x"}`, 400, "invalid_json")
	a.expect("DELETE", "/api/v1/jobs/"+id+"?reason="+url.QueryEscape("sent twice"), a.producer, "", 200, "")
	if r := a.lastReason(id); r != "sent twice" {
		t.Fatalf("cancel's reason = %q", r)
	}
	long := a.enqueue("long")
	a.expect("DELETE", "/api/v1/jobs/"+long+"?reason="+strings.Repeat("x", 2001), a.producer, "", 400, "invalid_field")
	a.expect("DELETE", "/api/v1/jobs/"+long, a.producer, "", 200, "")

	a.expect("POST", "/api/v1/jobs/cancel", a.super, `{"ids":["`+long+`"],"reason":"`+strings.Repeat("x", 2001)+`"}`, 400, "invalid_field")

	// Required.
	q := a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"require_reason":true,"max_attempts":1}`, 200, "")
	if q["require_reason"] != true {
		t.Fatalf("queue after the patch: %v", q)
	}
	a.enqueue("held")
	held, _ := a.claim()
	a.expect("DELETE", "/api/v1/jobs/"+held+"?force=true", a.super, "", 422, "reason_required")
	a.expect("POST", "/api/v1/jobs/"+held+"/requeue", a.super, "", 422, "reason_required")
	a.expect("POST", "/api/v1/jobs/"+held+"/requeue", a.super, `{}`, 422, "reason_required")
	if j := a.expect("GET", "/api/v1/jobs/"+held, a.super, "", 200, ""); j["state"] != "reserved" || j["reserved_by"] != a.opName {
		t.Fatalf("refused take-backs changed the job: %v", j)
	}
	out := a.expect("POST", "/api/v1/jobs/cancel", a.super, `{"ids":["`+held+`"],"force":true}`, 200, "")
	if f := out["failed"].([]any); len(f) != 1 || f[0].(map[string]any)["code"] != "reason_required" {
		t.Fatalf("cancel many without a reason: %v", out)
	}
	// The page: refused, it says why; with a reason, it acts.
	_, sup := a.person(users.Supervisor)
	sup.do("GET", "/jobs/"+held, nil)
	release := shownAs(t, sup.body, held, "requeue")
	if !strings.Contains(sup.body, `data-reason="required"`) {
		t.Fatal("the job page does not ask for the reason the queue requires")
	}
	sup.do("POST", "/supervisor/jobs/"+held+"/requeue", release)
	sup.do("GET", "/jobs/"+held, nil)
	if !strings.Contains(sup.body, views.ReasonRequired) {
		t.Fatal("the page does not say that a reason is required")
	}
	release.Set("reason", "  urgent: customer called  ")
	sup.do("POST", "/supervisor/jobs/"+held+"/requeue", release)
	if r := a.lastReason(held); r != "urgent: customer called" {
		t.Fatalf("the page's force release: reason %q", r)
	}
	// Its holder reads who took it and why; the job's history says so too.
	op := a.browser()
	op.login(a.opName, "password-"+a.opName)
	op.do("GET", "/jobs/"+held, nil)
	if !strings.Contains(op.body, "took this job back: urgent: customer called") {
		t.Fatalf("the holder's page does not say why the job was taken back: %d", op.status)
	}
	sup.do("GET", "/jobs/"+held, nil)
	if !strings.Contains(sup.body, "from "+a.opName+": urgent: customer called") {
		t.Fatal("the job's history does not say why it was taken back")
	}

	// Requeue all dead.
	dead, tok := a.claim()
	a.expect("POST", "/api/v1/jobs/"+dead+"/fail", a.operator, `{"token":"`+tok+`","reason":"no"}`, 200, "")
	a.expect("POST", "/api/v1/queues/"+a.queue+"/requeue-dead", a.super, "", 422, "reason_required")
	a.expect("POST", "/api/v1/queues/"+a.queue+"/requeue-dead", a.super, `{"reason":"`+strings.Repeat("x", 2001)+`"}`, 400, "invalid_field")
	sup.do("POST", "/supervisor/queues/"+a.queue+"/requeue-dead", url.Values{"_csrf": {sup.csrf}, "reason": {""}})
	sup.do("GET", "/supervisor/queues/"+a.queue+"?state=dead", nil)
	if !strings.Contains(sup.body, views.ReasonRequired) {
		t.Fatal("the queue's page does not say that a reason is required")
	}
	if out := a.expect("POST", "/api/v1/queues/"+a.queue+"/requeue-dead", a.super, `{"reason":"scan service back"}`, 200, ""); out["requeued"] != 1.0 {
		t.Fatalf("requeue all dead with a reason: %v", out)
	}
	if r := a.lastReason(dead); r != "scan service back" {
		t.Fatalf("requeued dead job's reason = %q", r)
	}

	// The queue's settings form turns it off.
	sup.do("GET", "/supervisor/queues/"+a.queue, nil)
	if !strings.Contains(sup.body, `name="require_reason" value="1" checked`) {
		t.Fatal("the settings form does not show a reason required")
	}
	sup.do("POST", "/supervisor/queues/"+a.queue+"/settings", url.Values{"_csrf": {sup.csrf}, "lease_seconds": {"300"},
		"max_attempts": {"1"}, "max_extensions": {"10"}, "max_hold_seconds": {"4h"}, "aging_seconds": {"0"}, "max_held": {"0"},
		"require_reason": {"0"}})
	if q, err := a.tasks.Queue(context.Background(), a.queue); err != nil || q.RequireReason || q.MaxAttempts != 1 {
		t.Fatalf("after the settings form: %+v %v (%d)", q, err, sup.status)
	}
}
