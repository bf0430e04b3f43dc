package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the service's Prometheus registry. Each server gets its own
// registry (no globals), so tests can run several in one process.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics and the Go runtime collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "invoiced_http_requests_total",
			Help: "HTTP requests by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "invoiced_http_request_duration_seconds",
			Help: "HTTP request latency by method and route pattern.",
			// 1 ms to 15 min: our p99 targets are tens of milliseconds,
			// while a chat may run for minutes (a slow model's steps, up
			// to the 9.5 min a run may last).
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 16),
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Middleware records each request under its route pattern (never the raw
// path, which would explode label cardinality with ids).
func (m *Metrics) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			status := strconv.Itoa(c.Response().Status)
			method := methodLabel(c.Request().Method)
			m.requests.WithLabelValues(method, route, status).Inc()
			m.duration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

// methodLabel bounds the method label: a client may send any token as a
// method, and each would otherwise be a new time series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// Handler serves GET /metrics and nothing else, for a listener of its own
// (INVOICED_METRICS_ADDR): per-route counts and pool sizes are for
// operators, not for whoever can reach the API.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	return mux
}

// RegisterPool exports pool statistics (acquired, idle, waiting) so a
// saturated pool shows up before latency does.
func (m *Metrics) RegisterPool(pool *pgxpool.Pool) {
	m.Registry.MustRegister(&poolCollector{pool: pool})
}

type poolCollector struct{ pool *pgxpool.Pool }

var (
	poolAcquired = prometheus.NewDesc("invoiced_db_pool_acquired_conns", "Connections in use.", nil, nil)
	poolIdle     = prometheus.NewDesc("invoiced_db_pool_idle_conns", "Idle connections.", nil, nil)
	poolMax      = prometheus.NewDesc("invoiced_db_pool_max_conns", "Pool size.", nil, nil)
	poolWaits    = prometheus.NewDesc("invoiced_db_pool_empty_acquire_total", "Acquires that had to wait for a connection.", nil, nil)
)

// Describe sends the pool metrics' descriptors (prometheus.Collector).
func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolAcquired
	ch <- poolIdle
	ch <- poolMax
	ch <- poolWaits
}

// Collect sends the pool's statistics as of now (prometheus.Collector).
func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.pool.Stat()
	ch <- prometheus.MustNewConstMetric(poolAcquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
}
