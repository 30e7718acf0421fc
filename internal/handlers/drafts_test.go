package handlers_test

import (
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// The holder saves a draft (PUT /jobs/{id}/draft), fenced by the token;
// a force release keeps it; supervisors and the next holder read it
// (GET /jobs/{id}/drafts); producers and other operators do not.
func TestDraftsAPI(t *testing.T) {
	a := newApp(t)
	id := a.enqueue("draft me")
	_, token := a.claim()
	path := "/api/v1/jobs/" + id + "/draft"

	// Refused, changing nothing.
	a.expect("PUT", path, a.operator, `{"values":{"notes":"x"}}`, 400, "invalid_field")
	a.expect("PUT", path, a.operator, `{"token":"`+token+`"}`, 400, "invalid_field")
	a.expect("PUT", path, a.operator, `{"token":"`+token+`","values":["x"]}`, 400, "invalid_field")
	a.expect("PUT", path, a.operator, `{"token":"`+token+`","values":{"x":1},"extra":1}`, 400, "invalid_json")
	a.expect("PUT", path, a.operator, `{"token":"`+token+`","values":{"x":"`+strings.Repeat("x", 70_000)+`"}}`, 413, "")
	a.expect("PUT", path, a.operator, `{"token":"nope","values":{}}`, 409, "reservation_lost")
	a.expect("PUT", path, a.other, `{"token":"`+token+`","values":{}}`, 403, "")
	a.expect("PUT", "/api/v1/jobs/nope/draft", a.operator, `{"token":"`+token+`","values":{}}`, 404, "")
	if d := a.expect("GET", "/api/v1/jobs/"+id+"/drafts", a.super, "", 200, ""); d["live"] != nil || len(d["kept"].([]any)) != 0 {
		t.Fatalf("refused saves left drafts: %v", d)
	}

	saved := a.expect("PUT", path, a.operator, `{"token":"`+token+`","values":{"notes":"half way","checked":[1,2]}}`, 200, "")
	if saved["saved_at"] == nil {
		t.Fatalf("save answered %v", saved)
	}
	mine := a.expect("GET", "/api/v1/jobs/"+id+"/drafts", a.operator, "", 200, "")
	live, _ := mine["live"].(map[string]any)
	if live == nil || live["by"] != a.opName || live["values"].(map[string]any)["notes"] != "half way" || live["saved_at"] != saved["saved_at"] {
		t.Fatalf("the holder reads %v", mine)
	}
	a.expect("GET", "/api/v1/jobs/"+id+"/drafts", a.producer, "", 403, "forbidden")
	a.expect("GET", "/api/v1/jobs/"+id+"/drafts", a.other, "", 403, "forbidden")
	a.expect("GET", "/api/v1/jobs/nope/drafts", a.super, "", 404, "")

	// Taken back: kept, for the supervisor and the next holder.
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, `{"reason":"needed elsewhere"}`, 200, "")
	a.expect("PUT", path, a.operator, `{"token":"`+token+`","values":{}}`, 409, "reservation_lost")
	_, next := a.newUser(users.Operator, a.queue)
	a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", next, "", 200, "")
	theirs := a.expect("GET", "/api/v1/jobs/"+id+"/drafts", next, "", 200, "")
	kept, _ := theirs["kept"].([]any)
	if theirs["live"] != nil || len(kept) != 1 {
		t.Fatalf("the next holder reads %v", theirs)
	}
	k := kept[0].(map[string]any)
	ended, _ := k["ended"].(map[string]any)
	if k["by"] != a.opName || ended["action"] != "force_released" || ended["by"] != a.nameOf(a.super) || ended["at"] == nil {
		t.Fatalf("kept draft %v", k)
	}
	// The one it was taken from no longer holds it.
	a.expect("GET", "/api/v1/jobs/"+id+"/drafts", a.operator, "", 403, "")
	h := a.expect("GET", "/api/v1/jobs/"+id+"/history", a.super, "", 200, "")["history"].([]any)
	drafted := 0
	for _, e := range h {
		if e.(map[string]any)["action"] == "drafted" {
			drafted++
		}
	}
	if drafted != 1 {
		t.Fatalf("history has %d drafted entries, want 1: %v", drafted, h)
	}
}
