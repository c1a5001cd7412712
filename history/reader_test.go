package history

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/internal/transient"
)

// faultyJS is a JetStream whose consumers' fetches fail with no responders
// while fails is above zero, as the first fetch of an ordered consumer just
// created does now and then in a cluster.
type faultyJS struct {
	jetstream.JetStream
	fails   atomic.Int32
	fetches atomic.Int32
}

func (f *faultyJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := f.JetStream.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return &faultyStream{Stream: s, f: f}, nil
}

type faultyStream struct {
	jetstream.Stream
	f *faultyJS
}

func (s *faultyStream) OrderedConsumer(ctx context.Context, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	c, err := s.Stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &faultyConsumer{Consumer: c, f: s.f}, nil
}

type faultyConsumer struct {
	jetstream.Consumer
	f *faultyJS
}

func (c *faultyConsumer) Fetch(batch int, opts ...jetstream.FetchOpt) (jetstream.MessageBatch, error) {
	c.f.fetches.Add(1)
	if c.f.fails.Add(-1) >= 0 {
		return nil, nats.ErrNoResponders
	}
	return c.Consumer.Fetch(batch, opts...)
}

// Regression: GET …/history answered 500 ("nats: no responders available
// for request") when the first fetch of the ordered consumer it had just
// created found no responders.
func TestReadsRetryTransientFaults(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.consumer(t, Config{})
	job := jobRef("flaky")
	for occ := range int64(3) {
		r := result(job, occ+1, 0, contracts.Succeeded)
		e.publish(t, r, r.OccurrenceID)
	}
	e.drained(t, 3)

	t.Run("a read whose first fetch finds no responders is read again", func(t *testing.T) {
		t.Parallel()
		js := &faultyJS{JetStream: e.js}
		js.fails.Store(1)
		entries, err := NewReader(js).List(context.Background(), job)
		if err != nil || len(entries) != 3 {
			t.Fatalf("List: %d entries, %v; want 3", len(entries), err)
		}
		if n := js.fetches.Load(); n < 2 {
			t.Fatalf("%d fetches, want the failed one and another", n)
		}
		js.fails.Store(1)
		tallies, err := NewReader(js).Tallies(context.Background())
		if err != nil || tallies[job.KVKey()].Occurrence != 3 {
			t.Fatalf("Tallies: %v, %v", tallies, err)
		}
	})
	t.Run("a fault that lasts longer than the retry window is returned as transient", func(t *testing.T) {
		t.Parallel()
		js := &faultyJS{JetStream: e.js}
		js.fails.Store(1 << 30)
		r := NewReader(js)
		r.retryWindow = 200 * time.Millisecond
		start := time.Now()
		_, err := r.List(context.Background(), job)
		if !transient.Is(err) {
			t.Fatalf("List: %v, want a transient error", err)
		}
		if took := time.Since(start); took > 2*time.Second || js.fetches.Load() < 2 {
			t.Fatalf("List gave up after %s and %d fetches", took, js.fetches.Load())
		}
	})
	t.Run("an invalid name is refused before any subject is built", func(t *testing.T) {
		t.Parallel()
		js := &faultyJS{JetStream: e.js}
		if _, err := NewReader(js).List(context.Background(), jobRef(strings.Repeat("x", 4050))); err == nil || js.fetches.Load() != 0 {
			t.Fatalf("List of a 4,050-character name: %v after %d fetches", err, js.fetches.Load())
		}
		if err := NewReader(js).Purge(context.Background(), "j."+strings.Repeat("x", 4050)); err == nil {
			t.Fatal("Purge of an over-long key: no error")
		}
	})
}

// cluster starts three NATS servers with JetStream, routed into one
// cluster, and returns them once JetStream has a meta leader.
func cluster(t *testing.T) []*server.Server {
	t.Helper()
	ports := make([]int, 3)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	servers := make([]*server.Server, 3)
	for i := range servers {
		ns, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			JetStream: true, StoreDir: t.TempDir(),
			Cluster: server.ClusterOpts{Name: "history", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		})
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		t.Cleanup(func() {
			ns.Shutdown()
			ns.WaitForShutdown()
		})
		servers[i] = ns
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		for _, ns := range servers {
			if !ns.JetStreamIsCurrent() {
				return false
			}
		}
		return servers[0].JetStreamIsClustered()
	}, "the JetStream cluster did not form")
	return servers
}

// In a calm 3-node cluster, about 1.5% of history reads failed with no
// responders: the first fetch of an ordered consumer just created. None
// fails now.
func TestReadsInAThreeNodeCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node JetStream cluster")
	}
	servers := cluster(t)
	ctx := context.Background()
	_, js := testkit.JetStream(t, servers[0])
	testkit.Eventually(t, 30*time.Second, func() bool {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: contracts.HistoryStream, Subjects: []string{contracts.HistorySubjectPrefix + ">"}, Replicas: 3})
		return err == nil
	}, "the HISTORY stream could not be created")
	job := jobRef("clustered")
	for i := range 3 {
		if _, err := js.Publish(ctx, contracts.HistorySubjectPrefix+job.Tokens(), []byte(fmt.Sprintf(`{"message": "entry %d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	// Read through each server in turn, so that most reads are served by
	// a consumer leader on another server.
	readers := make([]*Reader, len(servers))
	for i, ns := range servers {
		_, js := testkit.JetStream(t, ns)
		readers[i] = NewReader(js)
	}
	for i := range 300 {
		entries, err := readers[i%3].List(ctx, job)
		if err != nil || len(entries) != 3 {
			t.Fatalf("read %d: %d entries, %v", i, len(entries), err)
		}
	}
}
