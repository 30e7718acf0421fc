package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks"
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

func TestHolderActionsAreTheHoldersAlone(t *testing.T) {
	a := newApp(t)
	_, peer := a.newUser(users.Operator, a.queue)
	id := a.enqueue("held by the operator")
	_, token := a.claim()
	job := "/api/v1/jobs/" + id
	before := a.expect("GET", job, a.super, "", 200, "")
	history := a.expect("GET", job+"/history", a.super, "", 200, "")

	for _, who := range []struct{ name, token string }{
		{"another operator of the queue", peer},
		{"an operator of another queue", a.other},
		{"a producer of the queue", a.producer},
		{"a supervisor", a.super},
	} {
		for _, h := range holderActions {
			t.Run(who.name+" may not "+h.action, func(t *testing.T) {
				a.t = t
				a.expect("POST", job+"/"+h.action, who.token, fmt.Sprintf(h.body, token), 403, "forbidden")
			})
		}
	}
	a.t = t
	// Nothing changed: same holder, same deadline, nothing recorded.
	if after := a.expect("GET", job, a.super, "", 200, ""); !reflect.DeepEqual(after, before) {
		t.Fatalf("refused actions changed the job:\n  before %v\n  after  %v", before, after)
	}
	if after := a.expect("GET", job+"/history", a.super, "", 200, ""); !reflect.DeepEqual(after, history) {
		t.Fatalf("refused actions changed the history:\n  before %v\n  after  %v", history, after)
	}
	if before["state"] != "reserved" || before["reserved_by"] != a.opName || before["deadline"] == nil {
		t.Fatalf("job before = %v, want reserved by %s", before, a.opName)
	}

	// The holder acts.
	ext := a.expect("POST", job+"/extend", a.operator, fmt.Sprintf(`{"token":%q,"seconds":900}`, token), 200, "")
	if ext["deadline"] == before["deadline"] {
		t.Fatalf("extend by the holder kept the deadline %v", ext["deadline"])
	}
	done := a.expect("POST", job+"/complete", a.operator, fmt.Sprintf(`{"token":%q,"result":{"ok":true}}`, token), 200, "")
	if done["state"] != "completed" || done["completed_by"] != a.opName {
		t.Fatalf("complete by the holder = %v", done)
	}
	// Even after, the holder's token is no one else's to retry with.
	a.expect("POST", job+"/complete", peer, fmt.Sprintf(`{"token":%q,"result":{"ok":true}}`, token), 403, "forbidden")
}

func TestHolderRetryIsAnsweredAgain(t *testing.T) {
	a := newApp(t)
	_, peer := a.newUser(users.Operator, a.queue)

	// Complete: the retry of the very request answers the very job.
	id := a.enqueue("to complete")
	_, token := a.claim()
	job := "/api/v1/jobs/" + id
	body := fmt.Sprintf(`{"token":%q,"result":{"ok":true}}`, token)
	first := a.expect("POST", job+"/complete", a.operator, body, 200, "")
	if first["state"] != "completed" || first["completed_by"] != a.opName {
		t.Fatalf("complete = %v", first)
	}
	if again := a.expect("POST", job+"/complete", a.operator, body, 200, ""); !reflect.DeepEqual(again, first) {
		t.Fatalf("retried complete answered\n  %v\nwant the first answer\n  %v", again, first)
	}
	if stored := a.expect("GET", job, a.operator, "", 200, ""); !reflect.DeepEqual(stored, first) {
		t.Fatalf("the completed job reads\n  %v\nwant what complete answered\n  %v", stored, first)
	}
	// A retry whose body differs still answers the job as it was completed,
	// with the result sent first (which is the one kept).
	for _, retry := range []string{`{"token":%q}`, `{"token":%q,"result":{"ok":false}}`} {
		retry = fmt.Sprintf(retry, token)
		if again := a.expect("POST", job+"/complete", a.operator, retry, 200, ""); !reflect.DeepEqual(again, first) {
			t.Errorf("complete retried with %s answered\n  %v\nwant the first answer\n  %v", retry, again, first)
		}
	}
	if stored := a.expect("GET", job, a.operator, "", 200, ""); !reflect.DeepEqual(stored, first) {
		t.Fatalf("after the retries the job reads\n  %v\nwant\n  %v", stored, first)
	}

	// Release: answered again until someone claims the job.
	id = a.enqueue("to release")
	if got, tok := a.claim(); got != id {
		t.Fatalf("claimed %s, want %s", got, id)
	} else {
		token = tok
	}
	job = "/api/v1/jobs/" + id
	body = fmt.Sprintf(`{"token":%q}`, token)
	first = a.expect("POST", job+"/release", a.operator, body, 200, "")
	if first["state"] != "ready" {
		t.Fatalf("release = %v", first)
	}
	if again := a.expect("POST", job+"/release", a.operator, body, 200, ""); !reflect.DeepEqual(again, first) {
		t.Fatalf("retried release answered\n  %v\nwant the first answer\n  %v", again, first)
	}
	// Another action with the same token is no retry.
	a.expect("POST", job+"/skip", a.operator, body, 409, "reservation_lost")
	a.expect("POST", job+"/complete", a.operator, body, 409, "reservation_lost")
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", peer, "", 200, "")
	if got := out["job"].(map[string]any)["id"]; got != id {
		t.Fatalf("the other operator claimed %v, want %s", got, id)
	}
	a.expect("POST", job+"/release", a.operator, body, 409, "reservation_lost")
	if j := a.expect("GET", job, a.super, "", 200, ""); j["state"] != "reserved" || j["reserved_by"] != a.nameOf(peer) {
		t.Fatalf("after the stale release the job is %v, want reserved by the other operator", j)
	}
}

func TestStaleTokenOfAnExpiredReservation(t *testing.T) {
	a := newApp(t)
	peerName, peer := a.newUser(users.Operator, a.queue)
	id := a.enqueueAs(a.producer, "a lease", `,"lease_seconds":60`)
	claim := "/api/v1/queues/" + a.queue + "/claim"
	out := a.expect("POST", claim, a.operator, "", 200, "")
	token := out["reservation"].(map[string]any)["token"].(string)
	deadline, err := time.Parse(time.RFC3339Nano, out["reservation"].(map[string]any)["deadline"].(string))
	if err != nil {
		t.Fatal(err)
	}
	a.passTime(deadline)
	job := "/api/v1/jobs/" + id
	// Expired, not yet taken back: the token is dead already.
	a.expect("POST", job+"/complete", a.operator, fmt.Sprintf(`{"token":%q}`, token), 409, "reservation_lost")
	// The other operator's claim takes it back and gets it.
	out = a.expect("POST", claim, peer, "", 200, "")
	if got := out["job"].(map[string]any)["id"]; got != id {
		t.Fatalf("the other operator claimed %v, want %s", got, id)
	}
	peerToken := out["reservation"].(map[string]any)["token"].(string)
	for _, h := range holderActions {
		t.Run("stale "+h.action, func(t *testing.T) {
			a.t = t
			a.expect("POST", job+"/"+h.action, a.operator, fmt.Sprintf(h.body, token), 409, "reservation_lost")
		})
	}
	a.t = t
	if j := a.expect("GET", job, a.super, "", 200, ""); j["state"] != "reserved" || j["reserved_by"] != peerName || j["attempts"] != 1.0 {
		t.Fatalf("after the stale actions the job is %v, want reserved by %s after one expired attempt", j, peerName)
	}
	a.expect("POST", job+"/complete", peer, fmt.Sprintf(`{"token":%q}`, peerToken), 200, "")
}

func TestClaimWithIdempotencyKey(t *testing.T) {
	for _, route := range []struct{ name, path string }{
		{"queue's route", "/api/v1/queues/%s/claim"},
		{"any queue's route", "/api/v1/claim"},
	} {
		t.Run(route.name, func(t *testing.T) {
			a := newApp(t)
			path := route.path
			if strings.Contains(path, "%s") {
				path = fmt.Sprintf(path, a.queue)
			}
			_, peer := a.newUser(users.Operator, a.queue)
			first := a.enqueueAs(a.producer, "first", `,"priority":90`)
			second := a.enqueueAs(a.producer, "second", `,"priority":80`)
			third := a.enqueueAs(a.producer, "third", `,"priority":70`)

			got := a.claimWithKey(path, a.operator, "key-1")
			if got.id != first || got.token == "" {
				t.Fatalf("claim with key-1 = %+v, want %s", got, first)
			}
			if again := a.claimWithKey(path, a.operator, "key-1"); again != got {
				t.Fatalf("claim retried with key-1 = %+v, want the same reservation %+v", again, got)
			}
			other := a.claimWithKey(path, a.operator, "key-2")
			if other.id != second || other.token == got.token {
				t.Fatalf("claim with key-2 = %+v, want a new reservation of %s", other, second)
			}
			// A key is the operator's own.
			if peers := a.claimWithKey(path, peer, "key-1"); peers.id != third {
				t.Fatalf("another operator's claim with key-1 = %+v, want %s", peers, third)
			}
			// Either route answers a live reservation made with the key.
			for _, p := range []string{"/api/v1/queues/" + a.queue + "/claim", "/api/v1/claim"} {
				if again := a.claimWithKey(p, a.operator, "key-2"); again != other {
					t.Fatalf("claim on %s with key-2 = %+v, want %+v", p, again, other)
				}
			}

			// Once the reservation ends the key claims anew.
			a.expect("POST", "/api/v1/jobs/"+first+"/complete", a.operator, fmt.Sprintf(`{"token":%q}`, got.token), 200, "")
			fourth := a.enqueue("fourth")
			if anew := a.claimWithKey(path, a.operator, "key-1"); anew.id != fourth || anew.token == got.token {
				t.Fatalf("claim with key-1 after its job completed = %+v, want a new reservation of %s", anew, fourth)
			}
			a.expect("POST", "/api/v1/jobs/"+second+"/release", a.operator, fmt.Sprintf(`{"token":%q}`, other.token), 200, "")
			if anew := a.claimWithKey(path, a.operator, "key-2"); anew.id != second || anew.token == other.token {
				t.Fatalf("claim with key-2 after its job was released = %+v, want a new reservation of %s", anew, second)
			}
		})
	}
}

func TestClaimAnyWithIdempotencyKeyAcrossQueues(t *testing.T) {
	a := newApp(t)
	second := a.queue + "-second"
	if _, err := a.tasks.PutQueue(context.Background(), tasks.Queue{Name: second}); err != nil {
		t.Fatal(err)
	}
	_, op := a.newUser(users.Operator, a.queue, second)
	enqueue := func(queue string, priority int) string {
		t.Helper()
		out := a.expect("POST", "/api/v1/queues/"+queue+"/jobs", a.super, fmt.Sprintf(`{"title":"p%d","priority":%d}`, priority, priority), 201, "")
		return out["job"].(map[string]any)["id"].(string)
	}
	first := enqueue(second, 60)
	got := a.claimWithKey("/api/v1/claim", op, "key-1")
	if got.id != first {
		t.Fatalf("claim = %+v, want %s", got, first)
	}
	// A better job in the other queue does not change the answer to the key.
	better := enqueue(a.queue, 90)
	if again := a.claimWithKey("/api/v1/claim", op, "key-1"); again != got {
		t.Fatalf("claim retried with key-1 = %+v, want %+v", again, got)
	}
	if other := a.claimWithKey("/api/v1/claim", op, "key-2"); other.id != better {
		t.Fatalf("claim with key-2 = %+v, want %s", other, better)
	}
}

func TestJobHistoryAPI(t *testing.T) {
	a := newApp(t)
	producer := a.nameOf(a.producer)
	heldName, held := a.newUser(users.Operator, a.queue)
	_, never := a.newUser(users.Operator, a.queue)
	_, otherProducer := a.newUser(users.Producer, "elsewhere")

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

	for _, tc := range []struct {
		name   string
		token  string
		status int
		code   string
	}{
		{"supervisor", a.super, 200, ""},
		{"producer of the queue", a.producer, 200, ""},
		{"operator who completed it", a.operator, 200, ""},
		{"operator who held it and gave it back", held, 200, ""},
		{"operator of the queue who never held it", never, 403, "forbidden"},
		{"operator of another queue", a.other, 403, "forbidden"},
		{"producer of another queue", otherProducer, 403, "forbidden"},
		{"nobody", "", 401, "unauthenticated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.t = t
			out := a.expect("GET", path, tc.token, "", tc.status, tc.code)
			if tc.status == 200 && len(out["history"].([]any)) != len(want) {
				t.Fatalf("history = %v", out)
			}
		})
	}
	a.t = t
	a.expect("GET", "/api/v1/jobs/nope/history", a.super, "", 404, "job_not_found")
}

// More time from the work page's script is answered in place: the page as
// it is now, whose More time box says what came of it (more time, or why
// not), so the page that asked keeps what its operator typed.
func TestExtendInPlace(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"max_extensions":1}`, 200, "")
	b, id, token := a.claimOnPage("more time")
	if !strings.Contains(b.body, "1 extension left") {
		t.Fatal("the work page does not say how many extensions are left")
	}
	b.header = http.Header{"Hx-Request": {"true"}}
	b.do("POST", "/jobs/"+id+"/extend", url.Values{"_csrf": {b.csrf}, "token": {token}, "seconds": {"600"}})
	if b.status != 200 || !regexp.MustCompile(`data-testid="extended">\s*More time: the deadline is now <time datetime="[^"]+" data-time-only>`).MatchString(b.body) ||
		!strings.Contains(b.body, `data-testid="no-extensions"`) {
		t.Fatalf("more time in place: %d\n%s", b.status, b.body)
	}
	// Asking for later still (the same 600 s, asked within the same
	// millisecond, would be no change at all, and answered as done).
	b.do("POST", "/jobs/"+id+"/extend", url.Values{"_csrf": {b.csrf}, "token": {token}, "seconds": {"1200"}})
	if b.status != 200 || !strings.Contains(b.body, `data-testid="extend-problem"`) ||
		!strings.Contains(b.body, "No more time can be added") || !strings.Contains(b.body, `id="timer"`) {
		t.Fatalf("more time past the limit, in place: %d\n%s", b.status, b.body)
	}
	// Without the script, the refusal is a page of its own, as before.
	b.header = nil
	if b.do("POST", "/jobs/"+id+"/extend", url.Values{"_csrf": {b.csrf}, "token": {token}, "seconds": {"1200"}}); b.status != 409 {
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

// An operator whose grant of a queue is taken away reads none of its jobs
// any more, not even those they completed, nor their histories; only what
// they still hold, which they may finish.
func TestRemovedGrantEndsReadingCompletedJobs(t *testing.T) {
	a := newApp(t)
	id := a.enqueue("done once")
	held := a.enqueue("still held")
	_, tok := a.claim()
	_, heldTok := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+tok+`","result":{"k":"v"}}`, 200, "")
	a.expect("GET", "/api/v1/jobs/"+id, a.operator, "", 200, "")
	a.expect("GET", "/api/v1/jobs/"+id+"/history", a.operator, "", 200, "")
	a.expect("PATCH", "/api/v1/users/"+a.opName, a.super, `{"queues":["elsewhere"]}`, 200, "")
	a.expect("GET", "/api/v1/jobs/"+id, a.operator, "", 403, "forbidden")
	a.expect("GET", "/api/v1/jobs/"+id+"/history", a.operator, "", 403, "forbidden")
	a.expect("GET", "/api/v1/jobs/"+held, a.operator, "", 200, "")
	a.expect("POST", "/api/v1/jobs/"+held+"/complete", a.operator, `{"token":"`+heldTok+`"}`, 200, "")
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
