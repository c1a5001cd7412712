package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/actions/builtin"
	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/contracts"
	historyservice "github.com/jobscheduler/scheduler/history/service"
	"github.com/jobscheduler/scheduler/internal/loadtest"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/dispatch"
	"github.com/jobscheduler/scheduler/planner/service"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
	"github.com/jobscheduler/scheduler/worker"
	workerservice "github.com/jobscheduler/scheduler/worker/service"
)

// The action benchmarks run the whole system in this process on the real
// clock: a planner, the history consumer and one or two workers, each role
// with its own NATS connection, on an embedded NATS server (file store) and
// the Redis named by SCHEDULER_TEST_REDIS_URL (miniredis without it, which
// is far slower than a real server). One-time HTTP jobs are written straight
// into the job store, so that neither the API nor the quotas are measured,
// and each calls a local sink that notes when the call arrived. The figures
// run from a job's due time to its call reaching the sink: the planner's
// claim and publish, JetStream, the worker's fetch, decoding and HTTP
// request. The results of the calls are processed (the planner's feedback,
// the history consumer) at the same time, on the same two cores. Run them
// with -benchtime 1x; each reports its figures as metrics. Commands and
// figures are in docs/benchmarks.md.

// quietBeforeDue is how long before the first due time the last job must be
// written. The dispatcher reads a job written less than 10 s before its
// first occurrence from the store once more before publishing it (a job the
// quota check takes back must never fire); the benchmarks measure jobs
// written well ahead, as scheduled jobs are.
const quietBeforeDue = 11 * time.Second

// sink is the HTTP endpoint the benchmarks' jobs call: a loadtest.Sink
// that finds the job's number in its id ("job-0000042" is 42), as the
// jobs are written straight into the store with the sink's URL.
type sink struct {
	*httptest.Server
	*loadtest.Sink
}

// newSink returns a sink for n jobs, job i due at due(i).
func newSink(b *testing.B, n int, due func(i int) time.Time) *sink {
	b.Helper()
	s := &sink{Sink: loadtest.NewSink(loadtest.SinkConfig{Jobs: n, Due: due})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		i, err := strconv.Atoi(strings.TrimPrefix(r.Header.Get(httpaction.HeaderJobID), "job-"))
		due, dueErr := time.ParseInLocation(loadtest.DueLayout, r.Header.Get(httpaction.HeaderExpectedExecutionTime), time.UTC)
		if err != nil || dueErr != nil {
			i = -1 // stray
		}
		s.Record(i, due, at)
	}))
	b.Cleanup(s.Close)
	return s
}

// wait waits until every job called, then checks that each called exactly
// once, and nothing else did.
func (s *sink) wait(b *testing.B, within time.Duration) {
	b.Helper()
	select {
	case <-s.AllCalled():
	case <-time.After(within):
		b.Fatalf("only %d of the %d jobs called the sink", s.Called(), s.Jobs())
	}
	s.check(b)
}

// check fails the benchmark unless every job called exactly once and no
// other request came.
func (s *sink) check(b *testing.B) {
	b.Helper()
	r := s.Results()
	if len(r.Lost) > 0 || r.Duplicates > 0 || r.Stray > 0 || r.OtherOccurrences > 0 {
		b.Fatalf("of %d jobs, %d never called (first %v) and %d calls came twice; %d stray requests, %d for other due times",
			r.Jobs, len(r.Lost), r.Lost[:min(len(r.Lost), 5)], r.Duplicates, r.Stray, r.OtherOccurrences)
	}
}

// report reports the percentiles of the calls' lateness (arrival − due
// time, nearest rank) and, with rate, the actions per second from the
// first due time to the last call. A call before its due time fails the
// benchmark.
func (s *sink) report(b *testing.B, rate bool) {
	b.Helper()
	r := s.Results()
	if len(r.Early) > 0 {
		b.Fatalf("%d jobs were called before their due time, first job-%07d", len(r.Early), r.Early[0])
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	if rate {
		b.ReportMetric(r.CallsPerSecond(), "actions/s")
	}
	b.ReportMetric(ms(r.Lateness.P50), "p50-late-ms")
	b.ReportMetric(ms(r.Lateness.P90), "p90-late-ms")
	b.ReportMetric(ms(r.Lateness.P99), "p99-late-ms")
	b.ReportMetric(ms(r.Lateness.Max), "max-late-ms")
}

// callsAlone measures the floor of the steady figure in the same run: n
// HTTP calls due at one instant, each waiting for it on a goroutine of its
// own as a held execution does, made concurrency at a time (a worker's
// default) from this process to a sink in it over connections kept alive,
// with nothing else running; rounds instants a second apart. It returns
// the calls' p99 lateness.
func callsAlone(b *testing.B, n, concurrency, rounds int) time.Duration {
	b.Helper()
	first := time.Now().Add(2 * time.Second).Truncate(time.Second)
	due := func(i int) time.Time { return first.Add(time.Duration(i/n) * time.Second) }
	k := newSink(b, n*rounds, due)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	slots := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for r := range rounds {
		instant := due(r * n)
		go1 := make(chan struct{})
		for i := r * n; i < (r+1)*n; i++ {
			wg.Go(func() {
				<-go1
				slots <- struct{}{}
				defer func() { <-slots }()
				if err := callSink(client, k.URL, i, instant); err != nil {
					b.Error(err)
				}
			})
		}
		<-time.After(time.Until(instant))
		close(go1)
		wg.Wait()
	}
	k.check(b)
	r := k.Results()
	if len(r.Early) > 0 {
		b.Fatalf("%d calls before their instant", len(r.Early))
	}
	return r.Lateness.P99
}

// callSink makes the call of job i due at due to the sink at url, as a
// worker's HTTP action would.
func callSink(client *http.Client, url string, i int, due time.Time) error {
	req, err := http.NewRequest(http.MethodPost, url+"/hook", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set(httpaction.HeaderJobID, fmt.Sprintf("job-%07d", i))
	req.Header.Set(httpaction.HeaderExpectedExecutionTime, due.UTC().Format(loadtest.DueLayout))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// benchSystem is a running scheduler on the real clock, with the job store
// and the timer open beside it.
type benchSystem struct {
	planner *service.Service
	js      jetstream.JetStream
	store   *store.Store
	timer   *timer.Index
	rdb     redis.UniversalClient
	ns      *server.Server
}

// startBench runs a planner with its defaults (2 s lookahead, executions
// published 500 ms ahead, a burst as soon as claimed) but for
// publishAhead, the history consumer and the given number of workers,
// each holding hold executions (0: the default), each with its own NATS
// connection and HTTP actions allowed to reach loopback.
func startBench(b *testing.B, workers, hold int, publishAhead time.Duration) *benchSystem {
	b.Helper()
	ctx := context.Background()
	ns := testkit.NATS(b)
	rdb, prefix, mr := testkit.Redis(b)
	redisURL := testkit.RedisURL()
	if mr != nil {
		redisURL = "redis://" + mr.Addr()
	}
	key := make([]byte, seal.KeySize)
	_, _ = rand.Read(key)

	hist, err := historyservice.Start(ctx, historyservice.Config{NATSURL: ns.ClientURL(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { hist.Stop(context.Background()) })
	p, err := service.Start(ctx, service.Config{
		NATSURL: ns.ClientURL(), RedisURL: redisURL, RedisPrefix: prefix,
		Listen: "127.0.0.1:0", EncryptionKey: key, Logger: quiet, PublishAhead: publishAhead,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Stop(context.Background()) })
	for i := range workers {
		w, err := workerservice.Start(ctx, workerservice.Config{
			NATSURL: ns.ClientURL(), EncryptionKey: key, Logger: quiet,
			Actions: builtin.Config{HTTP: httpaction.Config{AllowLoopback: true}},
			Worker:  worker.Config{Name: fmt.Sprintf("bench-worker-%d", i+1), Hold: hold},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Stop(context.Background()) })
	}
	testkit.Eventually(b, time.Minute, p.Ready, "the planner did not become ready")

	_, js := testkit.JetStream(b, ns)
	sealer, err := seal.New(key)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(ctx, js, store.Config{Sealer: sealer})
	if err != nil {
		b.Fatal(err)
	}
	ix, err := timer.New(rdb, timer.Config{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	return &benchSystem{planner: p, js: js, store: st, timer: ix, rdb: rdb, ns: ns}
}

// importJobs writes n one-time jobs, job i due at due(i), each a POST to
// url, in collections of 1,000 jobs; then it waits until the planner has
// scheduled them all, and fails when that left less than quietBeforeDue
// (for the writing) or a second (for the scheduling) before first.
func (s *benchSystem) importJobs(b *testing.B, n int, url string, first time.Time, due func(i int) time.Time) {
	b.Helper()
	err := loadtest.ImportJobs(context.Background(), s.store, n, time.Now(), func(i int) string {
		return fmt.Sprintf(`{"startTime": %q, "action": {"type": "Http", "request": {"uri": %q, "method": "POST"}}}`,
			due(i).UTC().Format(time.RFC3339), url)
	})
	if err != nil {
		b.Fatal(err)
	}
	if left := time.Until(first); left < quietBeforeDue {
		b.Fatalf("writing %d jobs left %s before the first due time, want at least %s: start further ahead", n, left.Round(time.Millisecond), quietBeforeDue)
	}
	testkit.Eventually(b, time.Until(first)-time.Second, func() bool {
		got, err := s.timer.Len(context.Background())
		return err == nil && got == int64(n) && s.planner.Ready()
	}, "the planner did not schedule the %d jobs a second before the first was due", n)
}

// waitSettled waits until every result of n calls is stored and both of
// its consumers, the planner's feedback and the history consumer, have
// processed them all; it returns when that happened.
func (s *benchSystem) waitSettled(b *testing.B, n int, within time.Duration) time.Time {
	b.Helper()
	ctx := context.Background()
	settled := func() bool {
		st, err := s.js.Stream(ctx, contracts.ResultsStream)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		if err != nil || info.State.LastSeq < uint64(n) {
			return false
		}
		for _, name := range []string{contracts.PlannerConsumer, contracts.HistoryConsumer} {
			c, err := st.Consumer(ctx, name)
			if err != nil {
				return false
			}
			ci, err := c.Info(ctx)
			if err != nil || ci.NumPending > 0 || ci.NumAckPending > 0 || ci.AckFloor.Stream < info.State.LastSeq {
				return false
			}
		}
		return true
	}
	// Polled every 20 ms: each look is three JetStream API requests.
	deadline := time.Now().Add(within)
	for !settled() {
		if time.Now().After(deadline) {
			b.Fatalf("after %s the results of %d calls were not all processed", within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Now()
}

// BenchmarkActionsBurst: 20,000 one-time HTTP jobs due at the same
// instant, with one and with two workers holding the default
// (worker.DefaultHold) executions each, and with two holding 20,000 each.
// Reports the actions per second from the due time to the last call, the
// calls' lateness, how long after the due time every result was
// processed, and the CPU each action cost from the import to then: this
// process's (every role and the NATS server) and the Redis server's. With
// SCHEDULER_BENCH_PROFILE=<prefix> it writes a CPU profile of that window.
// Before the jobs are written it measures the ceilings of the run
// (actionCeilings), and reports the actions per second as a fraction of
// their combined ceiling. With SCHEDULER_BENCH_TIMELINE=1 it logs where
// the burst's time went (see startTimeline).
func BenchmarkActionsBurst(b *testing.B) {
	const n = 20_000
	for _, run := range []struct{ workers, hold int }{{1, 0}, {2, 0}, {2, n}} {
		name := fmt.Sprintf("workers=%d", run.workers)
		if run.hold != 0 {
			name += fmt.Sprintf("/hold=%d", run.hold)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s := startBench(b, run.workers, run.hold, 0)
				ceiling := actionCeilings(b, s.ns, n)
				due := time.Now().Add(25 * time.Second).Truncate(time.Second)
				k := newSink(b, n, func(int) time.Time { return due })
				s.importJobs(b, n, k.URL+"/hook", due, func(int) time.Time { return due })
				cpu := testkit.StartCPUWindow(b, s.rdb, "action")
				tl := startTimeline(b, s.js, due, k.Called)
				k.wait(b, time.Until(due)+5*time.Minute)
				k.report(b, true)
				b.ReportMetric(k.Results().CallsPerSecond()/ceiling, "of-combined-ceiling")
				settled := s.waitSettled(b, n, 5*time.Minute)
				cpu.Stop(n)
				tl.end(b)
				b.ReportMetric(settled.Sub(due).Seconds(), "s-to-settle")
				k.check(b)
			}
		})
	}
}

// BenchmarkActionsSteady: 1,000 one-time HTTP jobs due at each whole second
// for 30 seconds, with one and with two workers, with executions published
// ahead of their due time and held by the workers until then (the default)
// and published at it. Reports the calls' lateness, and how long after the
// last due time every result was processed.
func BenchmarkActionsSteady(b *testing.B) {
	const perSecond, seconds = 1000, 30
	for _, ahead := range []time.Duration{0, -1} {
		for _, workers := range []int{1, 2} {
			name := fmt.Sprintf("ahead=%s/workers=%d", dispatch.DefaultPublishAhead, workers)
			if ahead < 0 {
				name = fmt.Sprintf("ahead=0/workers=%d", workers)
			}
			b.Run(name, func(b *testing.B) { actionsSteady(b, perSecond, seconds, workers, ahead) })
		}
	}
}

func actionsSteady(b *testing.B, perSecond, seconds, workers int, ahead time.Duration) {
	for b.Loop() {
		alone := callsAlone(b, perSecond, 128, 5)
		b.ReportMetric(float64(alone)/float64(time.Millisecond), "alone-p99-ms")
		s := startBench(b, workers, 0, ahead)
		first := time.Now().Add(25 * time.Second).Truncate(time.Second)
		due := func(i int) time.Time { return first.Add(time.Duration(i/perSecond) * time.Second) }
		k := newSink(b, perSecond*seconds, due)
		s.importJobs(b, perSecond*seconds, k.URL+"/hook", first, due)
		k.wait(b, time.Until(first)+time.Duration(seconds)*time.Second+5*time.Minute)
		k.report(b, false)
		settled := s.waitSettled(b, perSecond*seconds, 5*time.Minute)
		b.ReportMetric(settled.Sub(due(perSecond*seconds-1)).Seconds(), "s-to-settle")
		k.check(b)
	}
}
