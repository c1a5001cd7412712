package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// The sizes of the messages of jetStreamCeiling: about those of an HTTP
// action's execution and of its result event.
const (
	ceilingExecutionSize = 600
	ceilingResultSize    = 700
)

// actionCeilings measures, in the same run and on the same cores as an
// action benchmark but with nothing else running, the two things every
// action needs at least: JetStream's part (jetStreamCeiling) and the HTTP
// call to the sink (callsCeiling), each n times. It reports both rates and
// their combined ceiling, 1/(1/jetstream + 1/http): the most actions a
// second when the two are done in turn with nothing else.
func actionCeilings(b *testing.B, ns *server.Server, n int) float64 {
	b.Helper()
	js := jetStreamCeiling(b, ns, n)
	calls := callsCeiling(b, n, 128)
	combined := 1 / (1/js + 1/calls)
	b.ReportMetric(js, "jetstream-ceiling-actions/s")
	b.ReportMetric(calls, "http-ceiling-calls/s")
	b.ReportMetric(combined, "combined-ceiling-actions/s")
	return combined
}

// jetStreamCeiling measures the JetStream work of n actions with nothing
// else running: n execution-sized messages published asynchronously with a
// Nats-Msg-Id each (the planner's publish) to a copy of the EXEC stream,
// consumed by one pull consumer with explicit acks (the workers'), each
// answered by a result-sized message published to a copy of the RESULTS
// stream, then acknowledged. The result events' own consumers (the
// planner's, the history's) are left out, so every action costs JetStream
// at least this. It returns actions per second and reports the CPU per
// action of this process, where the NATS server runs.
func jetStreamCeiling(b *testing.B, ns *server.Server, n int) float64 {
	b.Helper()
	ctx := context.Background()
	_, admin := testkit.JetStream(b, ns)
	copyStream := func(name, prefix string) {
		st, err := admin.Stream(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		cfg := st.CachedInfo().Config
		cfg.Name, cfg.Subjects = "CEILING_"+name, []string{prefix + ".>"}
		if _, err := admin.CreateStream(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = admin.DeleteStream(context.Background(), cfg.Name) })
	}
	copyStream(contracts.ExecStream, "ceiling-exec")
	copyStream(contracts.ResultsStream, "ceiling-result")
	exec, err := admin.Stream(ctx, "CEILING_"+contracts.ExecStream)
	if err != nil {
		b.Fatal(err)
	}
	cons, err := exec.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "ceiling", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 100_000,
	})
	if err != nil {
		b.Fatal(err)
	}
	pubConn, _ := testkit.JetStream(b, ns)
	planner, err := jetstream.New(pubConn, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	workConn, _ := testkit.JetStream(b, ns)
	worker, err := jetstream.New(workConn, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	execution, result := strings.Repeat("e", ceilingExecutionSize), strings.Repeat("r", ceilingResultSize)

	cpu := testkit.StartCPUWindow(b, nil, "jetstream-ceiling-action")
	start := time.Now()
	var handled atomic.Int64
	done := make(chan struct{})
	consuming, err := cons.Consume(func(m jetstream.Msg) {
		r := nats.NewMsg("ceiling-result." + strings.TrimPrefix(m.Subject(), "ceiling-exec."))
		r.Data = []byte(result)
		if _, err := worker.PublishMsgAsync(r, jetstream.WithStallWait(time.Minute)); err != nil {
			b.Error(err)
		}
		if err := m.Ack(); err != nil {
			b.Error(err)
		}
		if handled.Add(1) == int64(n) {
			close(done)
		}
	}, jetstream.PullMaxMessages(256))
	if err != nil {
		b.Fatal(err)
	}
	defer consuming.Stop()
	for i := range n {
		m := nats.NewMsg(fmt.Sprintf("ceiling-exec.sub.rg.c.job-%07d", i))
		m.Data = []byte(execution)
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("ceiling-%07d", i))
		if _, err := planner.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	awaitClosed(b, planner.PublishAsyncComplete(), func() string { return "the executions' acknowledgements did not come" })
	awaitClosed(b, done, func() string { return fmt.Sprintf("%d of %d executions were handled", handled.Load(), n) })
	awaitClosed(b, worker.PublishAsyncComplete(), func() string { return "the results' acknowledgements did not come" })
	elapsed := time.Since(start)
	cpu.Stop(n)
	return float64(n) / elapsed.Seconds()
}

// awaitClosed fails b with what's message unless ch is closed within five
// minutes.
func awaitClosed(b *testing.B, ch <-chan struct{}, what func() string) {
	b.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Minute):
		b.Fatal(what())
	}
}

// callsCeiling measures n HTTP calls, concurrency at a time (a worker's
// default), from this process to a sink in it over connections kept
// alive, with nothing else running. It returns calls per second and
// reports the CPU per call.
func callsCeiling(b *testing.B, n, concurrency int) float64 {
	b.Helper()
	due := time.Now().Add(-time.Second).Truncate(time.Second)
	k := newSink(b, n, func(int) time.Time { return due })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	cpu := testkit.StartCPUWindow(b, nil, "http-ceiling-call")
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := callSink(client, k.URL, i, due); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu.Stop(n)
	k.check(b)
	return float64(n) / elapsed.Seconds()
}
