package handlers_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// A person in training has every completion reviewed: a reviewer (an
// operator with the skill "review") claims it with a review claim, sends
// it back with a note, and approves the next; an operator without the
// skill may not review, and nobody reviews their own work. A queue's
// overlap and review settings go through the API.
func TestReviewAPI(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue
	settings := a.expect("PATCH", q, a.super, `{"overlap":1,"review_fraction":0.2,"min_agreement":0.5}`, 200, "")
	if settings["review_fraction"] != 0.2 || settings["min_agreement"] != 0.5 || settings["overlap"] != 1.0 {
		t.Fatalf("settings %v", settings)
	}
	a.expect("PATCH", q, a.super, `{"review_fraction":1.5}`, 400, "invalid_field")
	a.expect("PATCH", q, a.super, `{"overlap":10}`, 400, "invalid_field")
	a.expect("PATCH", q, a.super, `{"review_fraction":0}`, 200, "")

	u := a.expect("PATCH", "/api/v1/users/"+a.opName, a.super, `{"training":true}`, 200, "")
	if u["training"] != true {
		t.Fatalf("user %v", u)
	}
	reviewer, token := a.newUser(users.Operator, a.queue)
	a.expect("POST", q+"/reviews/claim", token, "", 403, "forbidden")
	a.expect("PATCH", "/api/v1/users/"+reviewer, a.super, `{"skills":["review"]}`, 200, "")
	a.expect("POST", q+"/reviews/claim", token, "", 204, "")

	id := a.enqueue("Check the invoice")
	_, rt := a.claim()
	done := a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+rt+`","result":{"ok":1}}`, 200, "")
	review, _ := done["review"].(map[string]any)
	if done["state"] != "ready" || review["reason"] != "training" || review["author"] != a.opName || fmt.Sprint(review["result"]) != "map[ok:1]" {
		t.Fatalf("a completion in training: %v", done)
	}
	a.expect("POST", q+"/reviews/claim", a.operator, "", 403, "forbidden") // no review skill
	held := a.expect("POST", q+"/reviews/claim", token, "", 200, "")
	ht := held["reservation"].(map[string]any)["token"].(string)
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", token, `{"token":"`+ht+`"}`, 409, "invalid_state")
	a.expect("POST", "/api/v1/jobs/"+id+"/send-back", token, `{"token":"`+ht+`","note":""}`, 400, "invalid_field")
	back := a.expect("POST", "/api/v1/jobs/"+id+"/send-back", token, `{"token":"`+ht+`","note":"Book it under AP."}`, 200, "")
	if back["state"] != "ready" || fmt.Sprint(back["preferred"]) != "["+a.opName+"]" || back["review"] != nil {
		t.Fatalf("sent back: %v", back)
	}
	h := a.expect("GET", "/api/v1/jobs/"+id+"/history", a.super, "", 200, "")["history"].([]any)
	if last := h[len(h)-1].(map[string]any); last["action"] != "sent_back" || last["reason"] != "Book it under AP." {
		t.Fatalf("the send-back in the history: %v", last)
	}

	// Done again, reviewed again, approved with a correction.
	_, rt = a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+rt+`","result":{"ok":2}}`, 200, "")
	held = a.expect("POST", q+"/reviews/claim", token, "", 200, "")
	ht = held["reservation"].(map[string]any)["token"].(string)
	ok := a.expect("POST", "/api/v1/jobs/"+id+"/approve", token, `{"token":"`+ht+`","result":{"ok":3}}`, 200, "")
	if ok["state"] != "completed" || fmt.Sprint(ok["result"]) != "map[ok:3]" {
		t.Fatalf("approved: %v", ok)
	}
	a.expect("POST", "/api/v1/jobs/"+id+"/approve", a.operator, `{"token":"`+rt+`"}`, 403, "forbidden")
	a.expect("POST", "/api/v1/jobs/"+id+"/approve", token, `{"token":"`+ht+`"}`, 200, "")
}

// On the pages: a person in training completes a job from its work page
// and is told it waits for review; the reviewer sends it back from the
// review's work page, with a note the author then reads on the job's work
// page when they claim it again.
func TestReviewOnThePages(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/users/"+a.opName, a.super, `{"training":true}`, 200, "")
	reviewer, token := a.newUser(users.Operator, a.queue)
	a.expect("PATCH", "/api/v1/users/"+reviewer, a.super, `{"skills":["review"]}`, 200, "")
	b, id, rt := a.claimOnPage("Check the address")
	b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {rt}, "notes": {"done"}})
	b.do("GET", "/", nil)
	if !strings.Contains(b.body, "a reviewer looks at it before it counts.") {
		t.Fatalf("the flash after a completion in training: %s", b.body)
	}
	held := a.expect("POST", "/api/v1/queues/"+a.queue+"/reviews/claim", token, "", 200, "")
	ht := held["reservation"].(map[string]any)["token"].(string)
	a.expect("POST", "/api/v1/jobs/"+id+"/send-back", token, `{"token":"`+ht+`","note":"Say which street."}`, 200, "")
	b.do("GET", "/", nil)
	b.do("POST", "/claim", url.Values{"_csrf": {b.csrf}})
	b.do("GET", "/jobs/"+id, nil)
	if !strings.Contains(b.body, `data-testid="sent-back-note"`) || !strings.Contains(b.body, "Sent back by "+reviewer+": Say which street.") {
		t.Fatalf("the author's work page after a send-back: %s", b.body)
	}
}

// A queue with overlap_at_once has several people hold one job at once:
// supervisors and producers read every reservation, a holder their own
// alone; the live reservations list each; a holder's answer leaves the
// job with the others, and says so on the work page; the settings page
// sets it with a box.
func TestOverlapAtOnce(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue
	settings := a.expect("PATCH", q, a.super, `{"overlap":2,"overlap_at_once":true}`, 200, "")
	if settings["overlap_at_once"] != true {
		t.Fatalf("settings %v", settings)
	}
	b, id, rt := a.claimOnPage("Label the photo")
	other, token := a.newUser(users.Operator, a.queue)
	seat := a.expect("POST", q+"/claim", token, "", 200, "")
	if seat["job"].(map[string]any)["id"] != id || seat["reservation"].(map[string]any)["token"] == rt {
		t.Fatalf("the second claim: %v", seat)
	}
	job := a.expect("GET", "/api/v1/jobs/"+id, a.super, "", 200, "")
	holders, _ := job["holders"].([]any)
	if len(holders) != 2 || holders[0].(map[string]any)["by"] != a.opName || holders[1].(map[string]any)["by"] != other {
		t.Fatalf("holders %v", job["holders"])
	}
	if mine := a.expect("GET", "/api/v1/jobs/"+id, token, "", 200, ""); mine["holders"] != nil || mine["reserved_by"] != other {
		t.Fatalf("a holder reads %v", mine)
	}
	live := a.expect("GET", "/api/v1/reservations?queue="+a.queue, a.super, "", 200, "")["reservations"].([]any)
	if len(live) != 2 {
		t.Fatalf("live reservations %v", live)
	}

	b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {rt}, "notes": {"a bag"}})
	b.do("GET", "/", nil)
	if !strings.Contains(b.body, "1 of 2 answers are in; others are answering it too.") {
		t.Fatalf("the flash after one answer of a job others hold: %s", b.body)
	}
	if now := a.expect("GET", "/api/v1/jobs/"+id, a.super, "", 200, ""); now["state"] != "reserved" || now["reserved_by"] != other || now["holders"] != nil {
		t.Fatalf("after the first answer: %v", now)
	}

	sup := a.browser()
	name := fmt.Sprint("boss", seq.Add(1))
	if err := a.users.Put(context.Background(), users.User{Name: name, Role: users.Supervisor}, "password-boss"); err != nil {
		t.Fatal(err)
	}
	sup.login(name, "password-boss")
	sup.do("GET", "/supervisor/queues/"+a.queue, nil)
	if !strings.Contains(sup.body, `name="overlap_at_once" value="1" checked`) {
		t.Fatalf("the settings page does not show the box ticked: %s", sup.body)
	}
	sup.do("POST", "/supervisor/queues/"+a.queue+"/settings", url.Values{"_csrf": {sup.csrf}, "overlap_at_once": {"0"},
		"lease_seconds": {"5m"}, "max_attempts": {"5"}, "max_extensions": {"10"}, "max_hold_seconds": {"4h"}, "aging_seconds": {"0s"}, "max_held": {"0"}})
	if got := a.expect("PATCH", q, a.super, `{}`, 200, ""); got["overlap_at_once"] != false || got["overlap"] != 2.0 {
		t.Fatalf("after the box was unticked: %v", got)
	}
}

// An answer of several (overlap) answers its holder the job without the
// answers given so far, and the next holder reads it so too: each answers
// on their own. The last answer, which completes the job, answers them all
// and their agreement.
func TestAnswerIsTheHoldersOwn(t *testing.T) {
	a := newApp(t)
	a.expect("PATCH", "/api/v1/queues/"+a.queue, a.super, `{"overlap":2}`, 200, "")
	a.enqueue("Label the photo")
	complete := func(token string) map[string]any {
		t.Helper()
		out := a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", token, "", 200, "")
		id, rt := out["job"].(map[string]any)["id"].(string), out["reservation"].(map[string]any)["token"].(string)
		if held := a.expect("GET", "/api/v1/jobs/"+id, token, "", 200, ""); held["answers"] != nil || held["agreement"] != nil {
			t.Fatalf("its holder reads %v", held)
		}
		return a.expect("POST", "/api/v1/jobs/"+id+"/complete", token, `{"token":"`+rt+`","result":{"n":1}}`, 200, "")
	}
	if first := complete(a.operator); first["state"] != "ready" || first["answers"] != nil || first["agreement"] != nil {
		t.Fatalf("the first answer answers %v", first)
	}
	_, second := a.newUser(users.Operator, a.queue)
	last := complete(second)
	if answers, _ := last["answers"].([]any); last["state"] != "completed" || len(answers) != 2 || last["agreement"] == nil {
		t.Fatalf("the last answer answers %v", last)
	}
}
