// Package metrics holds the Prometheus metrics of the roles, served on each
// role's /metrics. Every name starts with scheduler_; no label carries a
// job, a collection or an occurrence (those are in the logs, the history
// and the traces).
//
// The roles' packages report what happened through small observer
// interfaces of their own; this package implements them, so that counting
// stays at the edges.
package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace starts every metric name.
const namespace = "scheduler"

// scrapeTimeout bounds what one scrape asks of NATS and Redis.
const scrapeTimeout = 2 * time.Second

// Registry is the metrics of one process: the roles it runs register
// their metrics in it. `scheduler dev`, running every role, has one
// Registry for all of them.
type Registry struct {
	reg *prometheus.Registry
	lag *lagCollector

	plannerOnce, workerOnce, historyOnce sync.Once
	planner                              *Planner
	worker                               *Worker
	history                              *History
}

// NewRegistry returns a registry with the Go runtime's and the process's
// metrics.
func NewRegistry() *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), lag: &lagCollector{}}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.lag.describe()
	r.reg.MustRegister(r.lag)
	return r
}

// Handler serves the registry in the Prometheus exposition formats.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// GaugeFuncs registers gauges whose values one function reads at scrape
// time: read returns one value per name, in order, or an error, which
// leaves the gauges out of that scrape.
func (r *Registry) GaugeFuncs(read func(ctx context.Context) ([]float64, error), names, helps []string) {
	r.reg.MustRegister(newFuncCollector(read, names, helps))
}

// latencyBuckets are the buckets of the lateness and duration histograms,
// in seconds: 1 ms to 2 minutes.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// funcCollector reports gauges read at scrape time by one function.
type funcCollector struct {
	read  func(ctx context.Context) ([]float64, error)
	descs []*prometheus.Desc
}

func newFuncCollector(read func(ctx context.Context) ([]float64, error), names, helps []string) *funcCollector {
	c := &funcCollector{read: read}
	for i, name := range names {
		c.descs = append(c.descs, prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), helps[i], nil, nil))
	}
	return c
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	values, err := c.read(ctx)
	if err != nil || len(values) != len(c.descs) {
		return
	}
	for i, d := range c.descs {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, values[i])
	}
}
