package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

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

// Through the API: create (a taken name refused), change, disable and
// enable, tokens made, listed and revoked.
func TestPeopleAPI(t *testing.T) {
	a := newApp(t)
	name := "dora" + a.queue
	body := `{"name":"` + name + `","role":"operator","queues":["` + a.queue + `"],"password":"dora-password"}`
	got := a.expect("POST", "/api/v1/users", a.super, body, 201, "")
	if got["role"] != "operator" || got["disabled"] != false || got["password"] != nil {
		t.Fatalf("created %v", got)
	}
	a.expect("POST", "/api/v1/users", a.super, `{"name":"`+name+`","role":"supervisor","password":"other-password"}`, 409, "user_exists")
	a.expect("POST", "/api/v1/users", a.super, `{"name":"Bad Name","role":"operator","password":"long-enough"}`, 400, "invalid_field")
	a.expect("POST", "/api/v1/users", a.super, `{"name":"`+name+`x","role":"operator","password":"short"}`, 400, "invalid_field")
	a.expect("POST", "/api/v1/users", a.super, `{"name":"`+name+`y","role":"operator","queues":["a,b"],"password":"long-enough"}`, 400, "invalid_field")
	if got := a.expect("GET", "/api/v1/users/"+name, a.super, "", 200, ""); got["role"] != "operator" {
		t.Fatalf("after the refused create: %v", got)
	}
	list := a.expect("GET", "/api/v1/users", a.super, "", 200, "")
	if !strings.Contains(mustJSON(list), `"name":"`+name+`"`) {
		t.Fatalf("users = %v", list)
	}

	// A token made for dora works as dora; listed without the token; revoked, it stops.
	made := a.expect("POST", "/api/v1/users/"+name+"/tokens", a.super, "", 201, "")
	token, id := made["token"].(string), made["id"].(string)
	a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", token, "", 204, "")
	tokens := a.expect("GET", "/api/v1/users/"+name+"/tokens", a.super, "", 200, "")
	if s := mustJSON(tokens); !strings.Contains(s, id) || strings.Contains(s, token) {
		t.Fatalf("tokens = %s", s)
	}
	a.expect("DELETE", "/api/v1/users/"+a.opName+"/tokens/"+id, a.super, "", 404, "token_not_found")
	if code, _ := a.call("DELETE", "/api/v1/users/"+name+"/tokens/"+id, a.super, ""); code != 204 {
		t.Fatalf("revoke: %d", code)
	}
	waitStatus(a, token, 401)

	// Changes: queues taken away, then disabled (tokens stop), enabled.
	other := a.expect("POST", "/api/v1/users/"+name+"/tokens", a.super, "", 201, "")["token"].(string)
	if got := a.expect("PATCH", "/api/v1/users/"+name, a.super, `{"queues":[]}`, 200, ""); len(got["queues"].([]any)) != 0 || got["role"] != "operator" {
		t.Fatalf("patched %v", got)
	}
	a.expect("PATCH", "/api/v1/users/"+name, a.super, `{"role":"wizard"}`, 400, "invalid_field")
	a.expect("PATCH", "/api/v1/users/nobody-"+name, a.super, `{"queues":[]}`, 404, "user_not_found")
	if got := a.expect("POST", "/api/v1/users/"+name+"/disable", a.super, "", 200, ""); got["disabled"] != true {
		t.Fatalf("disable answered %v", got)
	}
	waitStatus(a, other, 401)
	a.expect("POST", "/api/v1/users/"+name+"/enable", a.super, "", 200, "")
	waitStatus(a, other, 200)

	// A supervisor may neither disable themselves nor change their own role.
	super := a.nameOf(a.super)
	a.expect("POST", "/api/v1/users/"+super+"/disable", a.super, "", 403, "forbidden")
	a.expect("PATCH", "/api/v1/users/"+super, a.super, `{"role":"operator"}`, 403, "forbidden")
	if u, _ := a.users.Reload(context.Background(), super); u.Disabled || u.Role != users.Supervisor {
		t.Fatalf("the supervisor changed themselves: %+v", u)
	}
}

// waitStatus polls GET /api/v1/queues with the token until it answers the
// status (a change to a token applies within the 2 s cache).
func waitStatus(a *app, token string, status int) {
	a.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := a.call("GET", "/api/v1/queues", token, "")
		if code == status {
			return
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("GET /api/v1/queues with the token: %d, want %d within 5 s", code, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// In the browser: a supervisor adds an operator with a grant, who can log
// in and work there; refusals are in words and keep what was typed; a new
// token is shown once; disabling ends the person's session.
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

	// Erin logs in and claims from the queue granted to her.
	a.enqueue("for erin")
	erin := a.browser()
	if erin.login(name, "erin-password"); erin.status != http.StatusSeeOther {
		t.Fatalf("erin's login: %d", erin.status)
	}
	erin.do("GET", "/", nil)
	erin.do("POST", "/queues/"+a.queue+"/claim", url.Values{"_csrf": {erin.csrf}})
	if !strings.HasPrefix(erin.body, "/jobs/") {
		t.Fatalf("erin's claim went to %s", erin.body)
	}

	// A token, shown once.
	b.do("POST", "/supervisor/people/"+name+"/tokens", url.Values{"_csrf": {b.csrf}})
	if b.status != 201 || !strings.Contains(b.body, "cdt_") || b.got.Get("Cache-Control") != "no-store" {
		t.Fatalf("new token page: %d %q", b.status, b.got.Get("Cache-Control"))
	}
	b.do("GET", "/supervisor/people/"+name, nil)
	if strings.Contains(b.body, "cdt_") || !strings.Contains(b.body, `data-testid="tokens"`) {
		t.Fatal("the token is shown again, or not listed")
	}

	// Disabled: her page goes to the login.
	b.do("POST", "/supervisor/people/"+name+"/disable", url.Values{"_csrf": {b.csrf}})
	if b.status != http.StatusSeeOther {
		t.Fatalf("disable: %d", b.status)
	}
	erin.do("GET", "/", nil)
	if erin.status != http.StatusSeeOther || !strings.HasPrefix(erin.body, "/login") {
		t.Fatalf("a disabled operator's page: %d %s", erin.status, erin.body)
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
