package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// A supervisor's action on a job goes back to the page it came from only
// if that page is claimdesk's own.
func TestSupervisorActionsRedirectOnSite(t *testing.T) {
	a := newApp(t)
	_, sup := a.person(users.Supervisor)
	sup.do("GET", "/supervisor", nil)
	for _, tc := range []struct {
		referer, want string
	}{
		{"", "/supervisor"},
		{"http://example.test/supervisor/queues/" + a.queue + "?state=dead", "/supervisor/queues/" + a.queue + "?state=dead"},
		{"HTTP://Example.Test/jobs/x", "/jobs/x"},
		{"/supervisor/batches", "/supervisor/batches"},
		{"https://evil.example/supervisor", "/supervisor"},
		{"http://evil.example/", "/supervisor"},
		{"//evil.example/x", "/supervisor"},
		{"//evil.example/supervisor", "/supervisor"},
		{"/\\evil.example", "/supervisor"},
		{"/\\evil.example/supervisor", "/supervisor"},
		{"/\t/evil.example/supervisor", "/supervisor"},
		{"http://example.test//evil.example/x", "/supervisor"},
		{"http://example.test/\\evil.example", "/supervisor"},
		{"http://example.test.evil.example/supervisor", "/supervisor"},
		{"http://example.test@evil.example/supervisor", "/supervisor"},
		{"http://example.test", "/supervisor"},
		{"https://example.test/supervisor", "/supervisor"}, // another origin: the scheme differs
		{"javascript:alert(1)//supervisor", "/supervisor"},
	} {
		for _, htmx := range []bool{false, true} {
			id := a.enqueue("sent back")
			req, _ := http.NewRequest("POST", a.srv.URL+"/supervisor/jobs/"+id+"/cancel",
				strings.NewReader(url.Values{"_csrf": {sup.csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.referer != "" {
				req.Header.Set("Referer", tc.referer)
			}
			location := "Location"
			if htmx {
				req.Header.Set("HX-Request", "true")
				location = "HX-Redirect"
			}
			res, err := sup.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := res.Header.Get(location); got != tc.want || res.StatusCode >= 400 {
				t.Errorf("Referer %q (htmx %v): %d, %s %q, want %q", tc.referer, htmx, res.StatusCode, location, got, tc.want)
			}
		}
	}
}
