// Package handlers is claimdesk's HTTP surface: the operator and supervisor
// pages, the JSON API of docs/api.md, login and sessions, and the one place
// where errors become status codes.
package handlers

import (
	"cmp"
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/static"
	"claimdesk/views"

	"github.com/a-h/templ"
	"github.com/alexedwards/scs/v2"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	// Announce publishes the notices of the handlers' state changes. It is
	// the process's one announcer (cron shares it), and whoever starts the
	// server closes it once the server has stopped.
	Announce *notify.Announcer
	// SocketsPerUser and SocketsPerAddress cap the websockets this
	// instance keeps open for one user and for one client address (echo's
	// RealIP); 0 means DefaultSocketsPerUser and DefaultSocketsPerAddress.
	SocketsPerUser, SocketsPerAddress int
}

// The default caps on websockets of one instance: far more than the tabs
// of one person, and than the people behind one address.
const (
	DefaultSocketsPerUser    = 20
	DefaultSocketsPerAddress = 500
)

// Server holds the handlers' dependencies.
type Server struct {
	rdb      redis.UniversalClient
	tasks    *tasks.Store
	users    *users.Store
	log      *slog.Logger
	sessions *scs.SessionManager
	registry *prometheus.Registry
	metrics  *metrics
	hub      *notify.Hub
	sockets  *socketCaps
	announce *notify.Announcer
	origin   string
	instance string
}

// maxBody bounds a request body: a batch of jobs with their payloads.
const maxBody = "16M"

// New returns the HTTP handler of claimdesk.
func New(cfg Config) http.Handler {
	s := &Server{rdb: cfg.Redis, tasks: cfg.Tasks, users: cfg.Users, log: cfg.Log, registry: cfg.Registry,
		hub: cfg.Hub, announce: cfg.Announce, origin: strings.TrimRight(cfg.PublicURL, "/"), instance: cfg.Bus.ID(),
		sockets: newSocketCaps(cmp.Or(cfg.SocketsPerUser, DefaultSocketsPerUser), cmp.Or(cfg.SocketsPerAddress, DefaultSocketsPerAddress))}
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
	}
	s.metrics = newMetrics(s.registry)
	cfg.Tasks.Observe(s.metrics.observe)
	s.sessions = newSessions(cfg.Redis, len(cfg.PublicURL) > 5 && cfg.PublicURL[:5] == "https")
	s.sessions.ErrorFunc = s.sessionError

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(middleware.RequestID(), s.logRequests, middleware.Recover(), middleware.BodyLimit(maxBody), securityHeaders)
	e.Use(echo.WrapMiddleware(s.sessions.LoadAndSave), s.authenticate, s.checkCSRF)

	e.GET("/ws", s.websocket, s.requireUser)
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{})))
	assets, _ := fs.Sub(static.Files, ".")
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", cacheAssets(http.FileServerFS(assets)))))

	s.pageRoutes(e)
	s.apiRoutes(e.Group("/api/v1", s.requireUser))
	return e
}

func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
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
// takes the flash message, which only a whole page shows.
func (s *Server) page(c echo.Context, title string) views.Page {
	p := s.fragment(c)
	p.Title = title
	p.Flash = s.sessions.PopString(c.Request().Context(), flashKey)
	return p
}

// fragment is what a part of a page (an htmx swap) needs: it leaves the
// flash for the next whole page.
func (s *Server) fragment(c echo.Context) views.Page {
	p := views.Page{CSRF: s.csrfToken(c), Path: c.Request().URL.Path}
	if u, ok := currentUser(c); ok {
		p.User, p.Role = u.Name, string(u.Role)
	}
	return p
}

// securityHeaders keeps pages out of frames and scripts to our own origin.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		return next(c)
	}
}

func cacheAssets(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(w, r)
	})
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
		route := c.Path()
		s.metrics.requests.WithLabelValues(c.Request().Method, route, http.StatusText(status)).Inc()
		s.metrics.latency.WithLabelValues(c.Request().Method, route).Observe(time.Since(start).Seconds())
		s.log.Debug("request", "method", c.Request().Method, "path", c.Request().URL.Path, "status", status,
			"ms", time.Since(start).Milliseconds(), "request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		return nil
	}
}
