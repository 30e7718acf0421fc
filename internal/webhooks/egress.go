package webhooks

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// DefaultTimeout is how long Egress gives a delivery when its Timeout is
// not set.
const DefaultTimeout = 15 * time.Second

// The bounds of what Egress sends and reads.
const (
	maxURL        = 2048     // bytes of a webhook's URL
	maxRead       = 64 << 10 // bytes of an answer's body read, and of its headers
	maxKept       = 1 << 10  // bytes of an answer's body kept (Answer.Body)
	maxRetryAfter = 24 * time.Hour
	userAgent     = "claimdesk-webhooks/1"
)

// Egress is the one way claimdesk reaches a webhook's URL.
//
// Whoever registers a webhook writes its URL, and claimdesk sends to it
// from inside its own network, so a URL could aim claimdesk at what only
// claimdesk reaches (server-side request forgery): Redis, a service on the
// loopback or a private network, the cloud's metadata service at
// 169.254.169.254. Egress refuses every address that is not a public one
// (nonPublic) unless it is in Allow, when a URL is registered (CheckURL)
// and again on the address each connection is actually made to (Post): a
// name that resolved to a public address then and to a private one now
// (DNS rebinding) is refused too. Plain http goes only to Allow's
// networks; elsewhere a webhook goes over https. Redirects are not
// followed, and no proxy of the environment is used.
//
// An Egress is safe for concurrent use; its fields must not change once it
// is in use.
type Egress struct {
	// Allow are the networks, set by whoever runs claimdesk, that a
	// webhook may reach though they are not public, and over plain http;
	// default none.
	Allow []*net.IPNet
	// Timeout bounds a delivery, from the connection to the last byte of
	// the answer read; default DefaultTimeout.
	Timeout time.Duration

	once          sync.Once
	secure, plain *http.Client // the clients of https and of http URLs
}

// URLError is why Egress refuses a URL, at registration (CheckURL) or
// when it connects (Post).
type URLError struct {
	// Reason says what is wrong in words for whoever registers the URL,
	// such as "127.0.0.1 is a loopback address: webhooks go only to
	// public addresses".
	Reason string
}

func (e *URLError) Error() string {
	return "refused webhook URL: " + e.Reason
}

// Answer is how an endpoint answered a delivery. A delivery succeeded when
// Err is nil and Status is a 2xx.
type Answer struct {
	// Status is the answer's HTTP status; 0 when none came (Err says
	// why). A redirect is not followed: its 3xx is the answer.
	Status int
	// RetryAfter is how long the endpoint asks to be left alone: its
	// Retry-After, in seconds or as an HTTP date, up to 24h, on a 429 or a
	// 503 only; else 0.
	RetryAfter time.Duration
	// Body is the start of the answer's body, at most 1 KiB of it, cut at
	// a whole character, with bytes that are not UTF-8 as U+FFFD.
	Body string
	// Err is why the delivery got no answer, or no whole one: a refused
	// URL or address (a *URLError), no answer within the timeout, a
	// connection that failed. With a Status, the body was cut short.
	Err error
	// Took is how long the delivery took, from the start of Post.
	Took time.Duration
}

// CheckURL checks the URL of a webhook being registered, and returns it
// parsed: an absolute http or https URL of at most 2048 bytes with a
// host, without a user name or password or a fragment, whose host is or
// resolves to public addresses only, or to addresses of Allow; plain http
// only when all of them are in Allow. A URL it refuses is a *URLError; any
// other error (the lookup of the host failed, ctx ended) is no fault of
// the URL's.
func (e *Egress) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := parseURL(raw)
	if err != nil {
		return nil, err
	}
	host := u.Hostname()
	a, err := netip.ParseAddr(host)
	literal := err == nil
	addrs := []netip.Addr{a}
	if !literal {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if dnsErr := (*net.DNSError)(nil); errors.As(err, &dnsErr) && dnsErr.IsNotFound || err == nil && len(addrs) == 0 {
			return nil, &URLError{host + " does not resolve to an address"}
		}
		if err != nil {
			return nil, fmt.Errorf("check webhook URL: %w", err)
		}
	}
	for _, a := range addrs {
		a = a.Unmap()
		subject := a.String() + " is"
		if !literal {
			subject = host + " resolves to " + a.String() + ","
		}
		if reason := e.refusal(a, u.Scheme == "http", subject); reason != "" {
			return nil, &URLError{reason}
		}
	}
	return u, nil
}

// parseURL checks the form of a webhook's URL (CheckURL), which Post holds
// it to as well.
func parseURL(raw string) (*url.URL, error) {
	if len(raw) > maxURL {
		return nil, &URLError{fmt.Sprintf("the URL is longer than %d bytes", maxURL)}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "" || u.Scheme != "http" && u.Scheme != "https":
		return nil, &URLError{"not an absolute http or https URL"}
	case u.User != nil:
		return nil, &URLError{"the URL has a user name or password, which webhooks do not send"}
	case strings.Contains(raw, "#"):
		return nil, &URLError{"the URL has a fragment (#…), which webhooks do not send"}
	case u.Hostname() == "":
		return nil, &URLError{"the URL has no host"}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, &URLError{"the URL's port is not from 1 to 65535"}
		}
	}
	return u, nil
}

// refusal says why a webhook does not go to addr, or over plain http when
// plain is set, or "" when it goes; subject names the address ("10.0.0.7
// is", "hooks.example.com resolves to 10.0.0.7,").
func (e *Egress) refusal(addr netip.Addr, plain bool, subject string) string {
	addr = addr.Unmap().WithZone("")
	for _, n := range e.Allow {
		if n.Contains(addr.AsSlice()) {
			return ""
		}
	}
	if kind := nonPublic(addr); kind != "" {
		return subject + " " + kind + ": webhooks go only to public addresses"
	}
	if plain {
		return "plain http goes only to the networks claimdesk is set to allow: use https"
	}
	return ""
}

// special are the address ranges, besides those netip.Addr's methods
// name, that are not the public internet's (after IANA's special-purpose
// address registries).
var special = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "an address of this network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
}

// IPv6's public addresses are all global unicast, in globalUnicast, or
// NAT64 translations of public IPv4 addresses, in nat64.
var (
	globalUnicast = netip.MustParsePrefix("2000::/3")
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
)

// nonPublic says what kind of address a (without a zone, an IPv4 address
// unmapped) is when it is not a public one, such as "a loopback address",
// or "" when it is public.
func nonPublic(a netip.Addr) string {
	switch {
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	}
	for _, s := range special {
		if s.prefix.Contains(a) {
			return s.kind + " (" + s.prefix.String() + ")"
		}
	}
	if nat64.Contains(a) {
		v4 := netip.AddrFrom4([4]byte(a.AsSlice()[12:]))
		if kind := nonPublic(v4); kind != "" {
			return "the NAT64 address of " + v4.String() + ", " + kind
		}
		return ""
	}
	if a.Is6() && !globalUnicast.Contains(a) {
		return "a reserved address"
	}
	return ""
}

// Post sends a delivery: a POST of body to the URL u with header, and the
// User-Agent claimdesk-webhooks/1. It gives the whole exchange the
// Egress's Timeout, connects only to addresses CheckURL would take (each
// checked as it is dialled), follows no redirect, reads at most 64 KiB of
// the answer's body and keeps 1 KiB of it.
func (e *Egress) Post(ctx context.Context, u string, header http.Header, body []byte) Answer {
	start := time.Now()
	a := e.post(ctx, u, header, body)
	a.Took = time.Since(start)
	return a
}

// post is Post but for the time it took.
func (e *Egress) post(ctx context.Context, u string, header http.Header, body []byte) Answer {
	target, err := parseURL(u)
	if err != nil {
		return Answer{Err: err}
	}
	e.once.Do(func() { e.secure, e.plain = e.client(false), e.client(true) })
	client := e.secure
	if target.Scheme == "http" {
		client = e.plain
	}
	timeout := cmp.Or(e.Timeout, DefaultTimeout)
	exchange, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(exchange, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return Answer{Err: err}
	}
	maps.Copy(req.Header, header.Clone())
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		return Answer{Err: failure(ctx, err, timeout)}
	}
	defer resp.Body.Close()
	a := Answer{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		a.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	a.Body, err = readBody(resp.Body)
	if err != nil {
		a.Err = failure(ctx, err, timeout)
	}
	return a
}

// client is the HTTP client of https URLs, or of http ones when plain is
// set: its dialer checks each address it connects to (refusal), it uses no
// proxy and follows no redirect.
func (e *Egress) client(plain bool) *http.Client {
	dialer := &net.Dialer{
		KeepAlive: 30 * time.Second,
		// The address here is the one connected to, whatever the name
		// resolved to before.
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &URLError{"cannot check the address " + address}
			}
			if reason := e.refusal(ap.Addr(), plain, ap.Addr().String()+" is"); reason != "" {
				return &URLError{reason}
			}
			return nil
		},
	}
	return &http.Client{
		Transport: &http.Transport{
			// No Proxy: none of the environment's.
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           100,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: maxRead,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// failure is what Answer.Err says of an exchange that failed with err: a
// refused address as it was refused, a timeout as one, else err without
// the URL, which the caller knows.
func failure(ctx context.Context, err error, timeout time.Duration) error {
	var refused *URLError
	switch {
	case errors.As(err, &refused):
		return refused
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the exchange took longer than %s: %w", timeout, context.DeadlineExceeded)
	}
	if u := (*url.Error)(nil); errors.As(err, &u) {
		return u.Err
	}
	return err
}

// retryAfter reads a Retry-After header, seconds or an HTTP date, as a
// wait from now: 0 when there is none or it is no wait, at most 24h.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	var d time.Duration
	// Seconds too many for a uint64 parse as its largest.
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		d = time.Duration(min(n, uint64(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// readBody reads at most 64 KiB of an answer's body, so a short one leaves
// the connection to be used again, and returns its first KiB at most, cut
// at a whole character, with bytes that are not UTF-8 as U+FFFD.
func readBody(r io.Reader) (string, error) {
	start, err := io.ReadAll(io.LimitReader(r, maxKept))
	if err == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(r, maxRead-maxKept))
	}
	var kept strings.Builder
	for len(start) > 0 && utf8.FullRune(start) {
		c, size := utf8.DecodeRune(start)
		if kept.Len()+utf8.RuneLen(c) > maxKept {
			break
		}
		kept.WriteRune(c)
		start = start[size:]
	}
	return kept.String(), err
}
