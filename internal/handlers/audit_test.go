package handlers_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

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
	// Filtered: by actor (in any case), action and time.
	for _, tc := range []struct{ query, want string }{
		{"actor=" + strings.ToUpper(other), "user.disabled"},
		{"action=queue.changed&actor=" + sup, "queue.changed"},
		{"action=queue.changed&actor=" + other, ""},
		{"actor=" + other + "&since=" + url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339)), "user.disabled"},
		{"actor=" + other + "&until=" + url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339)), ""},
	} {
		page := a.expect("GET", "/api/v1/audit?"+tc.query, a.super, "", 200, "")
		var actions []string
		for _, e := range page["entries"].([]any) {
			actions = append(actions, e.(map[string]any)["action"].(string))
		}
		if strings.Join(actions, " ") != tc.want {
			t.Errorf("GET /api/v1/audit?%s: %q, want %q", tc.query, actions, tc.want)
		}
	}
	for _, q := range []string{"action=job.vanished", "since=yesterday", "until=2026-11-26", "since=2026-11-26T10:00:00Z&until=2026-11-26T09:00:00Z"} {
		a.expect("GET", "/api/v1/audit?"+q, a.super, "", 400, "invalid_field")
	}

	// The page says actions in words, with the filters in its URL.
	b.do("GET", "/supervisor/audit", nil)
	if b.status != 200 || !strings.Contains(b.body, `title="user.disabled">Disabled a person</td>`) || strings.Contains(b.body, ">user.disabled<") ||
		!strings.Contains(b.body, `href="/supervisor/people/`+name+`"`) {
		t.Fatalf("audit page: %d", b.status)
	}
	b.do("GET", "/supervisor/audit?who="+other+"&action=user.disabled&within=1h", nil)
	if b.status != 200 || !strings.Contains(b.body, `title="user.disabled">Disabled a person</td>`) || strings.Contains(b.body, `title="queue.changed"`) ||
		!strings.Contains(b.body, `<option value="user.disabled" selected>`) || !strings.Contains(b.body, `<option value="1h" selected>`) {
		t.Fatalf("filtered audit page: %d\n%s", b.status, b.body)
	}
	b.do("GET", "/supervisor/audit?who="+other+"&action=queue.changed", nil)
	if b.status != 200 || !strings.Contains(b.body, "Nothing matches these filters.") {
		t.Fatalf("audit page that nothing matches: %d", b.status)
	}
	for _, q := range []string{"within=1y", "action=job.vanished", "cursor=nope"} {
		if b.do("GET", "/supervisor/audit?"+q, nil); b.status != 400 {
			t.Errorf("audit page ?%s: %d, want 400", q, b.status)
		}
	}
}

// A job's entry links to the job by its title.
func TestAuditLinksJobsByTitle(t *testing.T) {
	a := newApp(t)
	_, b := a.person(users.Supervisor)
	job := a.enqueue("Refund <ACME> in full")
	a.expect("DELETE", "/api/v1/jobs/"+job, a.super, "", 200, "")
	b.do("GET", "/supervisor/audit?action=job.canceled", nil)
	if b.status != 200 || !strings.Contains(b.body, `href="/jobs/`+job+`" class="target" data-testid="audit-job">Refund &lt;ACME&gt; in full</a>`) {
		t.Fatalf("audit page: %d\n%s", b.status, b.body)
	}
}
