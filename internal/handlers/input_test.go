package handlers_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// refused sends a request that must be refused with 400 and code, its
// message naming want.
func (a *app) refused(method, path, token, body, code, want string) {
	a.t.Helper()
	out := a.expect(method, path, token, body, 400, code)
	if msg := out["error"].(map[string]any)["message"].(string); !strings.Contains(msg, want) {
		a.t.Errorf("%s %s %q: message %q does not say %q", method, path, body, msg, want)
	}
}

// stored reports the queue's jobs in every state.
func (a *app) stored() int64 {
	a.t.Helper()
	s, err := a.tasks.Stats(context.Background(), a.queue)
	if err != nil {
		a.t.Fatal(err)
	}
	return s.Ready + s.Scheduled + s.Reserved + s.Completed + s.Dead + s.Canceled
}

func TestRequestBodiesAreStrict(t *testing.T) {
	a := newApp(t)
	jobs := "/api/v1/queues/" + a.queue + "/jobs"
	batches := "/api/v1/queues/" + a.queue + "/batches"
	for _, tc := range []struct {
		name, path, body, want string
	}{
		// Go's decoder would store U+FFFD for the bytes, or keep them in a
		// payload and send them to every supervisor's feed.
		{"a payload not UTF-8", jobs, "{\"title\":\"x\",\"payload\":{\"note\":\"caf\xe9\"}}", "payload.note must be valid UTF-8"},
		{"a title not UTF-8", jobs, "{\"title\":\"caf\xe9\"}", "title must be valid UTF-8"},
		{"a key not UTF-8", jobs, "{\"title\":\"x\",\"payload\":{\"k\xff\":1}}", "payload must be valid UTF-8"},
		{"an idempotency key not UTF-8", jobs, "{\"title\":\"x\",\"idempotency_key\":\"k\xff\"}", "idempotency_key must be valid UTF-8"},
		{"a lone surrogate escape", jobs, `{"title":"x","payload":{"e":"\ud83d"}}`, `payload.e must be valid Unicode: \ud83d`},
		{"a lone surrogate escape in a title", jobs, `{"title":"x\udc00"}`, `title must be valid Unicode: \udc00`},
		{"a bidi override in a title", jobs, `{"title":"Refund $\u202e01"}`, "title must not contain the invisible formatting character U+202E"},
		{"a zero-width space in a title", jobs, "{\"title\":\"Refund\u200b $10\"}", "U+200B"},
		// Last-wins would let one reader see another title, priority or
		// payload field than another.
		{"a field twice", jobs, `{"title":"cheap","priority":1,"priority":100}`, "priority appears twice"},
		{"a key twice in a payload", jobs, `{"title":"x","payload":{"to":"a","to":"b"}}`, "payload.to appears twice"},
		{"a key twice deep in a payload", jobs, `{"title":"x","payload":{"a":[{"b":{"c":1,"c":2}}]}}`, "payload.a[0].b.c appears twice"},
		{"a field in capitals", jobs, `{"Title":"x"}`, `Title must be written "title"`},
		{"a field twice in two cases", jobs, `{"title":"x","TITLE":"y"}`, `TITLE must be written "title"`},
		{"a field of the second job in capitals", jobs, `{"jobs":[{"title":"a"},{"title":"b","Priority":5}]}`, `jobs[1].Priority must be written "priority"`},
		{"jobs twice", batches, `{"title":"b","jobs":[{"title":"a"}],"jobs":[{"title":"c"}]}`, "jobs appears twice"},
		{"a batch title with an override", batches, `{"title":"Q3 \u202einvoices","jobs":[{"title":"a"}]}`, "title must not contain the invisible formatting character U+202E"},
		{"a batch field in capitals", batches, `{"title":"b","Max_Concurrent":1,"jobs":[{"title":"a"}]}`, `Max_Concurrent must be written "max_concurrent"`},
		{"a batch's job payload not UTF-8", batches, "{\"title\":\"b\",\"jobs\":[{\"title\":\"a\",\"payload\":{\"x\":\"\xff\"}}]}", "jobs[0].payload.x must be valid UTF-8"},
		// A value of the wrong type is a field's problem, in JSON's words.
		{"a priority in words", jobs, `{"title":"x","priority":"high"}`, "priority must be a whole number"},
		{"a title that is a number", jobs, `{"title":5}`, "title must be a string"},
		{"a run_at that is no time", jobs, `{"title":"x","run_at":"tomorrow"}`, `a time must be written as in RFC 3339, like 2026-11-23T09:30:00Z, not "tomorrow"`},
		{"a run_at that is a number", jobs, `{"title":"x","run_at":5}`, `a time must be a string written as in RFC 3339, like 2026-11-23T09:30:00Z`},
		{"an array for a job", jobs, `[]`, "the body must be a JSON object"},
	} {
		a.refused("POST", tc.path, a.producer, tc.body, "invalid_field", tc.want)
	}
	// A type error names the value as the sender wrote it: the job's index
	// in a list, no Go names.
	for body, want := range map[string]string{
		`{"title":5}`:                                "title must be a string",
		`{"jobs":[{"title":"a"},{"title":5}]}`:       "jobs[1].title must be a string",
		`{"jobs":[{"title":"a","priority":"high"}]}`: "jobs[0].priority must be a whole number",
		`[]`: "the body must be a JSON object",
	} {
		out := a.expect("POST", jobs, a.producer, body, 400, "invalid_field")
		if msg := out["error"].(map[string]any)["message"]; msg != want {
			t.Errorf("%s: message %q, want %q", body, msg, want)
		}
	}
	if n := a.stored(); n != 0 {
		t.Fatalf("refused requests stored %d jobs", n)
	}

	// Queue settings: a second lease in other case is refused, and the
	// queue is not made.
	a.refused("POST", "/api/v1/queues", a.super, `{"name":"strict-q","lease_seconds":60,"LEASE_SECONDS":1}`, "invalid_field", "LEASE_SECONDS must be written")
	a.refused("POST", "/api/v1/queues", a.super, `{"name":"strict-q","name":"other-q"}`, "invalid_field", "name appears twice")
	a.expect("GET", "/api/v1/jobs?queue=strict-q", a.super, "", 404, "queue_not_found")

	// Holder actions: nothing of a refused body reaches the job.
	id := a.enqueue("hold me")
	_, token := a.claim()
	done := "/api/v1/jobs/" + id + "/complete"
	a.refused("POST", done, a.operator, "{\"token\":\""+token+"\",\"result\":{\"notes\":\"ok \xff\"}}", "invalid_field", "result.notes must be valid UTF-8")
	a.refused("POST", done, a.operator, `{"token":"`+token+`","result":{"ok":false,"ok":true}}`, "invalid_field", "result.ok appears twice")
	a.refused("POST", done, a.operator, `{"token":"wrong","Token":"`+token+`"}`, "invalid_field", `Token must be written "token"`)
	a.refused("POST", "/api/v1/jobs/"+id+"/fail", a.operator, "{\"token\":\""+token+"\",\"reason\":\"scan \xff\"}", "invalid_field", "reason must be valid UTF-8")
	a.refused("POST", "/api/v1/jobs/"+id+"/fail", a.operator, `{"token":"`+token+`","reason":"a","reason":"b"}`, "invalid_field", "reason appears twice")
	a.refused("POST", "/api/v1/claim", a.operator, `{"queues":["`+a.queue+`"],"Queues":[]}`, "invalid_field", `Queues must be written "queues"`)
	j, err := a.tasks.Get(context.Background(), id)
	if err != nil || j.State != tasks.StateReserved || j.Result != nil || j.LastError != "" || j.Attempts != 0 {
		t.Fatalf("refused holder actions changed the job: %+v %v", j, err)
	}

	// Malformed JSON stays invalid_json.
	a.expect("POST", jobs, a.producer, `{"title":"x"} }`, 400, "invalid_json")
	a.expect("POST", jobs, a.producer, `{"title":"x"} {}`, 400, "invalid_json")
}

func TestHostileButValidTextIsKeptAsSent(t *testing.T) {
	a := newApp(t)
	title := "مراجعة الفاتورة 🧾 בדיקה " + strings.Repeat("Donaudampfschifffahrt", 8)
	payload := `{"note":"\u202eevil\u202c and \u2066isolated\u2069","raw":"` + "\u202e\u200b\ufeff 🧾 \U0001F469\u200d\U0001F4BB" + `","Note":"another key","long":"` + strings.Repeat("w", 20000) + `"}`
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/jobs", a.producer, `{"title":"`+title+`","payload":`+payload+`}`, 201, "")
	id := out["job"].(map[string]any)["id"].(string)
	j, err := a.tasks.Get(context.Background(), id)
	if err != nil || j.Title != title || string(j.Payload) != payload {
		t.Fatalf("stored %q %s (%v), want what was sent", j.Title, j.Payload, err)
	}
}

// A payload that is not UTF-8 never reaches a supervisor's feed: the API
// refuses it, and a held job's text arrives as valid UTF-8 JSON.
func TestSupervisorFeedStaysUTF8(t *testing.T) {
	a := newApp(t)
	jobs := "/api/v1/queues/" + a.queue + "/jobs"
	a.expect("POST", jobs, a.producer, "{\"title\":\"broken\",\"payload\":{\"note\":\"\xc3\x28\"}}", 400, "invalid_field")
	id := a.enqueueAs(a.producer, "hostile \U0001F9FE", `,"payload":{"note":"\u202eevil\u202c \ud83d\ude00 مرحبا"}`)
	a.claim()
	_, sam := a.person(users.Supervisor)
	_, snap := a.live("supervisor", sam)
	if !utf8.Valid(snap) || !strings.Contains(string(snap), id) {
		t.Fatalf("snapshot with the held job: valid UTF-8 %v, names it %v", utf8.Valid(snap), strings.Contains(string(snap), id))
	}
	if n := a.stored(); n != 1 {
		t.Fatalf("queue holds %d jobs, want only the valid one", n)
	}
}

func TestWorkPageFormIsUTF8(t *testing.T) {
	a := newApp(t)
	b, id, token := a.claimOnPage("form")
	for _, form := range []url.Values{
		{"notes": {"caf\xe9"}},
		{"key": {"verdict\xff"}, "value": {"ok"}},
		{"key": {"verdict"}, "value": {"\xc3\x28"}},
	} {
		form.Set("_csrf", b.csrf)
		form.Set("token", token)
		if b.do("POST", "/jobs/"+id+"/complete", form); b.status != 400 || !strings.Contains(b.body, "must be valid UTF-8") {
			t.Errorf("complete with %v: %d", form, b.status)
		}
	}
	b.do("POST", "/jobs/"+id+"/fail", url.Values{"_csrf": {b.csrf}, "token": {token}, "reason": {"scan \xff"}})
	if b.status != 400 || !strings.Contains(b.body, "reason") {
		t.Errorf("fail with a reason not UTF-8: %d", b.status)
	}
	j, err := a.tasks.Get(context.Background(), id)
	if err != nil || j.State != tasks.StateReserved || j.Result != nil || j.LastError != "" {
		t.Fatalf("refused forms changed the job: %+v %v", j, err)
	}
}
