package handlers_test

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"claimdesk/internal/handlers"
	"claimdesk/internal/users"
)

// get fetches path with the browser's cookies (and the extra header, if
// any) and returns the answer, its body read.
func (b *browser) get(path string, header http.Header) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.base+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res, string(raw)
}

// directive returns the named directive of a Content-Security-Policy.
func directive(csp, name string) string {
	for _, d := range strings.Split(csp, ";") {
		if d = strings.TrimSpace(d); strings.HasPrefix(d, name+" ") {
			return d
		}
	}
	return ""
}

func TestSecurityHeadersFollowThePublicURL(t *testing.T) {
	a := newApp(t)
	secure := a.serverWith(a.rdb, func(cfg *handlers.Config, _ *http.Server) { cfg.PublicURL = "https://claimdesk.example" })
	for _, tc := range []struct {
		name, base, connect, hsts string
	}{
		{"http", a.srv.URL, "connect-src 'self' ws://example.test", ""},
		{"https", secure.URL, "connect-src 'self' wss://claimdesk.example", "max-age=31536000; includeSubDomains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/login", "/api/v1/queues", "/no-such-page"} {
				res, err := http.Get(tc.base + path)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if got := directive(res.Header.Get("Content-Security-Policy"), "connect-src"); got != tc.connect {
					t.Errorf("%s: %q, want %q", path, got, tc.connect)
				}
				if got := res.Header.Values("Strict-Transport-Security"); strings.Join(got, ",") != tc.hsts {
					t.Errorf("%s: Strict-Transport-Security %q, want %q", path, got, tc.hsts)
				}
			}
		})
	}
}

// noStore reports whether the answer forbids every cache to keep it.
func noStore(h http.Header) bool {
	for _, v := range h.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			if strings.TrimSpace(d) == "no-store" {
				return true
			}
		}
	}
	return false
}

func TestJobDataIsNeverCached(t *testing.T) {
	a := newApp(t)
	op := a.browser()
	op.login(a.opName, "password-"+a.opName)
	id := a.enqueue("kept out of caches")
	op.do("GET", "/", nil)
	if op.do("POST", "/claim", url.Values{"_csrf": {op.csrf}}); op.body != "/jobs/"+id {
		t.Fatalf("claim went to %q", op.body)
	}
	_, sup := a.person(users.Supervisor)

	for _, tc := range []struct {
		who  *browser
		path string
		show string // what the answer must show, so that it is the page meant
	}{
		{op, "/", id},
		{op, "/fragments/home", id},
		{op, "/jobs/" + id, `name="token"`},
		{sup, "/supervisor", id},
		{sup, "/supervisor/fragments/reservations", id},
		{sup, "/supervisor/queues/" + a.queue + "?state=reserved", id},
		{sup, "/jobs/" + id, id},
	} {
		res, body := tc.who.get(tc.path, http.Header{"HX-Request": {"true"}})
		if res.StatusCode != http.StatusOK || !strings.Contains(body, tc.show) {
			t.Fatalf("GET %s: %d, or it does not show %s", tc.path, res.StatusCode, tc.show)
		}
		if !noStore(res.Header) {
			t.Errorf("GET %s: Cache-Control %q, want no-store", tc.path, res.Header.Values("Cache-Control"))
		}
	}

	other := a.enqueue("claimed over the API")
	for _, tc := range []struct {
		method, path, token string
	}{
		{"GET", "/api/v1/jobs/" + id, a.producer},
		{"GET", "/api/v1/reservations", a.super},
		{"GET", "/api/v1/jobs?queue=" + a.queue + "&state=reserved", a.super},
		{"POST", "/api/v1/queues/" + a.queue + "/claim", a.operator},
	} {
		req, _ := http.NewRequest(tc.method, a.srv.URL+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", tc.method, tc.path, res.StatusCode)
		}
		if !noStore(res.Header) {
			t.Errorf("%s %s: Cache-Control %q, want no-store", tc.method, tc.path, res.Header.Values("Cache-Control"))
		}
	}
	if a.expect("GET", "/api/v1/jobs/"+other, a.producer, "", 200, "")["state"] != "reserved" {
		t.Fatal("the API claim did not take the second job")
	}

	// The assets, and only they, may be kept a while.
	res, _ := op.get("/static/app.css", nil)
	if res.StatusCode != http.StatusOK || noStore(res.Header) || res.Header.Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("/static/app.css: %d, Cache-Control %q", res.StatusCode, res.Header.Values("Cache-Control"))
	}
}

func TestStaticServesTheAssetsAlone(t *testing.T) {
	a := newApp(t)
	b := a.browser()
	// htmx is in the build only once make build has copied it in.
	htmx := http.StatusNotFound
	if _, err := os.Stat("../../static/vendor/htmx.min.js"); err == nil {
		htmx = http.StatusOK
	}
	for _, tc := range []struct {
		path   string
		status int
		kind   string
	}{
		{"/static/app.css", 200, "text/css"},
		{"/static/app.js", 200, "text/javascript"},
		{"/static/favicon.svg", 200, "image/svg+xml"},
		{"/static/vendor/htmx.min.js", htmx, ""},
		{"/static/", 404, ""},
		{"/static", 404, ""},
		{"/static/vendor/", 404, ""},
		{"/static/vendor", 404, ""},
		{"/static/embed.go", 404, ""},
		{"/static/./embed.go", 404, ""},
		{"/static/vendor/../embed.go", 404, ""},
		{"/static/%2e%2e/static/embed.go", 404, ""},
		{"/static/app.css/", 404, ""},
		{"/static/index.html", 404, ""},
	} {
		res, body := b.get(tc.path, nil)
		if res.StatusCode != tc.status || !strings.HasPrefix(res.Header.Get("Content-Type"), tc.kind) {
			t.Errorf("%s: %d %s, want %d %s", tc.path, res.StatusCode, res.Header.Get("Content-Type"), tc.status, tc.kind)
		}
		if regexp.MustCompile(`(?i)<a href="[^"]*\.(go|css|js|svg)"|package static`).MatchString(body) {
			t.Errorf("%s shows a listing or the source: %.200s", tc.path, body)
		}
	}
}
