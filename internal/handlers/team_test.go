package handlers_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"claimdesk/internal/notify"
	"claimdesk/internal/users"
)

// memberStatus reads a person's row of the Team page.
func memberStatus(t *testing.T, b *browser, name string) (status, row string) {
	t.Helper()
	b.do("GET", "/supervisor/team", nil)
	if b.status != 200 {
		t.Fatalf("team page: %d", b.status)
	}
	m := regexp.MustCompile(`(?s)<tr data-testid="member-` + regexp.QuoteMeta(name) + `" data-status="([a-z]+)">(.*?)</tr>`).FindStringSubmatch(b.body)
	if m == nil {
		t.Fatalf("no row for %s on the team page", name)
	}
	return m[1], m[2]
}

// The Team page: offline until a page is open; then idle, online while
// holding a job (and since when), away when they say so; away, no new-job
// notices reach them.
func TestTeamPage(t *testing.T) {
	a := newApp(t)
	_, sup := a.person(users.Supervisor)
	name, op := a.person(users.Operator, a.queue)
	if status, _ := memberStatus(t, sup, name); status != "offline" {
		t.Fatalf("before any page is open: %s", status)
	}
	feed, _ := a.live("operator", op)
	if status, _ := memberStatus(t, sup, name); status != "idle" {
		t.Fatalf("with a page open, nothing done: %s", status)
	}
	id := a.enqueue("held for the team page")
	op.do("GET", "/", nil)
	op.do("POST", "/queues/"+a.queue+"/claim", url.Values{"_csrf": {op.csrf}})
	if op.body != "/jobs/"+id {
		t.Fatalf("claim went to %s", op.body)
	}
	status, row := memberStatus(t, sup, name)
	if status != "online" || !strings.Contains(row, "held for the team page") || !strings.Contains(row, "since under a minute") {
		t.Fatalf("holding a job: %s\n%s", status, row)
	}
	// The claim is their last action, recorded from its transition before
	// the claim was answered.
	if _, row = memberStatus(t, sup, name); !strings.Contains(row, "under a minute ago") {
		t.Fatalf("the last action is not shown: %s", row)
	}

	op.do("POST", "/away", url.Values{"_csrf": {op.csrf}, "away": {"1"}})
	op.do("GET", "/", nil)
	if !strings.Contains(op.body, `data-testid="away-note"`) {
		t.Fatal("the home page does not say the operator is away")
	}
	if status, _ := memberStatus(t, sup, name); status != "away" {
		t.Fatalf("away: %s", status)
	}
	// Away: the feed carries the counts of a new job, not the job.
	quiet := a.enqueue("while away")
	got := feed.until(func(n notify.Notice) bool { return n.Type == notify.QueueChanged && n.Ready != nil && *n.Ready >= 1 },
		func(n notify.Notice) bool { return true })
	for _, n := range got {
		if strings.Contains(n, quiet) {
			t.Fatalf("an away operator was told of a new job: %v", got)
		}
	}
	op.do("POST", "/away", url.Values{"_csrf": {op.csrf}, "away": {""}})
	if status, _ := memberStatus(t, sup, name); status != "online" {
		t.Fatalf("back: %s", status)
	}
	// Operators may not see the Team page.
	if op.do("GET", "/supervisor/team", nil); op.status != 403 {
		t.Fatalf("an operator on the team page: %d", op.status)
	}
}

// What each person's reservations came to, through the API and on the
// Team page: counted as they end, and only to supervisors.
func TestTeamNumbers(t *testing.T) {
	a := newApp(t)
	a.enqueue("done")
	a.enqueue("given back")
	id, token := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+token+`"}`, 200, "")
	id, token = a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/release", a.operator, `{"token":"`+token+`"}`, 200, "")

	out := a.expect("GET", "/api/v1/team", a.super, "", 200, "")
	var me map[string]any
	for _, p := range out["people"].([]any) {
		if p := p.(map[string]any); p["name"] == a.opName {
			me = p
		}
	}
	if me == nil {
		t.Fatalf("%s is not in the team: %v", a.opName, out)
	}
	for _, span := range []string{"today", "last_7_days"} {
		tl := me[span].(map[string]any)
		if tl["completed"] != 1.0 || tl["given_back"] != 1.0 || tl["failed"] != 0.0 || tl["taken_back"] != 0.0 {
			t.Fatalf("%s = %v", span, tl)
		}
		if secs, ok := tl["median_handling_seconds"].(float64); !ok || secs <= 0 || secs > 60 {
			t.Fatalf("%s median = %v", span, tl["median_handling_seconds"])
		}
	}
	if me["status"] != "offline" || len(me["holding"].([]any)) != 0 {
		t.Fatalf("member = %v", me)
	}
	a.expect("GET", "/api/v1/team", a.operator, "", 403, "forbidden")

	_, sup := a.person(users.Supervisor)
	for _, path := range []string{"/supervisor/team", "/supervisor/fragments/team-work"} {
		sup.do("GET", path, nil)
		row := regexp.MustCompile(`(?s)<tr data-testid="work-` + regexp.QuoteMeta(a.opName) + `">(.*?)</tr>`).FindStringSubmatch(sup.body)
		if sup.status != 200 || row == nil {
			t.Fatalf("%s: %d, no numbers of %s", path, sup.status, a.opName)
		}
		if !regexp.MustCompile(`data-testid="today">1<`).MatchString(row[1]) ||
			!regexp.MustCompile(`data-testid="given-back">\s*1 <span class="muted small">50%</span>`).MatchString(row[1]) {
			t.Fatalf("%s: the row of %s = %s", path, a.opName, row[1])
		}
	}
}
