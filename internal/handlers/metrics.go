package handlers

import (
	"context"

	"claimdesk/internal/tasks"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// transitions counts the engine's transitions by action (Observe).
	transitions *prometheus.CounterVec
	sockets     prometheus.Gauge
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
	}
	reg.MustRegister(m.requests, m.latency, m.transitions, m.sockets,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe counts the transitions of one change: a tasks.Observer.
func (m *metrics) observe(_ context.Context, fx tasks.Effects) {
	for _, t := range fx.Transitions {
		m.transitions.WithLabelValues(string(t.Action), string(t.To)).Inc()
	}
}
