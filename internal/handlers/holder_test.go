package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/users"
)

// newUser makes a user of the role with the queues, and returns their name
// and an API token.
func (a *app) newUser(role users.Role, queues ...string) (string, string) {
	a.t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s%d", role, seq.Add(1))
	if err := a.users.Put(ctx, users.User{Name: name, Role: role, Queues: queues}, "password-"+name); err != nil {
		a.t.Fatal(err)
	}
	token, err := a.users.NewToken(ctx, name)
	if err != nil {
		a.t.Fatal(err)
	}
	return name, token
}

// nameOf returns the name of the user with the API token.
func (a *app) nameOf(token string) string {
	a.t.Helper()
	u, err := a.users.ByToken(context.Background(), token)
	if err != nil {
		a.t.Fatal(err)
	}
	return u.Name
}

// send sends a request with an API token and extra headers, and returns the
// status and the raw body. It reports failures instead of failing the test,
// so it may run on any goroutine.
func (a *app) send(method, path, token, body string, header http.Header) (int, []byte, error) {
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, raw, err
}

// claimed is what a claim answered.
type claimed struct {
	id, token, deadline string
}

// claimWithKey claims on path as the token's operator with an
// Idempotency-Key header, and wants a job.
func (a *app) claimWithKey(path, token, key string) claimed {
	a.t.Helper()
	status, raw, err := a.send("POST", path, token, "", http.Header{"Idempotency-Key": {key}})
	if err != nil || status != http.StatusOK {
		a.t.Fatalf("POST %s with key %q: %d %s %v", path, key, status, raw, err)
	}
	var out struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
		Reservation struct {
			Token    string `json:"token"`
			Deadline string `json:"deadline"`
		} `json:"reservation"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		a.t.Fatalf("POST %s: %v: %s", path, err, raw)
	}
	return claimed{out.Job.ID, out.Reservation.Token, out.Reservation.Deadline}
}

// enqueueAs enqueues a job with the given JSON fields (besides the title)
// as the token's user, and returns its id.
func (a *app) enqueueAs(token, title, fields string) string {
	a.t.Helper()
	body := `{"title":"` + title + `"` + fields + `}`
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/jobs", token, body, 201, "")
	return out["job"].(map[string]any)["id"].(string)
}

// holderActions are the holder's actions, each with a body for token %s.
var holderActions = []struct{ action, body string }{
	{"complete", `{"token":%q,"result":{"by":"someone else"}}`},
	{"release", `{"token":%q}`},
	{"skip", `{"token":%q}`},
	{"extend", `{"token":%q,"seconds":900}`},
	{"fail", `{"token":%q,"reason":"not mine"}`},
}

// Every holder's route answers someone else's use of the holder's token
// 403 (who may act is the engine's, and tested there and in the desk's
// tests).
func TestHolderActionsOfAnotherAreForbidden(t *testing.T) {
	a := newApp(t)
	_, peer := a.newUser(users.Operator, a.queue)
	id := a.enqueue("held by the operator")
	_, token := a.claim()
	for _, h := range holderActions {
		a.expect("POST", "/api/v1/jobs/"+id+"/"+h.action, peer, fmt.Sprintf(h.body, token), 403, "forbidden")
	}
}

// Both claim routes take an Idempotency-Key header: a claim sent again
// with the key answers the reservation it made while it is held.
func TestClaimWithIdempotencyKey(t *testing.T) {
	a := newApp(t)
	first := a.enqueueAs(a.producer, "first", `,"priority":90`)
	second := a.enqueueAs(a.producer, "second", `,"priority":80`)
	for _, tc := range []struct{ path, want string }{
		{"/api/v1/queues/" + a.queue + "/claim", first},
		{"/api/v1/claim", second},
	} {
		key := "key-" + tc.want
		got := a.claimWithKey(tc.path, a.operator, key)
		if got.id != tc.want || got.token == "" || got.deadline == "" {
			t.Fatalf("claim on %s with %s = %+v, want %s", tc.path, key, got, tc.want)
		}
		if again := a.claimWithKey(tc.path, a.operator, key); again != got {
			t.Fatalf("claim on %s retried with %s = %+v, want the same reservation %+v", tc.path, key, again, got)
		}
	}
}

func TestJobHistoryAPI(t *testing.T) {
	a := newApp(t)
	producer := a.nameOf(a.producer)
	heldName, held := a.newUser(users.Operator, a.queue)
	_, never := a.newUser(users.Operator, a.queue)

	id := a.enqueue("with a history")
	// Held first by one operator, who gives it back, then done by another.
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", held, "", 200, "")
	heldToken := out["reservation"].(map[string]any)["token"].(string)
	a.expect("POST", "/api/v1/jobs/"+id+"/release", held, fmt.Sprintf(`{"token":%q}`, heldToken), 200, "")
	_, token := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, fmt.Sprintf(`{"token":%q,"result":{"verdict":"approved"}}`, token), 200, "")

	path := "/api/v1/jobs/" + id + "/history"
	status, raw, err := a.send("GET", path, a.super, "", nil)
	if err != nil || status != 200 {
		t.Fatalf("GET %s as a supervisor: %d %s %v", path, status, raw, err)
	}
	for _, secret := range []string{`"token"`, token, heldToken} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("history shows %s: %s", secret, raw)
		}
	}
	var body struct {
		History []map[string]any `json:"history"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"enqueued by " + producer + " → ready, attempt 0",
		"claimed by " + heldName + " ready → reserved, attempt 1",
		"released by " + heldName + " reserved → ready, attempt 1",
		"claimed by " + a.opName + " ready → reserved, attempt 1",
		"completed by " + a.opName + " reserved → completed, attempt 1",
	}
	var got []string
	var last time.Time
	for i, e := range body.History {
		from := ""
		if f, ok := e["from"].(string); ok {
			from = f + " "
		}
		got = append(got, fmt.Sprintf("%v by %v %s→ %v, attempt %v", e["action"], e["actor"], from, e["to"], e["attempt"]))
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(e["at"]))
		if err != nil || at.Before(last) {
			t.Fatalf("entry %d at %v (%v): not after the one before (%v)", i, e["at"], err, last)
		}
		last = at
		_, hasDeadline := e["deadline"]
		if claimed := e["action"] == "claimed"; hasDeadline != claimed {
			t.Errorf("entry %d (%v) has deadline %v", i, e["action"], e["deadline"])
		}
		_, hasResult := e["result"]
		if hasResult != (e["action"] == "completed") {
			t.Errorf("entry %d (%v) has result %v", i, e["action"], e["result"])
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if r, _ := json.Marshal(body.History[4]["result"]); string(r) != `{"verdict":"approved"}` {
		t.Fatalf("completed entry's result = %s", r)
	}

	// Who gave it back reads it up to their own part: not who completed it
	// after them, nor with what result.
	status, raw, err = a.send("GET", path, held, "", nil)
	if err != nil || status != 200 {
		t.Fatalf("GET %s as who gave it back: %d %s %v", path, status, raw, err)
	}
	var mine struct {
		History []map[string]any `json:"history"`
	}
	if err := json.Unmarshal(raw, &mine); err != nil || len(mine.History) != 3 || mine.History[2]["action"] != "released" ||
		strings.Contains(string(raw), "approved") || strings.Contains(string(raw), a.opName) {
		t.Fatalf("who gave it back reads %s (%v), want the history up to their release", raw, err)
	}
	// Who may read it is the desk's: one refusal, mapped.
	a.expect("GET", path, never, "", 403, "forbidden")
	a.expect("GET", path, "", "", 401, "unauthenticated")
	a.expect("GET", "/api/v1/jobs/nope/history", a.super, "", 404, "job_not_found")
}

// More time from the work page's script is answered in place: the page as
// it is now, whose More time box says what came of it (more time, or why
// not), so the page that asked keeps what its operator typed. The form
// carries a fresh key: sent twice, it is one extension.
func TestExtendInPlace(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"max_extensions":1}`, 200, "")
	b, id, token := a.claimOnPage("more time")
	key := regexp.MustCompile(`name="extend_key" value="([^"]+)"`).FindStringSubmatch(b.body)
	if !strings.Contains(b.body, "You may ask once more") || !strings.Contains(b.body, `name="add" value="300"`) || key == nil {
		t.Fatalf("the work page does not offer More time in words, with its choices and a key:\n%s", b.body)
	}
	b.header = http.Header{"Hx-Request": {"true"}}
	form := url.Values{"_csrf": {b.csrf}, "token": {token}, "add": {"900"}, "extend_key": {key[1]}}
	b.do("POST", "/jobs/"+id+"/extend", form)
	if b.status != 200 || !regexp.MustCompile(`data-testid="extended">\s*More time: the deadline is now <time datetime="[^"]+" data-time-only>`).MatchString(b.body) ||
		!strings.Contains(b.body, `data-testid="no-extensions"`) {
		t.Fatalf("more time in place: %d\n%s", b.status, b.body)
	}
	job := func() map[string]any { return a.expect("GET", "/api/v1/jobs/"+id, a.super, "", 200, "") }
	added := job()
	// The same form again (a double submit): answered as done, no second
	// extension.
	b.do("POST", "/jobs/"+id+"/extend", form)
	if again := job(); b.status != 200 || again["extensions"] != 1.0 || again["deadline"] != added["deadline"] {
		t.Fatalf("the same form sent twice: %d, %v then %v", b.status, added, again)
	}
	form.Set("extend_key", "another-page")
	b.do("POST", "/jobs/"+id+"/extend", form)
	if b.status != 200 || !strings.Contains(b.body, `data-testid="extend-problem"`) ||
		!strings.Contains(b.body, "No more time can be added") || !strings.Contains(b.body, `id="timer"`) {
		t.Fatalf("more time past the limit, in place: %d\n%s", b.status, b.body)
	}
	// Without the script, the refusal is a page of its own, as before.
	b.header = nil
	if b.do("POST", "/jobs/"+id+"/extend", form); b.status != 409 {
		t.Fatalf("more time past the limit: %d", b.status)
	}
}

// A job its holder completed, opened again (by the browser's Back, or a
// link), shows what it was and what they sent, not that their reservation
// ended.
func TestOwnCompletedJobPage(t *testing.T) {
	a := newApp(t)
	a.enqueue("Check invoice INV-0042")
	id, token := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+token+`","result":{"notes":"paid in full"}}`, 200, "")
	b := a.browser().login(a.opName, "password-"+a.opName)
	if b.do("GET", "/jobs/"+id, nil); b.status != http.StatusOK {
		t.Fatalf("own completed job: %d", b.status)
	}
	for _, want := range []string{`data-testid="job-state">completed`, "paid in full", "INV-0042"} {
		if !strings.Contains(b.body, want) {
			t.Errorf("own completed job page lacks %q", want)
		}
	}
	if strings.Contains(b.body, `data-testid="ended"`) || strings.Contains(b.body, `data-testid="complete-form"`) {
		t.Error("own completed job page says the reservation ended, or offers to complete it")
	}
}

// A job held in a queue taken from its holder since stays on their home
// page, theirs to finish (its work page still takes their actions); the
// queue itself is no longer offered.
func TestHeldJobOfAQueueTakenAwayStaysInView(t *testing.T) {
	a := newApp(t)
	a.enqueue("Check invoice INV-0077")
	id, _ := a.claim()
	b := a.browser().login(a.opName, "password-"+a.opName)
	if err := a.users.Put(context.Background(), users.User{Name: a.opName, Role: users.Operator, Queues: []string{"elsewhere"}}, ""); err != nil {
		t.Fatal(err)
	}
	if b.do("GET", "/fragments/home", nil); b.status != http.StatusOK {
		t.Fatalf("home fragment: %d", b.status)
	}
	holding := b.body[max(0, strings.Index(b.body, `data-testid="my-reservations"`)):]
	if !strings.Contains(holding, "/jobs/"+id) || !strings.Contains(holding, "INV-0077") {
		t.Fatal("the job held in a queue taken away is not among what the operator holds")
	}
	if strings.Contains(b.body, `data-queue="`+a.queue+`"`) {
		t.Fatal("the queue taken away is still offered")
	}
	if b.do("GET", "/jobs/"+id, nil); b.status != http.StatusOK || !strings.Contains(b.body, `data-testid="complete-form"`) {
		t.Fatalf("the work page of the held job: %d", b.status)
	}
}

// TestClaimAnyNothingReady: a claim across queues with nothing ready for
// the operator answers 204, with no body or with the queues named, as the
// claim of one queue does.
func TestClaimAnyNothingReady(t *testing.T) {
	a := newApp(t)
	a.expect("POST", "/api/v1/claim", a.operator, "", 204, "")
	id := a.enqueue("skipped")
	_, token := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/skip", a.operator, `{"token":"`+token+`"}`, 200, "")
	a.expect("POST", "/api/v1/claim", a.operator, `{"queues":["`+a.queue+`"]}`, 204, "")
}

// More time through the API with an Idempotency-Key: a retry of the
// reservation's latest extension answers the deadline as it is and spends
// no second extension; a new key asks anew.
func TestExtendRetryWithKey(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"max_extensions":1}`, 200, "")
	a.enqueue("long")
	id, token := a.claim()
	extend := func(key string) (int, string) {
		status, body, err := a.send("POST", "/api/v1/jobs/"+id+"/extend", a.operator, `{"token":"`+token+`","seconds":900}`,
			http.Header{"Idempotency-Key": {key}, "Content-Type": {"application/json"}})
		if err != nil {
			t.Fatal(err)
		}
		return status, string(body)
	}
	status, first := extend("more-1")
	if status != 200 {
		t.Fatalf("extend: %d %s", status, first)
	}
	if status, again := extend("more-1"); status != 200 || again != first {
		t.Fatalf("the retry: %d %s, want the first answer %s", status, again, first)
	}
	if job := a.expect("GET", "/api/v1/jobs/"+id, a.super, "", 200, ""); job["extensions"] != 1.0 {
		t.Fatalf("after a retry: %v extensions, want 1", job["extensions"])
	}
	if status, body := extend("more-2"); status != 409 || !strings.Contains(body, "extension_limit") {
		t.Fatalf("a new key past the limit: %d %s", status, body)
	}
	if status, body := extend("has space"); status != 400 {
		t.Fatalf("a key with a space: %d %s", status, body)
	}
}
