package handlers

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/users"
	"claimdesk/views"

	"github.com/alexedwards/scs/v2"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
)

// Keys in the session and in echo's context.
const (
	sessionUser = "user"
	sessionCSRF = "csrf"
	flashKey    = "flash"
	noteKey     = "note"
	// newTokenKey holds a token just made, with whose it is, for the one
	// page after the making that shows it (newTokenForm).
	newTokenKey = "new_token"
	userKey     = "user"
	viaToken    = "via_token"
	// withSession marks a request whose session is loaded (loadSession).
	withSession = "with_session"
)

// sessionEpoch keys, in the session, the user's epoch at login
// (users.User.Epoch).
const sessionEpoch = "epoch"

// redisSessions is an scs.CtxStore over any go-redis client, standalone or
// cluster (each session is one key, keys.Session).
type redisSessions struct{ rdb redis.UniversalClient }

func (r redisSessions) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	b, err := r.rdb.Get(ctx, keys.Session(token)).Bytes()
	if err == redis.Nil {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (r redisSessions) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	return r.rdb.Set(ctx, keys.Session(token), b, time.Until(expiry)).Err()
}

func (r redisSessions) DeleteCtx(ctx context.Context, token string) error {
	return r.rdb.Del(ctx, keys.Session(token)).Err()
}

// The scs.Store methods without context; scs calls the Ctx ones.
func (r redisSessions) Find(token string) ([]byte, bool, error) {
	return r.FindCtx(context.Background(), token)
}
func (r redisSessions) Commit(token string, b []byte, expiry time.Time) error {
	return r.CommitCtx(context.Background(), token, b, expiry)
}
func (r redisSessions) Delete(token string) error { return r.DeleteCtx(context.Background(), token) }

func newSessions(rdb redis.UniversalClient, secure bool) *scs.SessionManager {
	sm := scs.New()
	sm.Store = redisSessions{rdb}
	// A session lasts a working day from the login, with no idle timeout:
	// scs would then save every session on every request, and a page's
	// background refresh, saving the session as it read it, could undo
	// what a form post saved meanwhile (the flash that says what happened).
	sm.Lifetime = 12 * time.Hour
	sm.Cookie.Name = "claimdesk_session"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = secure
	return sm
}

// loadSession loads the request's session (and saves it after), and notes
// that it did: a request refused before, such as one whose body is too
// large, has no session for its error page to draw on.
func (s *Server) loadSession(next echo.HandlerFunc) echo.HandlerFunc {
	return echo.WrapMiddleware(s.sessions.LoadAndSave)(func(c echo.Context) error {
		c.Set(withSession, true)
		return next(c)
	})
}

// authenticate finds who is asking: an API token in the Authorization
// header, or the browser session. It rejects a bad token at once, and a
// disabled user's. It looks the session's user up on every request, so a
// session ends at once when the user is disabled, removed, made a producer
// or given a new password.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" {
			token, ok := strings.CutPrefix(h, "Bearer ")
			if !ok {
				return newError(http.StatusUnauthorized, "unauthenticated", "use Authorization: Bearer <token>")
			}
			u, err := s.users.ByToken(ctx, strings.TrimSpace(token))
			switch {
			case errors.Is(err, users.ErrNotFound):
				return newError(http.StatusUnauthorized, "unauthenticated", "unknown API token")
			case errors.Is(err, users.ErrDisabled):
				return newError(http.StatusUnauthorized, "unauthenticated", "the API token's user is disabled")
			case err != nil:
				return err
			}
			c.Set(userKey, u)
			c.Set(viaToken, true)
			return next(c)
		}
		if name := s.sessions.GetString(ctx, sessionUser); name != "" {
			u, err := s.users.Get(ctx, name)
			switch {
			case err != nil && !errors.Is(err, users.ErrNotFound):
				return err
			case err == nil && u.SessionValid(s.sessions.GetInt64(ctx, sessionEpoch)):
				c.Set(userKey, u)
			default:
				// Removed, disabled, made a producer or given a new
				// password since the login: the session ends.
				_ = s.sessions.Destroy(ctx)
			}
		}
		return next(c)
	}
}

func currentUser(c echo.Context) (users.User, bool) {
	u, ok := c.Get(userKey).(users.User)
	return u, ok
}

// requireUser sends the anonymous to the login page (pages) or answers 401
// (the API, and the websocket, whose client follows no redirect).
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, ok := currentUser(c); ok {
			return next(c)
		}
		if c.Request().URL.Path == "/ws" {
			return newError(http.StatusUnauthorized, "unauthenticated", "log in: the live feed is for browser sessions")
		}
		if isAPI(c) {
			return newError(http.StatusUnauthorized, "unauthenticated", "log in or send an API token")
		}
		target := "/login"
		if c.Request().Method == http.MethodGet && c.Request().URL.Path != "/" {
			target += "?next=" + url.QueryEscape(c.Request().URL.RequestURI())
		}
		return redirect(c, target)
	}
}

// requireRole lets only users of the given roles through.
func requireRole(roles ...users.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			u, _ := currentUser(c)
			for _, r := range roles {
				if u.Role == r {
					return next(c)
				}
			}
			return forbidden()
		}
	}
}

func forbidden() error {
	return newError(http.StatusForbidden, "forbidden", "your role does not allow this")
}

// fromScript reports whether the page's script (htmx) sent the request,
// to be answered in place rather than with a new page.
func fromScript(c echo.Context) bool { return c.Request().Header.Get("HX-Request") == "true" }

// redirect answers a browser: htmx follows HX-Redirect, a form a 303.
func redirect(c echo.Context, target string) error {
	if fromScript(c) {
		c.Response().Header().Set("HX-Redirect", target)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, target)
}

// csrfCookie holds the CSRF token of a visitor who is not logged in.
const csrfCookie = "claimdesk_csrf"

// csrfToken returns the request's CSRF token, making one if needed. A
// logged-in user's is kept in the session. A visitor's (the login form's)
// is a cookie of its own that the form must repeat: storing a session for
// every anonymous page view would let anyone fill Redis with them.
func (s *Server) csrfToken(c echo.Context) string {
	ctx := c.Request().Context()
	if t := s.sessions.GetString(ctx, sessionCSRF); t != "" {
		return t
	}
	_, known := currentUser(c)
	if t := visitorCSRF(c); !known && t != "" {
		return t
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	t := base64.RawURLEncoding.EncodeToString(b[:])
	if known {
		s.sessions.Put(ctx, sessionCSRF, t)
		return t
	}
	s.setVisitorCSRF(c, t)
	c.Request().AddCookie(&http.Cookie{Name: csrfCookie, Value: t}) // for a second call in this request
	return t
}

// setVisitorCSRF sets the visitor's csrfCookie to t, or ("") removes it.
func (s *Server) setVisitorCSRF(c echo.Context, t string) {
	ck := &http.Cookie{Name: csrfCookie, Value: t, Path: "/", HttpOnly: true,
		Secure: s.sessions.Cookie.Secure, SameSite: http.SameSiteStrictMode}
	if t == "" {
		ck.MaxAge = -1
	}
	c.SetCookie(ck)
}

// visitorCSRF returns the CSRF token of the request's csrfCookie, if it
// holds one of the right shape.
func visitorCSRF(c echo.Context) string {
	ck, err := c.Cookie(csrfCookie)
	if err != nil || len(ck.Value) != 43 {
		return ""
	}
	return ck.Value
}

// checkCSRF refuses state-changing requests that ride on the session
// cookie without the session's CSRF token (form field _csrf or header
// X-CSRF-Token). API-token requests carry no cookie and need none.
func (s *Server) checkCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if _, known := currentUser(c); c.Get(viaToken) == true || (!known && isAPI(c)) {
			return next(c) // no cookie rides along; the API answers 401 itself
		}
		want := s.sessions.GetString(c.Request().Context(), sessionCSRF)
		if _, known := currentUser(c); !known && want == "" {
			want = visitorCSRF(c)
		}
		got := c.Request().Header.Get("X-CSRF-Token")
		if got == "" && !strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
			form, err := c.FormParams()
			var tooLarge *echo.HTTPError
			if errors.As(err, &tooLarge) && tooLarge.Code == http.StatusRequestEntityTooLarge {
				return err // a form over maxPageBody, however it was sent
			}
			got = form.Get("_csrf")
		}
		if want == "" || subtle.ConstantTimeCompare([]byte(want), []byte(got)) != 1 {
			return newError(http.StatusForbidden, "csrf_failed", "the form was stale or forged: reload the page and try again")
		}
		return next(c)
	}
}

func (s *Server) loginPage(c echo.Context) error {
	if _, ok := currentUser(c); ok {
		return redirect(c, "/")
	}
	return s.render(c, http.StatusOK, views.LoginPage(s.page(c, "Log in"), "", c.QueryParam("next"), ""))
}

// waitWords says how long to wait, as a person would: "5 seconds",
// "1 minute", "4 minutes" (rounded up).
func waitWords(d time.Duration) string {
	n, unit := retrySeconds(d), "second"
	if n > 60 {
		n, unit = (n+59)/60, "minute"
	}
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

func (s *Server) login(c echo.Context) error {
	ctx := c.Request().Context()
	u, err := s.users.Login(ctx, c.FormValue("name"), c.FormValue("password"), c.RealIP())
	if err != nil {
		msg := "Wrong name or password."
		status := http.StatusUnauthorized
		var throttled *users.ThrottledError
		switch {
		case errors.As(err, &throttled):
			msg, status = "Too many failed attempts. Try again in "+waitWords(throttled.RetryAfter)+".", http.StatusTooManyRequests
			setRetryAfter(c, throttled.RetryAfter)
		case errors.Is(err, users.ErrDisabled):
			msg, status = "This account is disabled. Ask a supervisor to enable it.", http.StatusForbidden
		case !errors.Is(err, users.ErrBadCredentials):
			return err
		}
		return s.render(c, status, views.LoginPage(s.page(c, "Log in"), c.FormValue("name"), c.FormValue("next"), msg))
	}
	// A new session id at login, so a planted cookie is worth nothing.
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	s.sessions.Put(ctx, sessionUser, u.Name)
	s.sessions.Put(ctx, sessionEpoch, u.Epoch)
	s.sessions.Remove(ctx, sessionCSRF)
	s.setVisitorCSRF(c, "")
	return redirect(c, s.localPath(c.FormValue("next"), "/"))
}

// localPath is where a redirect to a target the request named (a login's
// next, a Referer) may go: the target if it is a path on this site, or an
// absolute URL of the public origin cut to its path; else fallback. A path
// has no scheme, no host, no "//" or backslash, and no control characters
// (which URL parsers drop, turning "/\t/evil" into "//evil").
func (s *Server) localPath(target, fallback string) string {
	if n := len(s.origin); n > 0 && len(target) > n && strings.EqualFold(target[:n], s.origin) && target[n] == '/' {
		target = target[n:]
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(target, "/") ||
		strings.HasPrefix(target, "//") || strings.ContainsAny(target, "\\") ||
		strings.ContainsFunc(target, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fallback
	}
	return target
}

func (s *Server) logout(c echo.Context) error {
	ctx := c.Request().Context()
	if err := s.sessions.Destroy(ctx); err != nil {
		return err
	}
	// The session's websockets (other tabs) close: every instance looks
	// at the user's again, and those of other sessions stay.
	if u, ok := currentUser(c); ok {
		s.bus.TellUserChanged(ctx, u.Name)
	}
	return redirect(c, "/login")
}
