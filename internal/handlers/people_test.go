package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// Only supervisors manage people.
func TestPeopleAreForSupervisors(t *testing.T) {
	a := newApp(t)
	for _, token := range []string{a.operator, a.producer} {
		a.expect("GET", "/api/v1/users", token, "", 403, "forbidden")
		a.expect("POST", "/api/v1/users", token, `{"name":"x","role":"operator","password":"long-enough"}`, 403, "forbidden")
		a.expect("POST", "/api/v1/users/"+a.opName+"/disable", token, "", 403, "forbidden")
		a.expect("POST", "/api/v1/users/"+a.opName+"/tokens", token, "", 403, "forbidden")
	}
	_, b := a.person(users.Operator, a.queue)
	if b.do("GET", "/supervisor/people", nil); b.status != 403 {
		t.Fatalf("an operator on the people page: %d, want 403", b.status)
	}
}

// Through the API: create, read, list, change, disable and enable people,
// make, list and revoke their tokens; each answer as docs/api.md says,
// each refusal with its code.
func TestPeopleAPI(t *testing.T) {
	a := newApp(t)
	name := "dora" + a.queue
	body := `{"name":"` + name + `","role":"operator","queues":["` + a.queue + `"],"password":"dora-password"}`
	got := a.expect("POST", "/api/v1/users", a.super, body, 201, "")
	if _, ok := got["password"]; got["name"] != name || got["role"] != "operator" || mustJSON(got["queues"]) != `["`+a.queue+`"]` || got["disabled"] != false || ok {
		t.Fatalf("created %v", got)
	}
	a.expect("POST", "/api/v1/users", a.super, `{"name":"`+name+`","role":"supervisor","password":"other-password"}`, 409, "user_exists")
	a.expect("POST", "/api/v1/users", a.super, `{"name":"Bad Name","role":"operator","password":"long-enough"}`, 400, "invalid_field")
	a.expect("POST", "/api/v1/users", a.super, `{"name":"`+name+`x","role":"operator","password":"short"}`, 400, "invalid_field")
	a.expect("POST", "/api/v1/users", a.super, `{"name":"`+name+`y","role":"operator","queues":["a,b"],"password":"long-enough"}`, 400, "invalid_field")
	if got := a.expect("GET", "/api/v1/users/"+name, a.super, "", 200, ""); got["name"] != name || got["role"] != "operator" {
		t.Fatalf("read %v", got)
	}
	a.expect("GET", "/api/v1/users/nobody-"+name, a.super, "", 404, "user_not_found")
	list := a.expect("GET", "/api/v1/users", a.super, "", 200, "")
	if !strings.Contains(mustJSON(list["users"]), `{"disabled":false,"name":"`+name+`","queues":["`+a.queue+`"],"role":"operator","skills":[],"training":false}`) {
		t.Fatalf("users = %v", list)
	}

	// A token, shown once; listed without it; revoked.
	made := a.expect("POST", "/api/v1/users/"+name+"/tokens", a.super, "", 201, "")
	token, id := made["token"].(string), made["id"].(string)
	if !strings.HasPrefix(token, "cdt_") || id == "" {
		t.Fatalf("token made: %v", made)
	}
	tokens := a.expect("GET", "/api/v1/users/"+name+"/tokens", a.super, "", 200, "")
	if ts := tokens["tokens"].([]any); len(ts) != 1 || ts[0].(map[string]any)["id"] != id || ts[0].(map[string]any)["created_at"] == nil || strings.Contains(mustJSON(tokens), token) {
		t.Fatalf("tokens = %v", tokens)
	}
	a.expect("DELETE", "/api/v1/users/"+a.opName+"/tokens/"+id, a.super, "", 404, "token_not_found")
	if code, body := a.call("DELETE", "/api/v1/users/"+name+"/tokens/"+id, a.super, ""); code != 204 || body != nil {
		t.Fatalf("revoke: %d %v", code, body)
	}

	// Changes: queues taken away, then disabled and enabled.
	if got := a.expect("PATCH", "/api/v1/users/"+name, a.super, `{"queues":[]}`, 200, ""); mustJSON(got["queues"]) != `[]` || got["role"] != "operator" {
		t.Fatalf("patched %v", got)
	}
	a.expect("PATCH", "/api/v1/users/"+name, a.super, `{"role":"wizard"}`, 400, "invalid_field")
	a.expect("PATCH", "/api/v1/users/nobody-"+name, a.super, `{"queues":[]}`, 404, "user_not_found")
	if got := a.expect("POST", "/api/v1/users/"+name+"/disable", a.super, "", 200, ""); got["name"] != name || got["disabled"] != true {
		t.Fatalf("disable answered %v", got)
	}
	if got := a.expect("POST", "/api/v1/users/"+name+"/enable", a.super, "", 200, ""); got["name"] != name || got["disabled"] != false {
		t.Fatalf("enable answered %v", got)
	}
	a.expect("POST", "/api/v1/users/nobody-"+name+"/enable", a.super, "", 404, "user_not_found")
	// The desk's refusals: a supervisor may neither disable themselves nor
	// change their own role.
	super := a.nameOf(a.super)
	a.expect("POST", "/api/v1/users/"+super+"/disable", a.super, "", 403, "forbidden")
	a.expect("PATCH", "/api/v1/users/"+super, a.super, `{"role":"operator"}`, 403, "forbidden")
}

// In the browser: a supervisor adds an operator with a grant; refusals
// are in words and keep what was typed; a new token is shown once; a
// person disabled is told so.
func TestPeoplePages(t *testing.T) {
	a := newApp(t)
	sup, b := a.person(users.Supervisor)
	b.do("GET", "/supervisor/people", nil)
	if b.status != 200 || !strings.Contains(b.body, `data-testid="person-`+a.opName+`"`) {
		t.Fatalf("people page: %d", b.status)
	}
	name := "erin" + a.queue
	add := func(n, password string) {
		b.do("POST", "/supervisor/people", url.Values{"_csrf": {b.csrf}, "name": {n}, "role": {"operator"},
			"queues": {a.queue}, "password": {password}})
	}
	add(name, "short")
	if b.status != 400 || !strings.Contains(b.body, "Password must be 8 to 72 characters (72 bytes at most") || !strings.Contains(b.body, `value="`+name+`"`) ||
		!strings.Contains(b.body, `value="`+a.queue+`" checked`) {
		t.Fatalf("add with a short password: %d\n%s", b.status, b.body)
	}
	add(a.opName, "long-enough-password")
	if b.status != 409 || !strings.Contains(b.body, "Someone is already named "+a.opName) {
		t.Fatalf("add with a taken name: %d\n%s", b.status, b.body)
	}
	add(name, "erin-password")
	if b.status != http.StatusSeeOther || b.body != "/supervisor/people/"+name {
		t.Fatalf("add: %d %s", b.status, b.body)
	}

	if u, err := a.users.Reload(context.Background(), name); err != nil || u.Role != users.Operator || !slices.Equal(u.Queues, []string{a.queue}) {
		t.Fatalf("added %+v, %v; want an operator of %s", u, err, a.queue)
	}

	// A token: made by a POST that sends the browser to the person's page
	// (no token in the URL), which shows it once, with a Copy button;
	// reloading that page makes none and shows none.
	b.do("POST", "/supervisor/people/"+name+"/tokens", url.Values{"_csrf": {b.csrf}})
	if b.status != http.StatusSeeOther || b.body != "/supervisor/people/"+name {
		t.Fatalf("new token: %d %s, want a redirect to the person's page", b.status, b.body)
	}
	b.do("GET", "/supervisor/people/"+name, nil)
	if b.status != 200 || !strings.Contains(b.body, `data-testid="copy-token"`) || b.got.Get("Cache-Control") != "no-store" {
		t.Fatalf("the page after a new token: %d %q\n%s", b.status, b.got.Get("Cache-Control"), b.body)
	}
	token := regexp.MustCompile(`cdt_[A-Za-z0-9_-]+`).FindString(b.body)
	if ts, err := a.users.Tokens(context.Background(), name); err != nil || len(ts) != 1 || token == "" || ts[0].ID != users.TokenID(token) {
		t.Fatalf("the page shows %q; the person's tokens are %+v, %v", token, ts, err)
	}
	b.do("GET", "/supervisor/people/"+name, nil)
	if strings.Contains(b.body, "cdt_") || !strings.Contains(b.body, `data-testid="tokens"`) {
		t.Fatal("the token is shown again, or not listed")
	}
	if ts, err := a.users.Tokens(context.Background(), name); err != nil || len(ts) != 1 {
		t.Fatalf("after a reload the person has %d tokens, %v; want 1", len(ts), err)
	}
	// A token made for one person waits for that person's page alone.
	b.do("POST", "/supervisor/people/"+name+"/tokens", url.Values{"_csrf": {b.csrf}})
	if b.do("GET", "/supervisor/people/"+sup, nil); strings.Contains(b.body, "cdt_") {
		t.Fatal("another person's page shows the token")
	}
	if b.do("GET", "/supervisor/people/"+name, nil); !strings.Contains(b.body, "cdt_") {
		t.Fatal("the person's page, after another's, does not show their new token")
	}

	b.do("POST", "/supervisor/people/"+name+"/disable", url.Values{"_csrf": {b.csrf}})
	if b.status != http.StatusSeeOther || b.body != "/supervisor/people/"+name {
		t.Fatalf("disable: %d %s", b.status, b.body)
	}
	b.do("GET", b.body, nil)
	if !strings.Contains(b.body, "Disabled "+name+": their sessions ended") {
		t.Fatal("the person's page does not say they were disabled")
	}
	if u, err := a.users.Reload(context.Background(), name); err != nil || !u.Disabled {
		t.Fatalf("disabled %+v, %v", u, err)
	}
	// The supervisor's own page offers no disable, and refuses one.
	b.do("GET", "/supervisor/people/"+sup, nil)
	if b.status != 200 || strings.Contains(b.body, `data-testid="disable"`) {
		t.Fatalf("own page: %d, offers a disable", b.status)
	}
	b.do("POST", "/supervisor/people/"+sup+"/disable", url.Values{"_csrf": {b.csrf}})
	if b.status != 403 {
		t.Fatalf("disabling oneself: %d, want 403", b.status)
	}
}

// mustJSON encodes v, for looking into an answer.
func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// The People page's grant says every queue as its own choice, a
// producer's alone: an empty grant never means every queue unasked, and
// an operator's none ticked is none.
func TestPeoplePagesGrant(t *testing.T) {
	a := newApp(t)
	_, b := a.person(users.Supervisor)
	b.do("GET", "/supervisor/people", nil)
	stored := func(name string) users.User {
		t.Helper()
		u, err := a.users.Reload(context.Background(), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return u
	}
	form := func(name, role, grant string, queues ...string) url.Values {
		return url.Values{"_csrf": {b.csrf}, "name": {name}, "role": {role}, "grant": {grant}, "queues": queues,
			"password": {"long-enough-password"}}
	}
	for _, tc := range []struct {
		name, role, grant string
		queues            []string
		status            int
		problem           string
		want              []string
	}{
		{"bot-all", "producer", "all", []string{a.queue}, http.StatusSeeOther, "", nil},
		{"bot-some", "producer", "some", []string{a.queue}, http.StatusSeeOther, "", []string{a.queue}},
		{"bot-none", "producer", "some", nil, 400, "Tick the queues they may fill, or choose All queues.", nil},
		{"op-all", "operator", "all", nil, 400, "All queues is for producers. Tick the queues an operator works.", nil},
		{"op-none", "operator", "some", nil, http.StatusSeeOther, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.do("POST", "/supervisor/people", form(tc.name, tc.role, tc.grant, tc.queues...))
			if b.status != tc.status || (tc.problem != "" && !strings.Contains(b.body, tc.problem)) {
				t.Fatalf("add: %d, want %d %q\n%s", b.status, tc.status, tc.problem, b.body)
			}
			if tc.status != http.StatusSeeOther {
				if _, err := a.users.Reload(context.Background(), tc.name); !errors.Is(err, users.ErrNotFound) {
					t.Fatalf("a refused add stored them: %v", err)
				}
				return
			}
			if u := stored(tc.name); !slices.Equal(u.Queues, tc.want) {
				t.Fatalf("stored queues %q, want %q", u.Queues, tc.want)
			}
		})
	}
	b.do("GET", "/supervisor/people", nil)
	for name, want := range map[string]string{"bot-all": "All queues", "op-none": "None"} {
		if !regexp.MustCompile(`data-testid="person-` + name + `"[^§]*?data-label="Queues">` + want + `<`).MatchString(b.body) {
			t.Errorf("the list says %s's queues other than %q", name, want)
		}
	}
	// The person's page offers their grant as it is, and a change keeps to
	// the same rules.
	b.do("GET", "/supervisor/people/bot-all", nil)
	if !strings.Contains(b.body, `value="all" checked`) {
		t.Fatal("a producer of every queue: All queues is not chosen")
	}
	b.do("POST", "/supervisor/people/bot-all", url.Values{"_csrf": {b.csrf}, "role": {"producer"}, "grant": {"some"}})
	if b.status != 400 || !strings.Contains(b.body, "Tick the queues they may fill") || stored("bot-all").Queues != nil {
		t.Fatalf("a producer's grant of none ticked: %d, stored %q", b.status, stored("bot-all").Queues)
	}
	b.do("POST", "/supervisor/people/bot-all", url.Values{"_csrf": {b.csrf}, "role": {"producer"}, "grant": {"some"}, "queues": {a.queue}})
	if b.status != http.StatusSeeOther || !slices.Equal(stored("bot-all").Queues, []string{a.queue}) {
		t.Fatalf("a producer's grant of one queue: %d, stored %q", b.status, stored("bot-all").Queues)
	}
}
