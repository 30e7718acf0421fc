package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// People have skills, set over the API; jobs ask for skills, or name an
// assignee, or prefer people for a while; a claim gives each operator only
// what they may take; a supervisor assigns and transfers jobs. Bad input
// is refused, 400, naming the field, and changes nothing.
func TestRoutingAPI(t *testing.T) {
	a := newApp(t)
	users, jobs := "/api/v1/users/", "/api/v1/queues/"+a.queue+"/jobs"
	u := a.expect("PATCH", users+a.opName, a.super, `{"skills":["de:2","contracts"]}`, 200, "")
	if got := fmt.Sprint(u["skills"]); got != "[contracts de:2]" {
		t.Fatalf("skills after the patch: %s", got)
	}
	a.expect("PATCH", users+a.opName, a.super, `{"skills":["DE"]}`, 400, "invalid_field")
	a.expect("PATCH", users+a.opName, a.super, `{"skills":["de:9"]}`, 400, "invalid_field")
	if u := a.expect("GET", users+a.opName, a.super, "", 200, ""); fmt.Sprint(u["skills"]) != "[contracts de:2]" {
		t.Fatalf("a refused patch changed the skills: %v", u["skills"])
	}
	sam := a.expect("POST", "/api/v1/users", a.super, `{"name":"sam-`+a.queue+`","role":"operator","queues":["`+a.queue+`"],"skills":["fr"],"password":"password-sam"}`, 201, "")
	if fmt.Sprint(sam["skills"]) != "[fr]" {
		t.Fatalf("new user: %v", sam)
	}

	french := a.expect("POST", jobs, a.producer, `{"title":"French","skills":["fr"],"priority":90}`, 201, "")["job"].(map[string]any)
	if fmt.Sprint(french["skills"]) != "[fr]" {
		t.Fatalf("job: %v", french)
	}
	mine := a.expect("POST", jobs, a.producer, `{"title":"Mine","assignee":"`+a.opName+`","priority":10}`, 201, "")["job"].(map[string]any)
	if mine["assignee"] != a.opName {
		t.Fatalf("job: %v", mine)
	}
	pref := a.expect("POST", jobs, a.producer, `{"title":"Preferred","preferred":["sam-`+a.queue+`"],"fallback_after_seconds":600,"priority":80}`, 201, "")["job"].(map[string]any)
	if fmt.Sprint(pref["preferred"]) != "[sam-"+a.queue+"]" || pref["fallback_at"] == nil {
		t.Fatalf("job: %v", pref)
	}
	for _, bad := range []string{
		`{"title":"x","assignee":"nobody-here"}`,
		`{"title":"x","assignee":"` + a.opName + `","preferred":["` + a.opName + `"],"fallback_after_seconds":5}`,
		`{"title":"x","preferred":["` + a.opName + `"]}`,
		`{"title":"x","skills":["de","de"]}`,
	} {
		a.expect("POST", jobs, a.producer, bad, 400, "invalid_field")
	}
	// The operator reads German and handles contracts; the French job and
	// the one preferring sam are not theirs, their own is.
	id, token := a.claim()
	if id != mine["id"] {
		t.Fatalf("the operator claimed %s, want their own job", id)
	}
	a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", a.operator, "", 204, "")

	// A supervisor transfers the held job to sam, then assigns the French
	// one to the operator, who claims it.
	a.expect("POST", "/api/v1/jobs/"+id+"/assign", a.super, `{"person":"nobody-here"}`, 400, "invalid_field")
	a.expect("POST", "/api/v1/jobs/"+id+"/assign", a.super, `{"person":"`+a.opName+`","why":"x"}`, 400, "invalid_json")
	a.expect("POST", "/api/v1/jobs/"+id+"/assign", a.operator, `{"person":"`+a.opName+`"}`, 403, "")
	moved := a.expect("POST", "/api/v1/jobs/"+id+"/assign", a.super, `{"person":"sam-`+a.queue+`","reason":"sam knows them"}`, 200, "")
	if moved["state"] != "ready" || moved["assignee"] != "sam-"+a.queue {
		t.Fatalf("transferred job: %v", moved)
	}
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+token+`"}`, 409, "reservation_lost")
	h := a.expect("GET", "/api/v1/jobs/"+id+"/history", a.super, "", 200, "")["history"].([]any)
	last := h[len(h)-1].(map[string]any)
	if last["action"] != "transferred" || last["assignee"] != "sam-"+a.queue || last["holder"] != a.opName || last["reason"] != "sam knows them" {
		t.Fatalf("the transfer's history entry: %v", last)
	}
	a.expect("POST", "/api/v1/jobs/"+french["id"].(string)+"/assign", a.super, `{"person":"`+a.opName+`"}`, 200, "")
	if id, _ := a.claim(); id != french["id"] {
		t.Fatalf("the operator claimed %s, want the French job assigned to them", id)
	}
	a.expect("POST", "/api/v1/jobs/"+pref["id"].(string)+"/assign", a.super, `{"person":"`+a.opName+`"}`, 200, "")
	done, tok := a.claim()
	a.expect("POST", "/api/v1/jobs/"+done+"/complete", a.operator, `{"token":"`+tok+`"}`, 200, "")
	a.expect("POST", "/api/v1/jobs/"+done+"/assign", a.super, `{"person":"`+a.opName+`"}`, 409, "invalid_state")
	list := a.expect("GET", "/api/v1/users", a.super, "", 200, "")["users"].([]any)
	if !slices.ContainsFunc(list, func(x any) bool { return fmt.Sprint(x.(map[string]any)["skills"]) == "[fr]" }) {
		t.Fatalf("the list of people lacks their skills: %v", list)
	}
}

// The pages: a supervisor sets a person's skills on their page, sees on a
// job's page whom it is for and gives it to one of its queue's operators
// (not to someone else), and on the Team page the jobs nobody here may
// take; the operator finds the job under "Assigned to me", and counts on
// the card only what they may claim.
func TestRoutingPages(t *testing.T) {
	a := newApp(t)
	_, sup := a.person(users.Supervisor)
	opName, op := a.person(users.Operator, a.queue)
	sup.do("GET", "/supervisor/people/"+opName, nil)
	edit := url.Values{"_csrf": {sup.csrf}, "role": {"operator"}, "grant": {"some"}, "queues": {a.queue}, "skills": {"de, vat:9"}}
	sup.do("POST", "/supervisor/people/"+opName, edit)
	if sup.status != http.StatusBadRequest || !strings.Contains(sup.body, "Skills: ") || !strings.Contains(sup.body, `value="de, vat:9"`) {
		t.Fatalf("bad skills: %d, the page does not say so with what was typed", sup.status)
	}
	edit.Set("skills", "de, vat:3")
	sup.do("POST", "/supervisor/people/"+opName, edit)
	if u, err := a.users.Get(context.Background(), opName); err != nil || u.Skills.String() != "de:1,vat:3" {
		t.Fatalf("skills after the form: %v, %v", u.Skills, err)
	}
	sup.do("GET", "/supervisor/people", nil)
	if !strings.Contains(sup.body, "de, vat:3") {
		t.Fatal("the People list does not show the skills")
	}

	jobs := "/api/v1/queues/" + a.queue + "/jobs"
	fr := a.expect("POST", jobs, a.producer, `{"title":"French invoice","skills":["fr"]}`, 201, "")["job"].(map[string]any)["id"].(string)
	a.expect("POST", jobs, a.producer, `{"title":"Open one"}`, 201, "")
	op.do("GET", "/", nil)
	if !strings.Contains(op.body, `data-routed`) || !regexp.MustCompile(`data-testid="ready-count">1<`).MatchString(op.body) {
		t.Fatal("the card does not count only what the operator may claim")
	}
	sup.do("GET", "/jobs/"+fr, nil)
	if !strings.Contains(sup.body, `data-testid="job-skills"`) || !strings.Contains(sup.body, `<option value="`+opName+`"`) {
		t.Fatal("the job's page does not say what it asks for, or offers nobody to give it to")
	}
	sup.do("GET", "/supervisor/team", nil)
	if !strings.Contains(sup.body, `data-testid="stuck-line"`) || !strings.Contains(sup.body, "asks for fr, which nobody here has.") {
		t.Fatal("the Team page does not show the job nobody here may take")
	}
	sup.do("GET", "/jobs/"+fr, nil)
	assign := shownAs(t, sup.body, fr, "assign")
	assign.Set("person", "nobody-"+a.queue)
	sup.do("POST", "/supervisor/jobs/"+fr+"/assign", assign)
	sup.do("GET", "/jobs/"+fr, nil)
	if !strings.Contains(sup.body, "does not work "+a.queue) {
		t.Fatal("giving the job to someone who does not work the queue: the page does not say why nothing was done")
	}
	assign.Set("person", "")
	sup.do("POST", "/supervisor/jobs/"+fr+"/assign", assign)
	sup.do("GET", "/jobs/"+fr, nil)
	if !strings.Contains(sup.body, "Nothing was done: nobody was chosen. Choose one of "+a.queue+"&#39;s operators.") {
		t.Fatal("giving the job to nobody: the page does not say so")
	}
	assign.Set("person", opName)
	sup.do("POST", "/supervisor/jobs/"+fr+"/assign", assign)
	if j := a.expect("GET", "/api/v1/jobs/"+fr, a.super, "", 200, ""); j["assignee"] != opName {
		t.Fatalf("after the form: %v", j)
	}
	op.do("GET", "/", nil)
	if !strings.Contains(op.body, `data-testid="assigned-to-me"`) || !strings.Contains(op.body, "French invoice") {
		t.Fatal("the operator's home has no Assigned to me with the job")
	}
	sup.do("GET", "/supervisor/team", nil)
	if !strings.Contains(sup.body, "1 job waiting for them") {
		t.Fatal("the Team page does not count the job waiting for the operator")
	}
}
