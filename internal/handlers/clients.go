package handlers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/users"

	"github.com/go-redis/redis_rate/v10"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
)

// clientAddress is how the server tells a request's client address
// (c.RealIP()): the socket's peer, unless that peer is one of the trusted
// proxies; then the last address in X-Forwarded-For that is not a trusted
// proxy's. Nothing else is believed: not X-Real-IP, and not, as echo would
// by default, forwarded addresses from loopback or private peers.
func clientAddress(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// RateLimits are the request rates claimdesk allows its clients. Each is
// counted in Redis, one key per limit and client, so that every instance
// shares them. A zero field takes its value from DefaultRateLimits.
type RateLimits struct {
	// User bounds the API requests and websocket upgrades of one user,
	// whether by API token or session, together. Default 100/s.
	User redis_rate.Limit
	// Address bounds the API requests and websocket upgrades from one
	// client address, together; a whole floor may share one address.
	// Default 3000/s.
	Address redis_rate.Limit
	// Login bounds the login attempts (POST /login) from one client
	// address, whatever the names. Default 6000/m.
	Login redis_rate.Limit
	// LoginUser bounds the login attempts for one user name, from any
	// address. Default 20/m: above the 10 tries per name that one address
	// has in 5 minutes (internal/users), whose refusal says how long to wait.
	LoginUser redis_rate.Limit
}

// DefaultRateLimits are the limits that a RateLimits left zero takes. A
// person is limited first, an address well above a floor behind one NAT
// address (docs/security.md): 2,000 people logging in at once, and their
// 2,000 pages reconnecting at once after a restart, fit in the burst of
// the address's limits, and so would a second wave in the same minute.
var DefaultRateLimits = RateLimits{
	User:      redis_rate.PerSecond(100),
	Address:   redis_rate.PerSecond(3000),
	Login:     redis_rate.PerMinute(6000),
	LoginUser: redis_rate.PerMinute(20),
}

// rateLimiter applies the rate limits as route middleware.
type rateLimiter struct {
	limiter *redis_rate.Limiter
	limits  RateLimits
	log     *slog.Logger
	// down is set while Redis does not answer the limiter, so that an
	// outage is logged once.
	down atomic.Bool

	// credits are requests Redis already counted and allowed, not yet
	// made: a busy client asks Redis once for a few (prefetch), then
	// spends them here, for at most creditLife.
	mu      sync.Mutex
	credits map[string]credit
	// asking holds, per key, a channel closed when the request under way
	// for its credits has its answer: requests that find no credit wait
	// for it rather than each ask for a batch, which together could use
	// up the whole limit.
	asking map[string]*asking
}

// credit is what one limit on one client may still spend without asking
// Redis, until when.
type credit struct {
	left  int
	until time.Time
}

// Prefetching of rate-limit credits. Every request counted in Redis stays
// counted, so no limit is ever exceeded; credits an instance does not
// spend within creditLife are lost to the client, which costs it at most
// a tenth of its limit per instance. A limit so small that a tenth of a
// second's worth is under one request is asked of Redis every time. One
// request per key asks at a time; the others that find no credit wait
// for its answer, so that a crowd arriving at once does not each take a
// batch and use up the limit between them.
const (
	creditLife = time.Second
	// maxCredits bounds the table: many clients at once (a flood from many
	// addresses) make it start afresh rather than grow.
	maxCredits = 10000
)

// prefetch is how many requests to ask Redis for at once under limit: a
// tenth of what it allows in creditLife, at least 1.
func prefetch(limit redis_rate.Limit) int {
	return max(1, int(float64(limit.Rate)*float64(creditLife)/float64(limit.Period)/10))
}

func newRateLimiter(rdb redis.UniversalClient, limits RateLimits, log *slog.Logger) *rateLimiter {
	d := DefaultRateLimits
	limits.User = cmp.Or(limits.User, d.User)
	limits.Address = cmp.Or(limits.Address, d.Address)
	limits.Login = cmp.Or(limits.Login, d.Login)
	limits.LoginUser = cmp.Or(limits.LoginUser, d.LoginUser)
	return &rateLimiter{limiter: redis_rate.NewLimiter(rdb), limits: limits, log: log,
		credits: map[string]credit{}, asking: map[string]*asking{}}
}

// rateLimit is one limit on one client.
type rateLimit struct {
	key   string
	limit redis_rate.Limit
}

// byAddress limits API requests and websocket upgrades per client
// address. It runs before credentials are looked at, so that requests with
// made-up tokens count too.
func (r *rateLimiter) byAddress(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !isAPI(c) && c.Path() != "/ws" {
			return next(c)
		}
		if err := r.allow(c.Request().Context(), rateLimit{keys.RateLimit("address", c.RealIP()), r.limits.Address}); err != nil {
			return err
		}
		return next(c)
	}
}

// byUser limits the API requests and websocket upgrades of a known user,
// whether by token or session: route middleware, after authentication.
func (r *rateLimiter) byUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u, ok := currentUser(c); ok {
			if err := r.allow(c.Request().Context(), rateLimit{keys.RateLimit("user", u.Name), r.limits.User}); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// logins limits login attempts per user name, then per client address.
// The name is counted as the login reads it (users.NameKey), and only
// by its hash, so that no name typed reaches Redis; a name too long to
// be anyone's counts for the address alone.
func (r *rateLimiter) logins(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		limits := []rateLimit{{keys.RateLimit("login", c.RealIP()), r.limits.Login}}
		if name, ok := users.NameKey(c.FormValue("name")); ok {
			limits = append([]rateLimit{{keys.RateLimit("login-user", name), r.limits.LoginUser}}, limits...)
		}
		if err := r.allow(c.Request().Context(), limits...); err != nil {
			return err
		}
		return next(c)
	}
}

// allow counts a request against each limit in turn and refuses it with
// 429 rate_limited at the first one it is past. Should Redis not answer,
// the request goes on unlimited to its own handling, which meets the same
// trouble and answers for it.
func (r *rateLimiter) allow(ctx context.Context, limits ...rateLimit) error {
	for _, l := range limits {
		if err := r.allowOne(ctx, l); err != nil {
			return err
		}
	}
	return nil
}

// allowOne applies one limit: a credit, or else the answer of Redis,
// asked for a batch of credits by one request of the key at a time.
func (r *rateLimiter) allowOne(ctx context.Context, l rateLimit) error {
	for {
		spent, a, mine := r.spendOrAsk(l.key)
		switch {
		case spent:
			return nil
		case mine:
			a.refused, a.failed = r.ask(ctx, l)
			r.answered(l.key, a)
			return a.refused
		}
		select {
		case <-a.done:
			// Refused, or Redis not answering: the same for the waiters.
			// Otherwise it left credits, or none to spare: look again.
			if a.refused != nil || a.failed {
				return a.refused
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// asking is one request to Redis for a key's credits; done is closed once
// it has its answer: refused (429), failed (Redis did not answer: the
// limits are not applied), or else credits kept.
type asking struct {
	done    chan struct{}
	refused error
	failed  bool
}

// ask asks Redis for a batch of credits under the limit, keeps what is
// left after this request, and returns the refusal if there is none, or
// failed if Redis did not answer.
func (r *rateLimiter) ask(ctx context.Context, l rateLimit) (refused error, failed bool) {
	res, err := r.limiter.AllowAtMost(ctx, l.key, l.limit, prefetch(l.limit))
	if err != nil {
		if ctx.Err() == nil && r.down.CompareAndSwap(false, true) {
			r.log.Warn("rate limits not applied while the store does not answer", "err", err)
		}
		return nil, true
	}
	if r.down.Load() {
		r.down.Store(false)
	}
	if res.Allowed == 0 {
		wait := retrySeconds(res.RetryAfter)
		return &apiError{Status: http.StatusTooManyRequests, Code: "rate_limited",
			Message: fmt.Sprintf("Too many requests. Try again in %d s.", wait), RetryAfter: time.Duration(wait) * time.Second}, false
	}
	if res.Allowed > 1 {
		r.keep(l.key, res.Allowed-1)
	}
	return nil, false
}

// spendOrAsk takes one of the key's credits, if it has one left (spent).
// Otherwise it returns the request for credits under way, or a new one
// that is the caller's to make (mine) and to end with answered.
func (r *rateLimiter) spendOrAsk(key string) (spent bool, a *asking, mine bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.credits[key]; ok && c.left > 0 && time.Now().Before(c.until) {
		c.left--
		r.credits[key] = c
		return true, nil, false
	}
	if a, ok := r.asking[key]; ok {
		return false, a, false
	}
	a = &asking{done: make(chan struct{})}
	r.asking[key] = a
	return false, a, true
}

// answered ends the request for the key's credits, and wakes whoever
// waits on it.
func (r *rateLimiter) answered(key string, a *asking) {
	r.mu.Lock()
	delete(r.asking, key)
	r.mu.Unlock()
	close(a.done)
}

// keep records n credits of the key, for creditLife.
func (r *rateLimiter) keep(key string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.credits) >= maxCredits {
		now := time.Now()
		for k, c := range r.credits {
			if !now.Before(c.until) {
				delete(r.credits, k)
			}
		}
		if len(r.credits) >= maxCredits {
			clear(r.credits)
		}
	}
	r.credits[key] = credit{left: n, until: time.Now().Add(creditLife)}
}

// retrySeconds is d in whole seconds, rounded up, at least 1: what a
// Retry-After header says.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// setRetryAfter tells the client when to try again.
func setRetryAfter(c echo.Context, d time.Duration) {
	c.Response().Header().Set("Retry-After", strconv.Itoa(retrySeconds(d)))
}

// maxLoginBody bounds a login form: a name, a password, the CSRF token and
// the page to go to next.
const maxLoginBody = 8 << 10

// limitLoginBody reads a login form before anything else does (the CSRF
// check, then the login), and answers 413 to one larger than maxLoginBody
// without reading more of it.
func limitLoginBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodPost || c.Path() != "/login" {
			return next(c)
		}
		if r.ContentLength > maxLoginBody {
			return echo.ErrStatusRequestEntityTooLarge
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxLoginBody)
		var tooLarge *http.MaxBytesError
		if err := r.ParseForm(); errors.As(err, &tooLarge) {
			return echo.ErrStatusRequestEntityTooLarge
		}
		return next(c)
	}
}
