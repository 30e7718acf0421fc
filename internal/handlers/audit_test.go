package handlers_test

import (
	"net/url"
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// The audit log, through the API and its page, for supervisors alone,
// newest first and paged. An action through the API is recorded as its
// token's user's, one from a page as its session's user's (what each
// action records is the desk's, and tested there).
func TestAuditLog(t *testing.T) {
	a := newApp(t)
	sup := a.nameOf(a.super)
	name, _ := a.newUser(users.Operator, a.queue)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"max_held":3}`, 200, "")
	other, b := a.person(users.Supervisor)
	b.do("GET", "/supervisor/people/"+name, nil)
	b.do("POST", "/supervisor/people/"+name+"/disable", url.Values{"_csrf": {b.csrf}})

	for _, token := range []string{a.operator, a.producer} {
		a.expect("GET", "/api/v1/audit", token, "", 403, "forbidden")
	}
	a.expect("GET", "/api/v1/audit?limit=0x", a.super, "", 400, "invalid_field")
	a.expect("GET", "/api/v1/audit?cursor=nope", a.super, "", 400, "invalid_field")
	log := a.expect("GET", "/api/v1/audit?limit=1000", a.super, "", 200, "")
	var got []string
	for _, e := range log["entries"].([]any) {
		m := e.(map[string]any)
		if m["target"] == a.queue || m["target"] == name {
			if m["id"] == "" || m["at"] == nil {
				t.Errorf("entry without its id or time: %v", m)
			}
			detail, _ := m["detail"].(string)
			got = append(got, m["actor"].(string)+" "+m["action"].(string)+" "+m["target"].(string)+": "+detail)
		}
	}
	want := []string{
		other + " user.disabled " + name + ": ",
		sup + " queue.changed " + a.queue + ": max held 0 → 3",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit entries, newest first:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
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
