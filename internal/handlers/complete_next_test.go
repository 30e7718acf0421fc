package handlers_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// POST /api/v1/jobs/{id}/complete?next=true completes the job and claims
// the next for the holder in one call, and answers both.
func TestCompleteAndNextAPI(t *testing.T) {
	a := newApp(t)
	first, second := a.enqueue("first"), a.enqueue("second")
	id, token := a.claim()
	if id != first {
		t.Fatalf("claimed %s, want %s", id, first)
	}
	path := "/api/v1/jobs/" + first + "/complete?next=true"
	body := fmt.Sprintf(`{"token":%q,"result":{"ok":true}}`, token)
	out := a.expect("POST", path, a.operator, body, 200, "")
	job, _ := out["job"].(map[string]any)
	next, _ := out["next"].(map[string]any)
	if job["state"] != "completed" || job["id"] != first || next == nil {
		t.Fatalf("answer = %v", out)
	}
	nextJob, _ := next["job"].(map[string]any)
	reservation, _ := next["reservation"].(map[string]any)
	if nextJob["id"] != second || nextJob["state"] != "reserved" || nextJob["reserved_by"] != a.opName || reservation["token"] == "" || reservation["deadline"] == nil {
		t.Fatalf("next = %v", next)
	}
	// Nothing more to claim: next is null.
	last := a.expect("POST", "/api/v1/jobs/"+second+"/complete?next=true", a.operator,
		fmt.Sprintf(`{"token":%q}`, reservation["token"]), 200, "")
	if last["job"].(map[string]any)["state"] != "completed" || last["next"] != nil {
		t.Fatalf("the last = %v, want completed and no next", last)
	}
	// Refusals.
	third := a.enqueue("third")
	_, token = a.claim()
	a.expect("POST", "/api/v1/jobs/"+third+"/complete?next=maybe", a.operator, fmt.Sprintf(`{"token":%q}`, token), 400, "invalid_field")
	a.expect("POST", "/api/v1/jobs/"+third+"/complete?next=true", a.operator, `{"token":"0123456789abcdef0123456789abcdef"}`, 409, "reservation_lost")
	a.expect("POST", "/api/v1/jobs/"+third+"/complete?next=true", a.other, fmt.Sprintf(`{"token":%q}`, token), 403, "forbidden")
	// Without next, complete answers the job as before.
	plain := a.expect("POST", "/api/v1/jobs/"+third+"/complete", a.operator, fmt.Sprintf(`{"token":%q}`, token), 200, "")
	if plain["state"] != "completed" || plain["id"] != third {
		t.Fatalf("plain complete = %v", plain)
	}
}

// The work page's Complete & next opens the next job, or goes home saying
// that nothing else is waiting.
func TestCompleteAndNextFromTheWorkPage(t *testing.T) {
	a := newApp(t)
	b, id, token := a.claimOnPage("first")
	second := a.enqueue("second")
	b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {token}, "notes": {"fine"}, "next": {"1"}})
	if b.status != 303 || b.body != "/jobs/"+second {
		t.Fatalf("complete & next: %d %s, want the next job's page", b.status, b.body)
	}
	b.do("GET", b.body, nil)
	if !strings.Contains(b.body, "Completed “first”. Here is the next one.") {
		t.Fatal("the next job's page does not say the first was completed")
	}
	m := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(b.body)
	if m == nil {
		t.Fatal("the next job's page has no reservation token")
	}
	if j := a.expect("GET", "/api/v1/jobs/"+id, a.super, "", 200, ""); j["state"] != "completed" || j["result"].(map[string]any)["notes"] != "fine" {
		t.Fatalf("the first job: %v", j)
	}
	b.do("POST", "/jobs/"+second+"/complete", url.Values{"_csrf": {b.csrf}, "token": {m[1]}, "next": {"1"}})
	if b.status != 303 || b.body != "/" {
		t.Fatalf("complete & next with nothing waiting: %d %s, want home", b.status, b.body)
	}
	b.do("GET", "/", nil)
	if !strings.Contains(b.body, "Completed “second”. Nothing else is waiting in "+a.queue+" for you.") {
		t.Fatal("home does not say that nothing else is waiting")
	}
}

// Skip on the work page opens the next job of the queue, never the one
// skipped; with nothing else waiting, or the queue paused, it goes home
// saying so.
func TestSkipOpensTheNext(t *testing.T) {
	a := newApp(t)
	b, first, token := a.claimOnPage("first")
	second := a.enqueue("second")
	b.do("POST", "/jobs/"+first+"/skip", url.Values{"_csrf": {b.csrf}, "token": {token}})
	if b.status != 303 || b.body != "/jobs/"+second {
		t.Fatalf("skip: %d %s, want the next job's page", b.status, b.body)
	}
	b.do("GET", b.body, nil)
	if !strings.Contains(b.body, "Skipped “first”: someone else will get it. Here is the next one.") {
		t.Fatal("the next job's page does not say the first was skipped")
	}
	m := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(b.body)
	if m == nil {
		t.Fatal("the next job's page has no reservation token")
	}
	if j := a.expect("GET", "/api/v1/jobs/"+first, a.super, "", 200, ""); j["state"] != "ready" {
		t.Fatalf("the skipped job is %v, want ready", j["state"])
	}
	// The skipped job's page, opened again (the browser's Back), says what
	// became of the reservation, as it was: no other tab was involved.
	b.do("GET", "/jobs/"+first, nil)
	if !strings.Contains(b.body, "This reservation ended: you skipped it.") {
		t.Fatal("the skipped job's page does not say it was skipped")
	}
	// Only the job skipped is left: it is not offered again.
	b.do("POST", "/jobs/"+second+"/skip", url.Values{"_csrf": {b.csrf}, "token": {m[1]}})
	if b.status != 303 || b.body != "/" {
		t.Fatalf("skip with nothing else waiting: %d %s, want home", b.status, b.body)
	}
	b.do("GET", "/", nil)
	if !strings.Contains(b.body, "Skipped “second”: someone else will get it. Nothing else is waiting in "+a.queue+" for you.") {
		t.Fatal("home does not say that nothing else is waiting")
	}
	// A paused queue claims nothing new: home says why.
	b2, id, token := a.claimOnPage("third")
	a.enqueue("fourth")
	a.expect("POST", "/api/v1/queues/"+a.queue+"/pause", a.super, "", 200, "")
	b2.do("POST", "/jobs/"+id+"/skip", url.Values{"_csrf": {b2.csrf}, "token": {token}})
	if b2.status != 303 || b2.body != "/" {
		t.Fatalf("skip in a paused queue: %d %s, want home", b2.status, b2.body)
	}
	b2.do("GET", "/", nil)
	if !strings.Contains(b2.body, "is paused: no new jobs can be claimed") {
		t.Fatal("home does not say the queue is paused")
	}
}
