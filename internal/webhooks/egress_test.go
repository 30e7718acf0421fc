package webhooks

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

// networks parses CIDRs.
func networks(t *testing.T, cidrs ...string) []*net.IPNet {
	t.Helper()
	var nets []*net.IPNet
	for _, c := range cidrs {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			t.Fatal(err)
		}
		nets = append(nets, n)
	}
	return nets
}

// loopback allows the loopback networks, where the tests' endpoints
// listen.
func loopback(t *testing.T) []*net.IPNet {
	t.Helper()
	return networks(t, "127.0.0.0/8", "::1/128")
}

// endpoint is a webhook endpoint on a loopback port, answering with
// handle, and counting the requests it gets.
type endpoint struct {
	*httptest.Server
	hits atomic.Int64
}

func newEndpoint(t *testing.T, handle http.HandlerFunc) *endpoint {
	t.Helper()
	ep := &endpoint{}
	ep.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep.hits.Add(1)
		handle(w, r)
	}))
	t.Cleanup(ep.Close)
	return ep
}

// refused fails t unless err is a *URLError whose reason says says.
func refused(t *testing.T, what string, err error, says string) {
	t.Helper()
	var u *URLError
	if !errors.As(err, &u) || !strings.Contains(u.Reason, says) {
		t.Errorf("%s: got %v, want a *URLError saying %q", what, err, says)
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url   string
		allow []string
	}{
		{"https://1.1.1.1/hooks/claimdesk?token=x", nil},
		{"https://[2606:4700:4700::1111]:8443/hooks", nil},
		{"https://[::ffff:8.8.8.8]/", nil},
		{"https://[64:ff9b::808:808]/", nil},
		{"HTTPS://1.1.1.1/", nil},
		{"http://127.0.0.1:8080/hooks", []string{"127.0.0.0/8"}},
		{"http://10.1.2.3/hooks", []string{"10.0.0.0/8"}},
		{"https://169.254.169.254/", []string{"169.254.169.254/32"}},
		{"http://localhost:8080/hooks", []string{"127.0.0.0/8", "::1/128"}},
		{"https://1.1.1.1/" + strings.Repeat("a", 2048-len("https://1.1.1.1/")), nil},
	} {
		e := &Egress{Allow: networks(t, tc.allow...)}
		u, err := e.CheckURL(t.Context(), tc.url)
		if err != nil || u.String() != strings.Replace(tc.url, "HTTPS", "https", 1) {
			t.Errorf("CheckURL(%q) allowing %v = %v, %v; want it taken", tc.url, tc.allow, u, err)
		}
	}
}

func TestCheckURLRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url   string
		allow []string
		says  string
	}{
		{"", nil, "not an absolute http or https URL"},
		{"/hooks", nil, "not an absolute http or https URL"},
		{"ftp://1.1.1.1/hooks", nil, "not an absolute http or https URL"},
		{"https:1.1.1.1/hooks", nil, "not an absolute http or https URL"},
		{"https://1.1.1.1/%zz", nil, "not an absolute http or https URL"},
		{"https://user:pass@1.1.1.1/", nil, "user name or password"},
		{"https://1.1.1.1/hooks#top", nil, "fragment"},
		{"https://1.1.1.1/hooks#", nil, "fragment"},
		{"https:///hooks", nil, "no host"},
		{"https://1.1.1.1:0/", nil, "port"},
		{"https://1.1.1.1:65536/", nil, "port"},
		{"https://1.1.1.1/" + strings.Repeat("a", 2049-len("https://1.1.1.1/")), nil, "longer than 2048 bytes"},
		// Plain http only to the allowed networks.
		{"http://1.1.1.1/hooks", nil, "plain http"},
		{"http://1.1.1.1/hooks", []string{"10.0.0.0/8"}, "plain http"},
		{"http://localhost/hooks", []string{"::1/128"}, "localhost resolves to 127.0.0.1, a loopback address"},
		// No address that is not public.
		{"https://localhost/hooks", nil, "localhost resolves to "},
		{"https://127.0.0.1/", nil, "127.0.0.1 is a loopback address: webhooks go only to public addresses"},
		{"https://127.8.9.10/", []string{"127.0.0.1/32"}, "a loopback address"},
		{"https://[::1]/", nil, "a loopback address"},
		{"https://[::ffff:127.0.0.1]/", nil, "127.0.0.1 is a loopback address"},
		{"https://0.0.0.0/", nil, "the unspecified address"},
		{"https://[::]/", nil, "the unspecified address"},
		{"https://10.0.0.1/", nil, "a private address"},
		{"https://172.16.5.4/", nil, "a private address"},
		{"https://192.168.1.1/", nil, "a private address"},
		{"https://[fd00::1]/", nil, "a private address"},
		{"https://169.254.169.254/latest/meta-data/", nil, "a link-local address"},
		{"https://[fe80::1%25eth0]/", nil, "a link-local address"},
		{"https://224.0.0.1/", nil, "a multicast address"},
		{"https://[ff02::1]/", nil, "a multicast address"},
		{"https://0.1.2.3/", nil, "an address of this network (0.0.0.0/8)"},
		{"https://100.64.0.1/", nil, "a carrier-grade NAT address (100.64.0.0/10)"},
		{"https://192.0.0.8/", nil, "an IETF protocol address (192.0.0.0/24)"},
		{"https://192.0.2.1/", nil, "a documentation address (192.0.2.0/24)"},
		{"https://198.18.0.1/", nil, "a benchmarking address (198.18.0.0/15)"},
		{"https://203.0.113.9/", nil, "a documentation address (203.0.113.0/24)"},
		{"https://255.255.255.255/", nil, "a reserved address (240.0.0.0/4)"},
		{"https://[2001:db8::1]/", nil, "a documentation address (2001:db8::/32)"},
		{"https://[2001::1]/", nil, "an IETF protocol address (2001::/23)"},
		{"https://[2002:7f00:1::1]/", nil, "a 6to4 address (2002::/16)"},
		{"https://[64:ff9b::7f00:1]/", nil, "the NAT64 address of 127.0.0.1, a loopback address"},
		{"https://[64:ff9b::a9fe:a9fe]/", nil, "the NAT64 address of 169.254.169.254, a link-local address"},
		{"https://[::127.0.0.1]/", nil, "a reserved address"},
		{"https://[4000::1]/", nil, "a reserved address"},
	} {
		e := &Egress{Allow: networks(t, tc.allow...)}
		u, err := e.CheckURL(t.Context(), tc.url)
		if u != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", tc.url, u)
		}
		refused(t, "CheckURL("+tc.url+")", err, tc.says)
	}
}

func TestPost(t *testing.T) {
	t.Parallel()
	type got struct {
		method, path string
		header       http.Header
		body         string
	}
	seen := make(chan got, 1)
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- got{r.Method, r.URL.RequestURI(), r.Header, string(body)}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, "thanks")
	})
	e := &Egress{Allow: loopback(t)}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("webhook-id", "evt_1")
	header.Set("User-Agent", "someone else")
	a := e.Post(t.Context(), ep.URL+"/hooks?x=1", header, []byte(`{"type":"job.completed"}`))
	if a.Err != nil || a.Status != http.StatusAccepted || a.Body != "thanks" || a.RetryAfter != 0 || a.Took <= 0 {
		t.Fatalf("Post = %+v, want a 202 saying thanks", a)
	}
	g := <-seen
	if g.method != http.MethodPost || g.path != "/hooks?x=1" || g.body != `{"type":"job.completed"}` ||
		g.header.Get("Content-Type") != "application/json" || g.header.Get("Webhook-Id") != "evt_1" ||
		g.header.Get("User-Agent") != "claimdesk-webhooks/1" {
		t.Errorf("the endpoint got %+v", g)
	}
	if header.Get("User-Agent") != "someone else" {
		t.Errorf("Post changed the caller's header: %v", header)
	}
}

// Post connects only to the addresses CheckURL takes, judged on the address
// it dials, so a URL that never went through CheckURL, or whose name now
// resolves elsewhere, is refused before anything is sent.
func TestPostRefuses(t *testing.T) {
	t.Parallel()
	ep := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request) {})
	port := ep.Listener.Addr().(*net.TCPAddr).Port
	at := func(scheme, host string) string {
		return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/hooks"
	}
	for _, tc := range []struct {
		name  string
		url   string
		allow []string
		says  string
	}{
		{"a loopback address", ep.URL, nil, "127.0.0.1 is a loopback address"},
		{"a name of a loopback address", at("http", "localhost"), nil, " is a loopback address"},
		{"over https", at("https", "localhost"), nil, " is a loopback address"},
		{"outside the allowed", ep.URL, []string{"10.0.0.0/8"}, "127.0.0.1 is a loopback address"},
		{"plain http to a public address", "http://1.1.1.1:9/hooks", nil, "plain http"},
		{"cloud metadata", "https://169.254.169.254:9/latest/meta-data/", nil, "a link-local address"},
		{"not http", "ftp://1.1.1.1/hooks", nil, "not an absolute http or https URL"},
		{"a user", "https://user:pass@1.1.1.1/", nil, "user name or password"},
	} {
		e := &Egress{Allow: networks(t, tc.allow...)}
		a := e.Post(t.Context(), tc.url, nil, []byte(`{}`))
		if a.Status != 0 {
			t.Errorf("%s: Post(%q) answered %d", tc.name, tc.url, a.Status)
		}
		refused(t, tc.name, a.Err, tc.says)
	}
	if n := ep.hits.Load(); n != 0 {
		t.Errorf("the endpoint got %d requests, want none", n)
	}
}

// A redirect is the answer: Post does not follow it.
func TestPostFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	elsewhere := newEndpoint(t, func(http.ResponseWriter, *http.Request) {})
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+"/hooks", status)
		})
		a := (&Egress{Allow: loopback(t)}).Post(t.Context(), ep.URL, nil, []byte(`{}`))
		if a.Err != nil || a.Status != status {
			t.Errorf("Post to a redirect = %+v, want the %d", a, status)
		}
	}
	if n := elsewhere.hits.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
}

func TestPostRetryAfter(t *testing.T) {
	t.Parallel()
	inAnHour := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		status     int
		retryAfter string
		least      time.Duration
		most       time.Duration
	}{
		{http.StatusTooManyRequests, "120", 2 * time.Minute, 2 * time.Minute},
		{http.StatusServiceUnavailable, " 30 ", 30 * time.Second, 30 * time.Second},
		// An HTTP date counts from now, to the second it is written in.
		{http.StatusServiceUnavailable, inAnHour, time.Hour - 5*time.Second, time.Hour},
		{http.StatusTooManyRequests, "9999999999999999999999", 24 * time.Hour, 24 * time.Hour},
		{http.StatusTooManyRequests, "172800", 24 * time.Hour, 24 * time.Hour},
		{http.StatusTooManyRequests, time.Now().Add(72 * time.Hour).UTC().Format(http.TimeFormat), 24 * time.Hour, 24 * time.Hour},
		{http.StatusTooManyRequests, "Mon, 02 Jan 2006 15:04:05 GMT", 0, 0},
		{http.StatusTooManyRequests, "-5", 0, 0},
		{http.StatusTooManyRequests, "soon", 0, 0},
		{http.StatusTooManyRequests, "", 0, 0},
		// Only a 429 or a 503 asks to wait.
		{http.StatusInternalServerError, "120", 0, 0},
		{http.StatusMovedPermanently, "120", 0, 0},
		{http.StatusOK, "120", 0, 0},
	} {
		ep := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", tc.retryAfter)
			w.WriteHeader(tc.status)
		})
		a := (&Egress{Allow: loopback(t)}).Post(t.Context(), ep.URL, nil, []byte(`{}`))
		if a.Err != nil || a.Status != tc.status || a.RetryAfter < tc.least || a.RetryAfter > tc.most {
			t.Errorf("%d with Retry-After %q: got %+v, want RetryAfter from %v to %v", tc.status, tc.retryAfter, a, tc.least, tc.most)
		}
	}
}

func TestPostKeepsTheStartOfTheBody(t *testing.T) {
	t.Parallel()
	long := "a" + strings.Repeat("é", 40<<10) // the 1024th byte is the first of an é
	for _, tc := range []struct {
		name, body, want string
	}{
		{"short", "ok", "ok"},
		{"empty", "", ""},
		{"cut at a whole character", long, long[:1023]},
		{"not UTF-8", "ab\xffcd\xc3", "ab\ufffdcd"},
		{"replaced near the end", strings.Repeat("x", 1022) + "\xff", strings.Repeat("x", 1022)},
	} {
		ep := newEndpoint(t, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, tc.body)
		})
		a := (&Egress{Allow: loopback(t)}).Post(t.Context(), ep.URL, nil, []byte(`{}`))
		if a.Err != nil || a.Status != http.StatusOK || a.Body != tc.want || !utf8.ValidString(a.Body) || len(a.Body) > 1024 {
			t.Errorf("%s: got %+v, want the body %q", tc.name, a, tc.want)
		}
	}
}

// counter counts what is read of an endless body.
type counter struct{ n int }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n += len(p)
	return len(p), nil
}

func TestReadBodyReadsAtMost64KiB(t *testing.T) {
	t.Parallel()
	var c counter
	body, err := readBody(&c)
	if err != nil || body != strings.Repeat("x", 1024) {
		t.Errorf("readBody = %q, %v; want 1 KiB of it", body, err)
	}
	if c.n > 64<<10 {
		t.Errorf("readBody read %d bytes, want at most %d", c.n, 64<<10)
	}
}

// stall holds a request until its client has gone. It reads the body
// first: until then the server does not watch the connection, and would
// not see it closed.
func stall(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// A delivery that takes longer than the timeout ends with an error, whether
// no answer came or its body did not.
func TestPostTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		handle http.HandlerFunc
	}{
		{"no answer", 0, func(_ http.ResponseWriter, r *http.Request) { stall(r) }},
		{"no body", http.StatusOK, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "a start")
			w.(http.Flusher).Flush()
			stall(r)
		}},
	} {
		ep := newEndpoint(t, tc.handle)
		const timeout = 200 * time.Millisecond
		a := (&Egress{Allow: loopback(t), Timeout: timeout}).Post(t.Context(), ep.URL, nil, []byte(`{}`))
		if !errors.Is(a.Err, context.DeadlineExceeded) || !strings.Contains(a.Err.Error(), "took longer than 200ms") ||
			a.Status != tc.status || a.Took < timeout {
			t.Errorf("%s: got %+v, want status %d and an error after %v", tc.name, a, tc.status, timeout)
		}
	}
}

// A caller's context that ends ends the delivery, and says so.
func TestPostCanceled(t *testing.T) {
	t.Parallel()
	ep := newEndpoint(t, func(_ http.ResponseWriter, r *http.Request) { stall(r) })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	a := (&Egress{Allow: loopback(t)}).Post(ctx, ep.URL, nil, []byte(`{}`))
	if !errors.Is(a.Err, context.Canceled) || a.Status != 0 {
		t.Errorf("got %+v, want %v", a, context.Canceled)
	}
}
