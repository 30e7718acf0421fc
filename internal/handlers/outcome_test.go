package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
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
	if !strings.Contains(b.body, `name="field_name" value="reason"`) || !strings.Contains(b.body, `name="field_required_for" value="reject"`) {
		t.Fatal("the settings form does not show the outcome form")
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
	for _, want := range []string{`data-testid="problem-amount">Enter an amount like 1188.00.`, `data-testid="problem-reason">Fill this in.`,
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
		cmds := log.During(func() {
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

// The work page starts a field with the payload's value at its prefill
// path, written as the viewer's locale writes numbers (Accept-Language),
// and reads what comes back the same way: 1.250,5 for German, 1,250.5
// for English, both where only one reading is possible; what reads two
// ways without a locale to tell is refused, saying how to write it.
func TestOutcomeNumbersByLocale(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": {"choices": ["refund", "none"], "fields": [
		{"name": "refund_amount", "type": "number", "prefill": "charges[1].amount", "min": 0, "max": 5000},
		{"name": "kind", "type": "one_of", "options": ["Billing", "Other"], "prefill": "ticket.kind"}]}}`, 200, "")
	for _, tc := range []struct {
		language, shown, typed string
		want                   float64
		problem                string
	}{
		{"de-DE,de;q=0.9", `value="1.188,00" placeholder="1.188,00"`, "1.250,5", 1250.5, ""},
		{"de-DE", "", "1,188.00", 1188, ""},
		{"de-DE", "", "1,5", 1.5, ""},
		{"en-US,en;q=0.9", `value="1,188.00" placeholder="1,188.00"`, "1,250", 1250, ""},
		{"en-GB", "", "1.188,00", 1188, ""},
		{"", `value="1188.00" placeholder="1188.00"`, "1,188", 0, "This reads two ways: write it like 1188.00, or without separators, like 1188."},
		{"de", "", "5.000,01", 0, "Enter a number from 0 to 5.000."},
		{"en", "", "a lot", 0, "Enter an amount like 1,188.00."},
	} {
		out := a.expect("POST", "/api/v1/queues/"+a.queue+"/jobs", a.producer,
			`{"title": "Refund", "payload": {"ticket": {"kind": "Billing"}, "charges": [{"amount": 1188.0}, {"amount": 1188.0, "currency": "EUR"}]}}`, 201, "")
		id := out["job"].(map[string]any)["id"].(string)
		b := a.browser()
		b.header = http.Header{"Accept-Language": {tc.language}}
		b.login(a.opName, "password-"+a.opName)
		b.do("GET", "/", nil)
		b.do("POST", "/claim", url.Values{"_csrf": {b.csrf}})
		b.do("GET", "/jobs/"+id, nil)
		token := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(b.body)
		if token == nil {
			t.Fatalf("%q: no work page", tc.language)
		}
		if !strings.Contains(b.body, tc.shown) || !strings.Contains(b.body, `value="Billing" checked`) ||
			!strings.Contains(b.body, `data-testid="prefilled-refund_amount"`) {
			t.Errorf("%q: the form does not start with the payload's %s", tc.language, tc.shown)
		}
		b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {token[1]}, "decision": {"refund"},
			"refund_amount": {tc.typed}, "kind": {"Billing"}})
		j, _ := a.tasks.Get(context.Background(), id)
		if tc.problem != "" {
			if b.status != 400 || !strings.Contains(b.body, `data-testid="problem-refund_amount">`+tc.problem+`<`) ||
				!strings.Contains(b.body, `value="`+tc.typed+`"`) || j.State != tasks.StateReserved {
				t.Errorf("%q, %q: %d, %s; want refused with %q", tc.language, tc.typed, b.status, j.State, tc.problem)
			}
			continue
		}
		var result struct {
			RefundAmount float64 `json:"refund_amount"`
		}
		if b.status != 303 || j.State != tasks.StateCompleted || json.Unmarshal(j.Result, &result) != nil || result.RefundAmount != tc.want {
			t.Errorf("%q, %q: %d, %s %s; want %v", tc.language, tc.typed, b.status, j.State, j.Result, tc.want)
		}
	}
}

// The settings form's outcome editor adds, moves and removes fields and
// switches to JSON and back without saving; saved, it stores the form,
// and a form with problems is refused with every problem at its input
// at once, nothing saved.
func TestOutcomeEditor(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"outcome": `+reviewForm+`}`, 200, "")
	name, _ := a.newUser(users.Supervisor)
	b := a.browser().login(name, "password-"+name)
	b.do("GET", "/supervisor/queues/"+a.queue, nil)
	settings := url.Values{"_csrf": {b.csrf}, "lease_seconds": {"7m"}, "max_attempts": {"3"}, "max_extensions": {"2"},
		"max_hold_seconds": {"1h"}, "aging_seconds": {"0"}, "max_held": {"0"}, "outcome_view": {"form"},
		"outcome_choices": {"approve\nreject"},
		"field_name":      {"amount", "reason", "urgent"}, "field_label": {"", "", ""}, "field_type": {"number", "text", "yes_no"},
		"field_required": {"always", "some", "optional"}, "field_required_for": {"", "reject", ""},
		"field_options": {"", "", ""}, "field_min": {"", "", ""}, "field_max": {"", "", ""}, "field_prefill": {"", "", ""}}
	fieldNames := func() string {
		var out []string
		for _, m := range regexp.MustCompile(`name="field_name" value="([^"]*)"`).FindAllStringSubmatch(b.body, -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, ",")
	}
	edit := func(op string) url.Values {
		form := url.Values{}
		for k, v := range settings {
			form[k] = v
		}
		form.Set("edit", op)
		b.do("POST", "/supervisor/queues/"+a.queue+"/settings", form)
		if b.status != 200 {
			t.Fatalf("edit %s: %d", op, b.status)
		}
		return form
	}
	for _, tc := range []struct{ op, want string }{
		{"add", "amount,reason,urgent,"}, {"up:2", "amount,urgent,reason"}, {"down:0", "reason,amount,urgent"},
		{"remove:1", "amount,urgent"}, {"up:0", "amount,reason,urgent"}, {"remove:9", "amount,reason,urgent"},
	} {
		edit(tc.op)
		if got := fieldNames(); got != tc.want {
			t.Errorf("edit %s: fields %s, want %s", tc.op, got, tc.want)
		}
	}
	// The field moved keeps every input of its own.
	edit("up:1")
	if !strings.Contains(b.body, `name="field_required_for" value="reject"`) || !regexp.MustCompile(
		`name="field_name" value="reason".*?<option value="text" selected>.*?name="field_name" value="amount".*?<option value="number" selected>`).MatchString(b.body) {
		t.Error("a moved field lost its inputs")
	}
	edit("json")
	if !strings.Contains(b.body, `name="outcome_view" value="json"`) || !strings.Contains(b.body, `&#34;required_for&#34;: [`) {
		t.Fatal("the editor does not switch to JSON")
	}
	if q, _ := a.tasks.Queue(context.Background(), a.queue); q.LeaseSeconds == 420 {
		t.Fatal("an edit saved the settings")
	}
	back := url.Values{"_csrf": {b.csrf}, "outcome_view": {"json"}, "edit": {"form"},
		"outcome": {`{"choices": ["yes", "no"], "fields": [{"name": "total", "type": "number", "min": 0, "prefill": "invoice.gross"}]}`}}
	b.do("POST", "/supervisor/queues/"+a.queue+"/settings", back)
	if b.status != 200 || fieldNames() != "total" || !strings.Contains(b.body, `name="field_prefill" value="invoice.gross"`) ||
		!strings.Contains(b.body, `name="field_min" value="0"`) || !strings.Contains(b.body, "yes\nno</textarea>") {
		t.Fatalf("back from JSON to the form: %d, fields %s", b.status, fieldNames())
	}

	// Every problem at once, each at its input.
	bad := url.Values{}
	for k, v := range settings {
		bad[k] = v
	}
	bad["outcome_choices"] = []string{"approve"}
	bad["field_name"] = []string{"9lives", "kind", "total"}
	bad["field_type"] = []string{"text", "one_of", "number"}
	bad["field_required"] = []string{"optional", "some", "optional"}
	bad["field_required_for"] = []string{"", "", ""}
	bad["field_options"] = []string{"", "Only one", ""}
	bad["field_min"] = []string{"", "", "lots"}
	bad["field_prefill"] = []string{"", "", "a..b"}
	b.do("POST", "/supervisor/queues/"+a.queue+"/settings", bad)
	if b.status != 400 {
		t.Fatalf("a form with problems: %d", b.status)
	}
	for key, want := range map[string]string{
		"choices":                "Decisions must be 2 to 10 decisions, or none.",
		"fields[0].name":         "Name must be lowercase letters, digits and _, starting with a letter",
		"fields[1].required_for": "Name the decisions that need it, separated by commas.",
		"fields[1].options":      "Options must be 2 to 20 options.",
		"fields[2].min":          "Enter a number, like 0 or 2500.50.",
		"fields[2].prefill":      "Start from must be a path into the payload",
	} {
		if !strings.Contains(b.body, `data-testid="editor-problem-`+key+`">`+want) {
			t.Errorf("no problem at %s saying %q", key, want)
		}
	}
	if !strings.Contains(b.body, "The outcome form has 6 problems: each is said at its place below.") ||
		!strings.Contains(b.body, `name="field_name" value="9lives" autocomplete="off" spellcheck="false" aria-describedby="field-0-name-problem" aria-invalid="true"`) {
		t.Error("the refused form does not say it has 6 problems, or marks no input")
	}
	if q, _ := a.tasks.Queue(context.Background(), a.queue); q.Outcome.String() != mustForm(t, reviewForm) {
		t.Fatalf("a refused form was saved: %s", q.Outcome)
	}

	// Saved.
	settings["field_prefill"] = []string{"invoice.gross", "", ""}
	settings["field_max"] = []string{"5000", "", ""}
	settings["field_label"] = []string{"Amount (€)", "", ""}
	b.do("POST", "/supervisor/queues/"+a.queue+"/settings", settings)
	q, err := a.tasks.Queue(context.Background(), a.queue)
	want := `{"choices":["approve","reject"],"fields":[{"name":"amount","label":"Amount (€)","type":"number","required":true,"max":5000,` +
		`"prefill":"invoice.gross"},{"name":"reason","type":"text","required_for":["reject"]},{"name":"urgent","type":"yes_no"}]}`
	if b.status != 303 || err != nil || q.Outcome.String() != want {
		t.Fatalf("saved: %d, %s, %v; want %s", b.status, q.Outcome, err, want)
	}
	// Emptied, the form is removed.
	for _, k := range []string{"field_name", "field_label", "field_type", "field_required", "field_required_for", "field_options", "field_min", "field_max", "field_prefill"} {
		delete(settings, k)
	}
	settings.Set("outcome_choices", "")
	b.do("POST", "/supervisor/queues/"+a.queue+"/settings", settings)
	if q, _ = a.tasks.Queue(context.Background(), a.queue); b.status != 303 || !q.Outcome.Empty() {
		t.Fatalf("emptied: %d, %s", b.status, q.Outcome)
	}
}

func mustForm(t *testing.T, raw string) string {
	t.Helper()
	o, err := tasks.ParseOutcome(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o.String()
}
