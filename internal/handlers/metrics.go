package handlers

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	actions  *prometheus.CounterVec
	sockets  prometheus.Gauge
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
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "claimdesk_job_actions_total", Help: "Job actions by action and outcome.",
		}, []string{"action", "outcome"}),
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "claimdesk_websockets", Help: "Open websocket connections.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.actions, m.sockets,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
