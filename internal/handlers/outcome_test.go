package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

const reviewForm = `{"choices": ["approve", "reject"], "fields": [
	{"name": "amount", "type": "number", "required": true},
	{"name": "reason", "type": "text", "required_for": ["reject"]},
	{"name": "urgent", "type": "yes_no"}]}`

// A queue's outcome form is set over the API and shown in the queue list;
// a result that does not fit it is answered 400 naming each field.
func TestOutcomeOverTheAPI(t *testing.T) {
	a := newApp(t)
	out := a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": `+reviewForm+`}`, 200, "")
	if o, _ := out["outcome"].(map[string]any); o == nil || len(o["fields"].([]any)) != 3 {
		t.Fatalf("patched queue: %v", out)
	}
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": {"choices": ["only"]}}`, 400, "invalid_field")
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": {"fields": [{"name": "x", "type": "text", "colour": 1}]}}`, 400, "invalid_json")
	list := a.expect("GET", "/api/v1/queues", a.operator, "", 200, "")
	if q := list["queues"].([]any)[0].(map[string]any); q["outcome"] == nil {
		t.Fatalf("the queue list does not show the form: %v", q)
	}

	a.enqueue("to review")
	id, token := a.claim()
	path := "/api/v1/jobs/" + id + "/complete"
	out = a.expect("POST", path, a.operator, `{"token": "`+token+`", "result": {"decision": "reject", "amount": "12", "extra": 1}}`, 400, "invalid_field")
	fields, _ := out["error"].(map[string]any)["fields"].(map[string]any)
	want := map[string]any{"amount": "must be a number", "reason": "is required", "extra": "is not a field of the outcome form"}
	if len(fields) != len(want) {
		t.Fatalf("field errors %v, want %v", fields, want)
	}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("field error of %s = %v, want %v", k, fields[k], v)
		}
	}
	// complete?next=true answers a result off the form alike.
	out = a.expect("POST", path+"?next=true", a.operator, `{"token": "`+token+`"}`, 400, "invalid_field")
	if fields, _ := out["error"].(map[string]any)["fields"].(map[string]any); fields["amount"] != "is required" {
		t.Fatalf("field errors of complete and next: %v", out)
	}

	out = a.expect("POST", path, a.operator, `{"token": "`+token+`", "result": {"decision": "reject", "amount": 12.5, "reason": "Wrong VAT", "notes": "called them"}}`, 200, "")
	if r, _ := json.Marshal(out["result"]); string(r) != `{"amount":12.5,"decision":"reject","notes":"called them","reason":"Wrong VAT"}` {
		t.Fatalf("stored result %s", r)
	}
	// Removed: {}.
	if out := a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": {}}`, 200, ""); out["outcome"] != nil {
		t.Fatalf("the queue with its form removed: %v", out)
	}
}

// The settings form keeps the outcome form unless its box is sent: a
// post without it (a page from before outcome forms) changes the rest.
func TestSettingsFormKeepsTheOutcome(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": `+reviewForm+`}`, 200, "")
	name, _ := a.newUser(users.Supervisor)
	b := a.browser().login(name, "password-"+name)
	b.do("GET", "/supervisor/queues/"+a.queue, nil)
	if !strings.Contains(b.body, `&#34;required_for&#34;: [`) {
		t.Fatalf("the settings form does not show the outcome form:\n%s", b.body)
	}
	settings := url.Values{"_csrf": {b.csrf}, "lease_seconds": {"120"}, "max_attempts": {"3"}, "max_extensions": {"2"},
		"max_hold_seconds": {"3600"}, "aging_seconds": {"0"}, "max_held": {"0"}}
	b.do("POST", "/supervisor/queues/"+a.queue+"/settings", settings)
	q, err := a.tasks.Queue(context.Background(), a.queue)
	if b.status != 303 || err != nil || q.LeaseSeconds != 120 || q.Outcome.Empty() {
		t.Fatalf("settings without the outcome box: %d, %+v, %v", b.status, q, err)
	}
	settings.Set("outcome", "  ")
	b.do("POST", "/supervisor/queues/"+a.queue+"/settings", settings)
	if q, _ = a.tasks.Queue(context.Background(), a.queue); b.status != 303 || q.Outcome != nil {
		t.Fatalf("settings with the outcome box emptied: %d, %+v", b.status, q.Outcome)
	}
	settings.Set("outcome", `{"choices": ["a"]}`)
	b.do("POST", "/supervisor/queues/"+a.queue+"/settings", settings)
	if b.status != 400 || !strings.Contains(b.body, "Outcome form: outcome.choices must be 2 to 10 choices, or none.") ||
		!strings.Contains(b.body, `{&#34;choices&#34;: [&#34;a&#34;]}</textarea>`) {
		t.Fatalf("a bad outcome form: %d\n%s", b.status, b.body)
	}
}

// On the work page the form is the queue's; a refused completion comes
// back as typed, each problem next to its value, and nothing is stored.
func TestOutcomeOnTheWorkPage(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": `+reviewForm+`}`, 200, "")
	b, id, token := a.claimOnPage("formed")
	for _, want := range []string{`name="decision" value="approve"`, `name="decision" value="reject"`, `name="amount" inputmode="decimal"`,
		`(required for Reject)`, `name="urgent" value="yes"`} {
		if !strings.Contains(b.body, want) {
			t.Fatalf("the work page has no %s", want)
		}
	}
	if strings.Contains(b.body, `name="key"`) {
		t.Fatal("a queue with a form still offers free fields")
	}
	form := url.Values{"_csrf": {b.csrf}, "token": {token}, "decision": {"reject"}, "amount": {"lots"}, "notes": {"my <notes>"}}
	b.do("POST", "/jobs/"+id+"/complete", form)
	if b.status != 400 {
		t.Fatalf("a refused form: %d", b.status)
	}
	for _, want := range []string{`data-testid="problem-amount">Enter a number`, `data-testid="problem-reason">Required.`,
		`value="reject" checked`, `value="lots"`, `my &lt;notes&gt;</textarea>`, `Not completed: 2 values above need a look.`,
		`aria-describedby="problem-amount"`} {
		if !strings.Contains(b.body, want) {
			t.Errorf("the refused page lacks %s", want)
		}
	}
	if j, _ := a.tasks.Get(context.Background(), id); j.State != tasks.StateReserved {
		t.Fatalf("a refused form changed the job: %s", j.State)
	}
	// Through the page's script: 200, so that it swaps the form in place.
	b.header = http.Header{"Hx-Request": {"true"}}
	b.do("POST", "/jobs/"+id+"/complete", form)
	if b.status != 200 || !strings.Contains(b.body, `data-testid="problem-amount"`) {
		t.Fatalf("a refused form in place: %d", b.status)
	}
	form.Set("amount", "1,250.5")
	form.Set("reason", "Wrong VAT rate")
	form.Set("urgent", "no")
	b.do("POST", "/jobs/"+id+"/complete", form)
	if b.status != 204 || b.got.Get("HX-Redirect") != "/" {
		t.Fatalf("complete in place: %d %v", b.status, b.got)
	}
	j, err := a.tasks.Get(context.Background(), id)
	if err != nil || j.State != tasks.StateCompleted ||
		string(j.Result) != `{"amount":1250.5,"decision":"reject","notes":"my \u003cnotes\u003e","reason":"Wrong VAT rate","urgent":false}` {
		t.Fatalf("completed: %+v %s, %v", j.State, j.Result, err)
	}
}

// Give back, skip and can't-be-done refused say why next to the button;
// once the reservation is gone the page says why it ended, and shows the
// notes that were sent with it, which were not saved.
func TestRefusedActionsInPlace(t *testing.T) {
	a := newApp(t)
	b, id, token := a.claimOnPage("refused")
	b.header = http.Header{"Hx-Request": {"true"}}
	b.do("POST", "/jobs/"+id+"/fail", url.Values{"_csrf": {b.csrf}, "token": {token}, "reason": {strings.Repeat("x", 2001)}})
	if b.status != 200 || !strings.Contains(b.body, `data-testid="fail-problem"`) || !strings.Contains(b.body, `<details id="fail-box" class="fail" open>`) {
		t.Fatalf("a reason too long: %d\n%s", b.status, b.body)
	}
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, "", 200, "")
	b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {token}, "notes": {"late notes"}})
	if b.status != 200 || b.got.Get("HX-Retarget") != "article.work" ||
		!strings.Contains(b.body, `data-testid="ended"`) || !strings.Contains(b.body, `data-testid="unsaved"`) ||
		!strings.Contains(b.body, "late notes</textarea>") {
		t.Fatalf("complete after the reservation ended: %d %v\n%s", b.status, b.got, b.body)
	}
	for _, action := range []string{"release", "skip"} {
		b.do("POST", "/jobs/"+id+"/"+action, url.Values{"_csrf": {b.csrf}, "token": {token}})
		if b.status != 200 || !strings.Contains(b.body, " took this job back.") {
			t.Fatalf("%s after the reservation ended: %d", action, b.status)
		}
	}
	// Without the script: the same page, with the error's status.
	b.header = nil
	b.do("POST", "/jobs/"+id+"/release", url.Values{"_csrf": {b.csrf}, "token": {token}})
	if b.status != 409 || !strings.Contains(b.body, `data-testid="ended"`) {
		t.Fatalf("release after the reservation ended: %d", b.status)
	}
}

// Checking a completion against its queue's form reads the form from the
// instance's board: once, not again for every job, though every job's
// change drops the board's counts.
func TestOutcomeCheckReadsNothingMore(t *testing.T) {
	a, log := appLogged(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": `+reviewForm+`}`, 200, "")
	result := `"result": {"decision": "approve", "amount": 3}`
	for i := range 3 {
		a.enqueue(fmt.Sprintf("job %d", i))
		id, token := a.claim()
		cmds := log.during(func() {
			a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token": "`+token+`", `+result+`}`, 200, "")
		})
		joined := strings.Join(cmds, "\n")
		if i > 0 && (strings.Contains(joined, "hgetall") || strings.Contains(joined, "stats") || strings.Contains(joined, "smembers")) {
			t.Fatalf("complete %d read the queue's settings again: %v", i, cmds)
		}
	}
	// A change of the form applies at once on this instance.
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": {}}`, 200, "")
	a.enqueue("free")
	id, token := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token": "`+token+`", "result": {"free": true}}`, 200, "")
}
