package metrics

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// lagCollector reports, at scrape time, how far the durable consumers the
// process's roles read from are behind.
type lagCollector struct {
	mu        sync.Mutex
	consumers []watched

	pending, ackPending, redelivered *prometheus.Desc
}

// watched is one durable consumer.
type watched struct {
	js               jetstream.JetStream
	stream, consumer string
}

func (c *lagCollector) describe() {
	labels := []string{"stream", "consumer"}
	c.pending = prometheus.NewDesc(namespace+"_consumer_pending_messages",
		"Messages of the stream the durable consumer has not delivered yet: its lag.", labels, nil)
	c.ackPending = prometheus.NewDesc(namespace+"_consumer_ack_pending_messages",
		"Messages the durable consumer delivered and that are not acknowledged yet: in flight.", labels, nil)
	c.redelivered = prometheus.NewDesc(namespace+"_consumer_redelivered_messages",
		"Messages delivered more than once and not acknowledged yet.", labels, nil)
}

// WatchConsumer reports the lag of a durable consumer on the registry's
// /metrics. Watching one consumer twice reports it once.
func (r *Registry) WatchConsumer(js jetstream.JetStream, stream, consumer string) {
	c := r.lag
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.consumers {
		if w.stream == stream && w.consumer == consumer {
			return
		}
	}
	c.consumers = append(c.consumers, watched{js: js, stream: stream, consumer: consumer})
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.ackPending
	ch <- c.redelivered
}

// Collect asks JetStream about each consumer; one that does not answer in
// time is left out of the scrape.
func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	consumers := append([]watched(nil), c.consumers...)
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	for _, w := range consumers {
		// Looking the consumer up fetches its info: one request each.
		cons, err := w.js.Consumer(ctx, w.stream, w.consumer)
		if err != nil {
			continue
		}
		info := cons.CachedInfo()
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(info.NumPending), w.stream, w.consumer)
		ch <- prometheus.MustNewConstMetric(c.ackPending, prometheus.GaugeValue, float64(info.NumAckPending), w.stream, w.consumer)
		ch <- prometheus.MustNewConstMetric(c.redelivered, prometheus.GaugeValue, float64(info.NumRedelivered), w.stream, w.consumer)
	}
}
