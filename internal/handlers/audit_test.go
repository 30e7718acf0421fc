package handlers_test

import (
	"net/url"
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// Every administrative action, through the API or the pages, is in the
// audit log with who did it to what; supervisors alone read it; it holds
// no secret.
func TestAuditLog(t *testing.T) {
	a := newApp(t)
	sup := a.nameOf(a.super)
	q := "/api/v1/queues/" + a.queue
	name := "fay" + a.queue
	a.expect("PATCH", q, a.super, `{"max_held":3}`, 200, "")
	a.expect("POST", q+"/pause", a.super, "", 200, "")
	a.expect("POST", q+"/resume", a.super, "", 200, "")
	a.expect("POST", "/api/v1/users", a.super, `{"name":"`+name+`","role":"operator","queues":["`+a.queue+`"],"password":"fay-password-1"}`, 201, "")
	token := a.expect("POST", "/api/v1/users/"+name+"/tokens", a.super, "", 201, "")["token"].(string)
	id := a.enqueue("to requeue")
	_, _ = a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, "", 200, "")
	dead := a.enqueue("to cancel")
	a.expect("DELETE", "/api/v1/jobs/"+dead, a.producer, "", 200, "")
	// From a page.
	other, b := a.person(users.Supervisor)
	b.do("GET", "/supervisor/people/"+name, nil)
	b.do("POST", "/supervisor/people/"+name+"/disable", url.Values{"_csrf": {b.csrf}})

	for _, token := range []string{a.operator, a.producer} {
		a.expect("GET", "/api/v1/audit", token, "", 403, "forbidden")
	}
	a.expect("GET", "/api/v1/audit?limit=0x", a.super, "", 400, "invalid_field")
	a.expect("GET", "/api/v1/audit?cursor=nope", a.super, "", 400, "invalid_field")
	log := a.expect("GET", "/api/v1/audit?limit=1000", a.super, "", 200, "")
	raw := mustJSON(log)
	if strings.Contains(raw, token) || strings.Contains(raw, "fay-password-1") {
		t.Fatal("the audit log holds a secret")
	}
	var got []string
	for _, e := range log["entries"].([]any) {
		m := e.(map[string]any)
		if m["target"] == a.queue || m["target"] == name || m["target"] == id || m["target"] == dead {
			got = append(got, m["actor"].(string)+" "+m["action"].(string)+" "+m["target"].(string))
		}
	}
	want := []string{
		other + " user.disabled " + name,
		a.nameOf(a.producer) + " job.canceled " + dead,
		sup + " job.force_released " + id,
		sup + " token.added " + name,
		sup + " user.added " + name,
		sup + " queue.resumed " + a.queue,
		sup + " queue.paused " + a.queue,
		sup + " queue.changed " + a.queue,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit entries, newest first:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(raw, `"detail":"max held 0 → 3"`) {
		t.Fatal("the settings change does not say what changed, and only that")
	}
	if !strings.Contains(raw, "held by "+a.opName) {
		t.Fatal("the force release does not say whose reservation it ended")
	}
	// Paged.
	first := a.expect("GET", "/api/v1/audit?limit=2", a.super, "", 200, "")
	cursor, _ := first["next_cursor"].(string)
	second := a.expect("GET", "/api/v1/audit?limit=2&cursor="+cursor, a.super, "", 200, "")
	if len(first["entries"].([]any)) != 2 || cursor == "" || mustJSON(second["entries"].([]any)[0]) == mustJSON(first["entries"].([]any)[1]) {
		t.Fatalf("paging: %v then %v", first, second)
	}
	b.do("GET", "/supervisor/audit", nil)
	if b.status != 200 || !strings.Contains(b.body, "user.disabled") || !strings.Contains(b.body, `href="/supervisor/people/`+name+`"`) {
		t.Fatalf("audit page: %d", b.status)
	}
}
