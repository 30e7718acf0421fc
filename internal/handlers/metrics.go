package handlers

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"time"

	"claimdesk/internal/tasks"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsPath is where Prometheus scrapes.
const metricsPath = "/metrics"

// Metrics returns the handler of /metrics: the registry's metrics in
// Prometheus text, to a request with Authorization: Bearer token when
// token is set. Any other path is not found.
func Metrics(reg *prometheus.Registry, token string) http.Handler {
	scrape := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	// Hashes compared in constant time: neither the token nor its length
	// shows in how long a refusal takes.
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != metricsPath {
			writeError(w, newError(http.StatusNotFound, "not_found", "the metrics are at %s", metricsPath))
			return
		}
		if token != "" {
			got := sha256.Sum256([]byte(r.Header.Get(echo.HeaderAuthorization)))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				w.Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="claimdesk metrics"`)
				writeError(w, newError(http.StatusUnauthorized, "unauthenticated", "send Authorization: Bearer <the metrics token>"))
				return
			}
		}
		scrape.ServeHTTP(w, r)
	})
}

// metrics are the server's Prometheus collectors.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// transitions counts the engine's transitions by action (Observe).
	transitions *prometheus.CounterVec
	sockets     prometheus.Gauge
	// breaches counts the transitions that breached a due time, by queue.
	breaches *prometheus.CounterVec
	// routes are the paths of the route table (knowRoutes), the only
	// route labels.
	routes map[string]bool
}

// Labels of requests that no route or known method names: whatever a
// client sends, it mints no new series.
const (
	otherMethod    = "other"
	unmatchedRoute = "unmatched"
)

// knownMethods are the HTTP methods that are labels of their own.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimdesk_http_requests_total", Help: "HTTP requests by method, route and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "claimdesk_http_request_seconds", Help: "HTTP request latency by method and route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 30, 60},
		}, []string{"method", "route"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimdesk_transitions_total", Help: "Changes of job state made by this process, by action and new state.",
		}, []string{"action", "to"}),
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimdesk_websockets", Help: "Open websocket connections.",
		}),
		breaches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimdesk_sla_breaches_total", Help: "Jobs whose due time came while they were unfinished, seen by this process's cron runs, by queue.",
		}, []string{"queue"}),
	}
	reg.MustRegister(m.requests, m.latency, m.transitions, m.sockets, m.breaches,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// knowRoutes takes the route table, once every route is added.
func (m *metrics) knowRoutes(routes []*echo.Route) {
	m.routes = make(map[string]bool, len(routes))
	for _, r := range routes {
		m.routes[r.Path] = true
	}
}

// labels are the method and route labels of a request: "other" for a
// method not in knownMethods, "unmatched" for a path not in the route
// table.
func (m *metrics) labels(method, route string) (string, string) {
	if !knownMethods[method] {
		method = otherMethod
	}
	if !m.routes[route] {
		route = unmatchedRoute
	}
	return method, route
}

// observe counts the transitions of one change: a tasks.Observer.
func (m *metrics) observe(_ context.Context, fx tasks.Effects) {
	for _, t := range fx.Transitions {
		if t.Action == tasks.ActionMoved && t.To == "" {
			continue // counted once, as it comes into its new queue
		}
		m.transitions.WithLabelValues(string(t.Action), string(t.To)).Inc()
		if t.Action == tasks.ActionBreached {
			m.breaches.WithLabelValues(t.Queue).Inc()
		}
	}
}

// queueCollector gives every queue's numbers when Prometheus scrapes: its
// jobs per state, how long the job a claim would take next has waited,
// and whether it is paused. It reads what the pages share (the board), so
// a scrape reads again only the queues changed since they were last read,
// or read longer than boardTTL ago.
type queueCollector struct {
	s                               *Server
	jobs, wait, oldest, paused, due *prometheus.Desc
}

// scrapeTimeout bounds the store read of one scrape.
const scrapeTimeout = 5 * time.Second

func newQueueCollector(s *Server) *queueCollector {
	return &queueCollector{
		s: s,
		jobs: prometheus.NewDesc("claimdesk_queue_jobs",
			"Jobs of a queue by state, read at scrape time (ready counts only the claimable; held are ready jobs waiting for a batch slot).",
			[]string{"queue", "state"}, nil),
		wait: prometheus.NewDesc("claimdesk_queue_next_wait_seconds",
			"How long the job a claim of the queue would take next has waited (0 when none is ready).",
			[]string{"queue"}, nil),
		oldest: prometheus.NewDesc("claimdesk_queue_oldest_wait_seconds",
			"How long the queue's oldest ready job (held ones too) has waited (0 when none is ready).",
			[]string{"queue"}, nil),
		paused: prometheus.NewDesc("claimdesk_queue_paused", "1 while the queue is paused.", []string{"queue"}, nil),
		due: prometheus.NewDesc("claimdesk_queue_sla_jobs",
			"Unfinished jobs of a queue past their warn point, before their due time (sla at_risk) or at or past it (breached), counted from the cron job's look past their warn point.",
			[]string{"queue", "sla"}, nil),
	}
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.jobs
	ch <- q.wait
	ch <- q.oldest
	ch <- q.paused
	ch <- q.due
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	qs, err := q.s.boardQueues(ctx)
	if err != nil {
		q.s.storeTrouble("queue metrics not read: this scrape has none", err)
		return
	}
	now := time.Now()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, x := range qs {
		st, name := x.Stats, x.Queue.Name
		for _, c := range []struct {
			state string
			n     int64
		}{{"ready", st.Claimable()}, {"held", st.Held}, {"scheduled", st.Scheduled}, {"reserved", st.Reserved}, {"dead", st.Dead}} {
			gauge(q.jobs, float64(c.n), name, c.state)
		}
		wait := 0.0
		if st.NextWaitingSince != nil && st.Claimable() > 0 {
			wait = max(0, now.Sub(*st.NextWaitingSince).Seconds())
		}
		gauge(q.wait, wait, name)
		if st.OldestWaitingSince != nil {
			gauge(q.oldest, max(0, now.Sub(*st.OldestWaitingSince).Seconds()), name)
		} else if st.Ready == 0 {
			gauge(q.oldest, 0, name)
		}
		paused := 0.0
		if x.Queue.Paused {
			paused = 1
		}
		gauge(q.paused, paused, name)
		gauge(q.due, float64(st.AtRisk), name, string(tasks.SLAAtRisk))
		gauge(q.due, float64(st.Breached), name, string(tasks.SLABreached))
	}
}
