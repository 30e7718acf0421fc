package handlers_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// shownAs reads what a supervisor's page form for the action on job id
// says the job was when shown: its state, and holder.
func shownAs(t *testing.T, body, id, action string) url.Values {
	t.Helper()
	form := regexp.MustCompile(`(?s)<form method="post" action="/supervisor/jobs/` + regexp.QuoteMeta(id) + `/` + action + `".*?</form>`).FindString(body)
	if form == "" {
		t.Fatalf("the page offers no %s of %s", action, id)
	}
	v := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)"`).FindAllStringSubmatch(form, -1) {
		v.Set(m[1], m[2])
	}
	return v
}

// A supervisor's buttons act on the job as their page showed it: pressed
// on a page gone stale they do nothing, say so, and show the job as it is.
func TestSupervisorButtonsActOnTheJobAsShown(t *testing.T) {
	a := newApp(t)
	_, sup := a.person(users.Supervisor)

	// Requeue, shown for a dead job that was requeued and claimed since.
	id := a.enqueueAs(a.producer, "will die", `,"max_attempts":1`)
	_, tok := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/fail", a.operator, `{"token":"`+tok+`","reason":"x"}`, 200, "")
	sup.do("GET", "/jobs/"+id, nil)
	requeue := shownAs(t, sup.body, id, "requeue")
	if requeue.Get("state") != "dead" {
		t.Fatalf("the dead job's Requeue says %v", requeue)
	}
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, "", 200, "")
	a.claim()
	sup.do("POST", "/supervisor/jobs/"+id+"/requeue", requeue)
	if j := a.expect("GET", "/api/v1/jobs/"+id, a.super, "", 200, ""); j["state"] != "reserved" || sup.status != 303 {
		t.Fatalf("a Requeue shown for a dead job, pressed after it was claimed: %d, job %v", sup.status, j["state"])
	}
	sup.do("GET", "/jobs/"+id, nil)
	if !strings.Contains(sup.body, "Nothing was done: the job changed since the page showed it.") {
		t.Fatal("the page does not say that nothing was done")
	}

	// Force release, shown for a holder who gave the job back; another
	// holds it now.
	release := shownAs(t, sup.body, id, "requeue")
	if release.Get("state") != "reserved" || release.Get("holder") != a.opName {
		t.Fatalf("the held job's Force release says %v", release)
	}
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, "", 200, "")
	_, peer := a.newUser(users.Operator, a.queue)
	a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", peer, "", 200, "")
	sup.do("POST", "/supervisor/jobs/"+id+"/requeue", release)
	if j := a.expect("GET", "/api/v1/jobs/"+id, a.super, "", 200, ""); j["state"] != "reserved" || j["reserved_by"] == a.opName {
		t.Fatalf("a Force release shown for %s, pressed after another claimed the job: job %v by %v", a.opName, j["state"], j["reserved_by"])
	}

	// Cancel, shown for a waiting job that was claimed since.
	waiting := a.enqueue("waiting")
	sup.do("GET", "/jobs/"+waiting, nil)
	cancel := shownAs(t, sup.body, waiting, "cancel")
	a.claim()
	sup.do("POST", "/supervisor/jobs/"+waiting+"/cancel", cancel)
	if j := a.expect("GET", "/api/v1/jobs/"+waiting, a.super, "", 200, ""); j["state"] != "reserved" {
		t.Fatalf("a Cancel shown for a waiting job canceled the reservation made since: %v", j["state"])
	}
	// As shown, it acts.
	sup.do("GET", "/jobs/"+waiting, nil)
	sup.do("POST", "/supervisor/jobs/"+waiting+"/cancel", shownAs(t, sup.body, waiting, "cancel"))
	if j := a.expect("GET", "/api/v1/jobs/"+waiting, a.super, "", 200, ""); j["state"] != "canceled" {
		t.Fatalf("a Cancel of the job as it is: %v", j["state"])
	}

	// Cancel selected, from the list of waiting jobs: one claimed since
	// stays with its holder.
	ticked := a.enqueue("ticked")
	a.claim()
	sup.do("POST", "/supervisor/queues/"+a.queue+"/cancel-selected", url.Values{"_csrf": {sup.csrf}, "state": {"ready"}, "id": {ticked}})
	if j := a.expect("GET", "/api/v1/jobs/"+ticked, a.super, "", 200, ""); j["state"] != "reserved" {
		t.Fatalf("Cancel selected from the waiting list canceled a reservation made since: %v", j["state"])
	}
}
