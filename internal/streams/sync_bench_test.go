package streams

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
)

// BenchmarkPublishExecution measures what JetStream's sync_interval costs
// the publishing of executions: messages of an execution's size (450
// bytes, with a Nats-Msg-Id) to the EXEC stream (file store, its duplicate
// window) with the server's default (sync every two minutes) and with
// sync_interval: always (sync before each acknowledgement), on one
// embedded server (R1) and on a cluster of three embedded servers (R3),
// each with its store in the test's temporary folder, all on this
// machine's one disk. "one-at-a-time" waits for each acknowledgement
// before the next publish (ns/op is the mean latency; p50 and p99 are
// reported); "async" keeps up to 1,000 publishes in flight, as the
// dispatcher does, and reports the messages stored per second.
func BenchmarkPublishExecution(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		for _, mode := range []struct {
			name   string
			always bool
		}{{"sync=default", false}, {"sync=always", true}} {
			name := fmt.Sprintf("R%d/%s", replicas, mode.name)
			b.Run(name+"/one-at-a-time", func(b *testing.B) {
				js, next := benchStream(b, replicas, mode.always)
				ctx := context.Background()
				took := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					if _, err := js.PublishMsg(ctx, next()); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
			})
			b.Run(name+"/async", func(b *testing.B) {
				js, next := benchStream(b, replicas, mode.always)
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					if _, err := js.PublishMsgAsync(next(), jetstream.WithStallWait(time.Minute)); err != nil {
						b.Fatal(err)
					}
				}
				select {
				case <-js.PublishAsyncComplete():
				case <-time.After(5 * time.Minute):
					b.Fatal("the acknowledgements did not come")
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			})
		}
	}
}

// benchStream starts one embedded server, or a cluster of three, creates
// the EXEC stream with that many replicas and returns a JetStream context
// and a maker of execution-sized messages.
func benchStream(b *testing.B, replicas int, syncAlways bool) (jetstream.JetStream, func() *nats.Msg) {
	b.Helper()
	// The cluster's route ports: free ones, held together while they are
	// picked so that none comes twice.
	var routes []*url.URL
	ports := make([]int, replicas)
	if replicas > 1 {
		var held []net.Listener
		for i := range ports {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			held = append(held, l)
			ports[i] = l.Addr().(*net.TCPAddr).Port
			routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
		}
		for _, l := range held {
			l.Close()
		}
	}
	var servers []*server.Server
	for i := range replicas {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: b.TempDir(), SyncAlways: syncAlways, NoLog: true, NoSigs: true,
		}
		if replicas > 1 {
			opts.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: ports[i]}
			opts.Routes = routes
		}
		ns, err := server.NewServer(opts)
		if err != nil {
			b.Fatal(err)
		}
		ns.Start()
		b.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		servers = append(servers, ns)
	}
	for _, ns := range servers {
		if !ns.ReadyForConnections(10 * time.Second) {
			b.Fatal("NATS did not start")
		}
		if got := ns.JetStreamConfig().SyncAlways; got != syncAlways {
			b.Fatalf("SyncAlways is %v", got)
		}
	}
	nc, err := nats.Connect(servers[0].ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1000))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(WithLogger(context.Background(), slog.New(slog.DiscardHandler)), time.Minute)
	defer cancel()
	// A new cluster elects its meta leader first: EnsureExec waits for it.
	if err := EnsureExec(ctx, js, replicas, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 450)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	n := 0
	return js, func() *nats.Msg {
		n++
		m := nats.NewMsg(contracts.ExecSubjectPrefix + "sub.rg.collection.job")
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("sub/rg/collection/job/20260101T000000Z/MainAction/%d", n))
		m.Data = body
		return m
	}
}
