// Package handlers is claimdesk's HTTP surface: the operator and supervisor
// pages, the JSON API of api/openapi.yaml (its bodies in api.go), login and
// sessions, and the one place where errors become status codes
// (errors.go). A handler reads the request, has the desk (internal/desk)
// do what it asks, and renders the answer; routes.go lists every route
// with its guard.
package handlers

import (
	"cmp"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/notify"
	"claimdesk/internal/numfmt"
	"claimdesk/internal/storeerr"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
	"claimdesk/static"
	"claimdesk/views"

	"github.com/a-h/templ"
	"github.com/alexedwards/scs/v2"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Config is what the server needs.
type Config struct {
	Redis redis.UniversalClient
	Tasks *tasks.Store
	Users *users.Store
	Log   *slog.Logger
	// PublicURL is the origin browsers use, e.g. http://localhost:8080; an
	// https URL makes cookies Secure.
	PublicURL string
	// Registry receives the server's metrics; nil means a new one.
	Registry *prometheus.Registry
	// Bus publishes notices to every instance; Hub is this instance's
	// fan-out to browsers. Whoever starts the server runs Bus.Listen with
	// Hub.Deliver.
	Bus *notify.Bus
	Hub *notify.Hub
	// Presence keeps who has a page open; whoever starts the server runs
	// Presence.Run with Hub. Nil: one over Redis, that the sockets mark.
	Presence *notify.Presence
	// MetricsToken, when set, is the bearer token /metrics asks for.
	MetricsToken string
	// SeparateMetrics leaves /metrics out: a listener of its own serves
	// it (Metrics).
	SeparateMetrics bool
	// SocketsPerUser and SocketsPerAddress cap the websockets this
	// instance keeps open for one user and for one client address (echo's
	// RealIP); 0 means DefaultSocketsPerUser and DefaultSocketsPerAddress.
	SocketsPerUser, SocketsPerAddress int
	// TrustedProxies are the networks of the reverse proxies whose
	// X-Forwarded-For is believed; empty (the default): none, the
	// socket's peer is the client.
	TrustedProxies []*net.IPNet
	// RateLimits bound how often one client may call; zero fields take
	// DefaultRateLimits.
	RateLimits RateLimits
	// PingPeriod is how often each websocket is pinged and its session
	// looked at (a session that ran out closes its sockets by then); 0
	// means DefaultPingPeriod.
	PingPeriod time.Duration
	// Webhooks is the registry of webhooks (nil: the desk's default), and
	// WebhooksChanged is told when a request changed it (nil: nobody).
	Webhooks        *webhooks.Store
	WebhooksChanged func(ctx context.Context)
	// DisabledWebhooks counts the webhooks their receivers got disabled,
	// without asking Redis (webhooks.Deliverer.Disabled), for the mark in
	// supervisors' navigation; nil: no mark.
	DisabledWebhooks func() int
}

// The default caps on websockets of one instance: far more than the tabs
// of one person, and, per address, than a floor of 2,000 people behind one
// NAT address with a few tabs each, on a single instance (docs/security.md).
const (
	DefaultSocketsPerUser    = 20
	DefaultSocketsPerAddress = 10000
)

// Server holds the handlers' dependencies.
type Server struct {
	rdb   redis.UniversalClient
	tasks *tasks.Store
	users *users.Store
	log   *slog.Logger
	// unavailable logs the store's passing troubles, once per burst.
	unavailable *storeerr.Burst
	sessions    *scs.SessionManager
	registry    *prometheus.Registry
	metrics     *metrics
	hub         *notify.Hub
	bus         *notify.Bus
	presence    *notify.Presence
	sockets     *socketCaps
	pingPeriod  time.Duration
	origin      string
	instance    string
	// headers are the security headers of every answer (securityHeaders).
	headers http.Header
	rates   *rateLimiter
	// board is what every page shows alike, read once for all of them.
	board *board
	// desk is where every action of a request is done.
	desk *desk.Desk
	// disabledHooks counts the webhooks disabled by their receivers (nil:
	// none counted).
	disabledHooks func() int
}

// Bounds of a request body.
const (
	// maxBody bounds an API request: a batch of jobs with their payloads.
	maxBody = "16M"
	// maxPageBody bounds a page's form, notes and result fields included:
	// well under net/http's own 10 MB cap on forms, so that an oversized
	// form, with or without a stated length, answers 413 (checkCSRF).
	maxPageBody = "1M"
)

// New returns the HTTP handler of claimdesk.
func New(cfg Config) http.Handler {
	s := &Server{rdb: cfg.Redis, tasks: cfg.Tasks, users: cfg.Users, log: cfg.Log, registry: cfg.Registry,
		hub: cfg.Hub, bus: cfg.Bus, origin: strings.TrimRight(cfg.PublicURL, "/"), instance: cfg.Bus.ID(),
		sockets:    newSocketCaps(cmp.Or(cfg.SocketsPerUser, DefaultSocketsPerUser), cmp.Or(cfg.SocketsPerAddress, DefaultSocketsPerAddress)),
		pingPeriod: cmp.Or(cfg.PingPeriod, DefaultPingPeriod), disabledHooks: cfg.DisabledWebhooks}
	s.unavailable = storeerr.NewBurst(s.log, "requests answered 503")
	s.presence = cmp.Or(cfg.Presence, notify.NewPresence(cfg.Redis, cfg.Log))
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
	}
	s.metrics = newMetrics(s.registry)
	cfg.Tasks.Observe(s.metrics.observe)
	s.board = newBoard()
	s.desk = desk.New(desk.Config{Redis: cfg.Redis, Tasks: cfg.Tasks, Users: cfg.Users, Bus: cfg.Bus, Log: cfg.Log,
		Queues: s.boardQueues, FirstReservations: s.board.reservations.get, Presence: s.presence, SettingsChanged: s.board.settingsChanged,
		Webhooks: cfg.Webhooks, WebhooksChanged: cfg.WebhooksChanged})
	s.registry.MustRegister(newQueueCollector(s))
	cfg.Tasks.Observe(s.board.observe)
	cfg.Hub.Tap(s.heard)
	cfg.Hub.Settle(s.queueCounts)
	public, _ := url.Parse(s.origin)
	https := public != nil && public.Scheme == "https"
	s.headers = securityHeaders(public)
	s.sessions = newSessions(cfg.Redis, https)
	s.sessions.ErrorFunc = s.sessionError
	s.rates = newRateLimiter(cfg.Redis, cfg.RateLimits, cfg.Log)

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.IPExtractor = clientAddress(cfg.TrustedProxies)
	e.Use(middleware.RequestID(), s.logRequests, middleware.Recover(), s.secure, bodyInTime, middleware.BodyLimit(maxBody),
		middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: maxPageBody, Skipper: isAPI}))
	e.Use(s.loadSession, limitLoginBody, s.rates.byAddress, s.authenticate, s.checkCSRF)

	s.routes(e)
	s.metrics.knowRoutes(e.Routes())
	if cfg.SeparateMetrics {
		return e
	}
	// /metrics is beside the app, not in it: a scrape carries the metrics
	// token, not a user's, and never touches the session store.
	scrape := Metrics(s.registry, cfg.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == metricsPath {
			scrape.ServeHTTP(w, r)
			return
		}
		e.ServeHTTP(w, r)
	})
}

// actor is who sends the request, as the desk knows them.
func actor(c echo.Context) desk.Actor {
	u, _ := currentUser(c)
	return desk.Person(u)
}

// heard drops what this instance kept of what a notice says changed: the
// board, and a user another instance changed.
func (s *Server) heard(n *notify.Notice) {
	s.board.heard(n)
	if n.Type == notify.UserChanged {
		s.users.Forget(n.User)
	}
}

// queueCounts reads a queue's counts, for the hub to settle what pages
// show (notify.Hub.Settle).
func (s *Server) queueCounts(ctx context.Context, queue string) (tasks.Counts, error) {
	st, err := s.tasks.Stats(ctx, queue)
	return st.Counts(), err
}

func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		setRetryAfter(c, unavailableRetry)
		return c.String(http.StatusServiceUnavailable, "redis unreachable\n")
	}
	return c.String(http.StatusOK, "ok\n")
}

// render writes a templ component as the response.
func (s *Server) render(c echo.Context, status int, cmp templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return cmp.Render(c.Request().Context(), c.Response())
}

// page is what the layout of a whole page needs to know of the request; it
// takes the flash message and the note, which only a whole page shows. A
// whole page that the page's script fetches takes a part of it (a job's
// page watching the job: hx-select), and leaves them for the next page
// shown: a fetch that crosses an action's answer would take its words.
func (s *Server) page(c echo.Context, title string) views.Page {
	p := s.fragment(c)
	p.Title = title
	if !fromScript(c) {
		p.Flash = s.sessions.PopString(c.Request().Context(), flashKey)
		p.Note = s.sessions.PopString(c.Request().Context(), noteKey)
	}
	return p
}

// fragment is what a part of a page (an htmx swap) needs: it leaves the
// flash for the next whole page.
func (s *Server) fragment(c echo.Context) views.Page {
	p := views.Page{CSRF: s.csrfToken(c), Path: c.Request().URL.Path, Locale: viewerLocale(c)}
	if u, ok := currentUser(c); ok {
		p.User, p.Role = u.Name, string(u.Role)
	}
	if p.Supervisor() && s.disabledHooks != nil {
		p.DisabledWebhooks = s.disabledHooks()
	}
	return p
}

// viewerLocale is how the viewer writes numbers, from their browser's
// Accept-Language: the pages show numbers and read what is typed in it.
func viewerLocale(c echo.Context) numfmt.Locale {
	return numfmt.FromAcceptLanguage(c.Request().Header.Get("Accept-Language"))
}

// securityHeaders are the headers of every answer for the public URL:
// pages stay out of frames, scripts and connections go to claimdesk's own
// origin only (its websocket included), a browser that once came over
// https never comes over plain http again, and nothing is kept in a cache
// (pages, fragments and API answers show jobs and reservation tokens;
// only the static assets may be kept, see asset).
func securityHeaders(public *url.URL) http.Header {
	connect := "'self'"
	if public != nil && public.Host != "" {
		switch public.Scheme {
		case "http":
			connect += " ws://" + public.Host
		case "https":
			connect += " wss://" + public.Host
		}
	}
	h := http.Header{}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src "+
		connect+"; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("Cache-Control", "no-store")
	if public != nil && public.Scheme == "https" {
		h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
	}
	return h
}

// secure sets the security headers on the answer.
func (s *Server) secure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		for k, v := range s.headers {
			h[k] = slices.Clone(v)
		}
		return next(c)
	}
}

// asset serves a file of static.Assets, which browsers may keep a while;
// anything else under /static/ is not found.
func asset(c echo.Context) error {
	name := c.Param("*")
	if _, err := fs.Stat(static.Assets, name); err != nil {
		return echo.ErrNotFound
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	http.ServeFileFS(c.Response(), c.Request(), static.Assets, name)
	return nil
}

// bodyInTime answers 408 when a request's body does not arrive in time
// (the server's read timeout), rather than taking the timeout for the
// store's.
func bodyInTime(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := c.Request(); r.Body != nil && r.Body != http.NoBody {
			r.Body = timedBody{r.Body}
		}
		return next(c)
	}
}

// timedBody is a request body whose read timeout is the client's fault.
type timedBody struct{ io.ReadCloser }

func (b timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		err = newError(http.StatusRequestTimeout, "request_timeout", "the request body did not arrive in time")
	}
	return n, err
}

// logRequests logs each request once, with its outcome.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		method, route := s.metrics.labels(c.Request().Method, c.Path())
		s.metrics.requests.WithLabelValues(method, route, http.StatusText(status)).Inc()
		s.metrics.latency.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
		s.log.Debug("request", "method", c.Request().Method, "path", c.Request().URL.Path, "client", c.RealIP(), "status", status,
			"ms", time.Since(start).Milliseconds(), "request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		return nil
	}
}

// flash tells the next whole page that an action succeeded.
func (s *Server) flash(c echo.Context, msg string) {
	s.sessions.Put(c.Request().Context(), flashKey, msg)
}

// note tells the next whole page why an action did nothing (not a
// failure of claimdesk's, nor a success).
func (s *Server) note(c echo.Context, msg string) {
	s.sessions.Put(c.Request().Context(), noteKey, msg)
}

// quote sets a title off in running text, in quotation marks: a title may
// hold parentheses of its own.
func quote(title string) string { return "“" + title + "”" }
