package e2e

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/actions/builtin"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/history"
	historyservice "github.com/jobscheduler/scheduler/history/service"
	"github.com/jobscheduler/scheduler/internal/metrics"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/internal/tracing"
	"github.com/jobscheduler/scheduler/planner/service"
	"github.com/jobscheduler/scheduler/worker"
	workerservice "github.com/jobscheduler/scheduler/worker/service"
)

// t0 is when every test's clock starts.
var t0 = time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// options shape a system.
type options struct {
	// workers is how many in-process workers run. Defaults to 1.
	workers int
	// actions configures the workers' senders; HTTP actions may always
	// reach loopback.
	actions builtin.Config
	// ackWait is the workers' AckWait. Defaults to the worker's default.
	ackWait time.Duration
	// historyPerJob bounds the entries kept per job. Defaults to 1000.
	historyPerJob int64
	// redisCluster is the URL of a Redis Cluster for the planner, instead
	// of the tests' Redis. Defaults to none.
	redisCluster string
	// otlp is the OTLP endpoint the planner and the workers export traces
	// to. Defaults to none.
	otlp string
}

// system is a running scheduler: planner, workers and history consumer.
type system struct {
	t       *testing.T
	clock   *testkit.Clock
	ns      *server.Server
	js      jetstream.JetStream
	key     []byte
	planner *service.Service
	workers []*workerservice.Service
	// api is the API's root URL; base the URL of the collection "jc".
	api, base string
	redis     redisConfig
	// metrics is every role's registry, served on the planner's /metrics.
	metrics *metrics.Registry
}

type redisConfig struct {
	url, prefix string
	cluster     bool
}

// start runs a system whose planner and workers keep the test's clock, and
// creates the job collection "jc".
func start(t *testing.T, opts options) *system {
	t.Helper()
	ctx := context.Background()
	s := &system{t: t, clock: testkit.NewClock(t0), ns: testkit.NATS(t), key: make([]byte, 32), metrics: metrics.NewRegistry()}
	_, _ = rand.Read(s.key)
	_, s.js = testkit.JetStream(t, s.ns)
	_, prefix, mr := testkit.Redis(t)
	s.redis = redisConfig{url: testkit.RedisURL(), prefix: prefix}
	if mr != nil {
		s.redis.url = "redis://" + mr.Addr()
	}
	if opts.redisCluster != "" {
		s.redis = redisConfig{url: opts.redisCluster, prefix: prefix, cluster: true}
	}

	hist, err := historyservice.Start(ctx, historyservice.Config{NATSURL: s.ns.ClientURL(), Logger: quiet, Metrics: s.metrics,
		History: history.Config{Retention: streams.HistoryConfig{MaxPerJob: opts.historyPerJob}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hist.Stop(context.Background()) })
	s.startPlanner(t, opts)
	for range max(opts.workers, 1) {
		s.addWorker(t, opts)
	}
	s.base = s.api + "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc"
	if code, body := testkit.Call(t, "PUT", s.base+"?api-version=2016-03-01", `{"properties": {"sku": {"name": "Standard"}}}`); code != http.StatusCreated {
		t.Fatalf("creating the collection: %d %s", code, body)
	}
	return s
}

// startPlanner starts a planner on the system's clock, dispatching the
// moment an occurrence is due on it.
func (s *system) startPlanner(t *testing.T, opts options) {
	t.Helper()
	p, err := service.Start(context.Background(), service.Config{
		NATSURL: s.ns.ClientURL(), RedisURL: s.redis.url, RedisPrefix: s.redis.prefix, RedisCluster: s.redis.cluster,
		Listen: "127.0.0.1:0", EncryptionKey: s.key, Lease: 2 * time.Second,
		Lookahead: time.Nanosecond, MaxIdle: 20 * time.Millisecond, Now: s.clock.Now, Logger: quiet,
		Metrics: s.metrics, Tracing: tracingConfig(opts),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.Background()) })
	testkit.Eventually(t, 30*time.Second, p.Ready, "the planner did not become ready")
	s.planner, s.api = p, "http://"+p.Addr()
}

// tracingConfig exports spans to opts.otlp at once.
func tracingConfig(opts options) tracing.Config {
	return tracing.Config{Endpoint: opts.otlp, BatchTimeout: 10 * time.Millisecond}
}

// addWorker starts one more in-process worker.
func (s *system) addWorker(t *testing.T, opts options) *workerservice.Service {
	t.Helper()
	actions := opts.actions
	actions.AllowLoopback = true
	w, err := workerservice.Start(context.Background(), workerservice.Config{
		NATSURL: s.ns.ClientURL(), EncryptionKey: s.key, Actions: actions, Logger: quiet, Metrics: s.metrics,
		Tracing: tracingConfig(opts),
		Worker: worker.Config{Now: s.clock.Now, AckWait: opts.ackWait, DrainTimeout: 100 * time.Millisecond,
			Name: fmt.Sprintf("worker-%d", len(s.workers)+1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	s.workers = append(s.workers, w)
	return w
}

// tick moves the clock and has the planner look at the timer at once.
func (s *system) tick(d time.Duration) {
	s.clock.Advance(d)
	s.planner.Wake()
}

// put creates or replaces job name from its JSON definition.
func (s *system) put(name, definition string) contracts.JobDefinition {
	s.t.Helper()
	code, body := testkit.Call(s.t, "PUT", s.base+"/jobs/"+name+"?api-version=2016-03-01", definition)
	if code != http.StatusCreated && code != http.StatusOK {
		s.t.Fatalf("PUT job %s: %d %s", name, code, body)
	}
	var j contracts.JobDefinition
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		s.t.Fatal(err)
	}
	return j
}

// job returns job name as the API shows it.
func (s *system) job(name string) contracts.JobDefinition {
	s.t.Helper()
	code, body := testkit.Call(s.t, "GET", s.base+"/jobs/"+name+"?api-version=2016-03-01", "")
	if code != http.StatusOK {
		s.t.Fatalf("GET job %s: %d %s", name, code, body)
	}
	var j contracts.JobDefinition
	if err := json.Unmarshal([]byte(body), &j); err != nil {
		s.t.Fatal(err)
	}
	return j
}

// waitJob waits until job name satisfies cond and returns it.
func (s *system) waitJob(name string, cond func(contracts.JobDefinition) bool, what string) contracts.JobDefinition {
	s.t.Helper()
	var j contracts.JobDefinition
	testkit.Eventually(s.t, 30*time.Second, func() bool { j = s.job(name); return cond(j) }, "job %s: %s; it is %+v", name, what, &j)
	return j
}

// executions returns the job's executionCount.
func executions(j contracts.JobDefinition) int {
	if j.Properties.Status == nil {
		return 0
	}
	return j.Properties.Status.ExecutionCount
}

// waitUpcoming waits until the planner holds a run of job name due at due,
// as GET …/upcoming lists it, so that moving the clock past due cannot
// overtake the planner's scheduling of it.
func (s *system) waitUpcoming(name string, due time.Time) {
	s.t.Helper()
	var page struct {
		Value []struct {
			Job string    `json:"job"`
			Due time.Time `json:"due"`
		} `json:"value"`
	}
	testkit.Eventually(s.t, 30*time.Second, func() bool {
		code, body := testkit.Call(s.t, "GET", s.base+"/upcoming?api-version=2016-03-01", "")
		if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
			s.t.Fatalf("GET upcoming: %d %s", code, body)
		}
		for _, r := range page.Value {
			if r.Job == name && r.Due.Equal(due) {
				return true
			}
		}
		return false
	}, "job %s has no run due at %v; upcoming: %+v", name, due, &page)
}

// history lists job name's history with the query ("$top=2", …).
func (s *system) history(name, query string) contracts.JobHistoryListResult {
	s.t.Helper()
	u := s.base + "/jobs/" + name + "/history?api-version=2016-03-01"
	if query != "" {
		u += "&" + strings.ReplaceAll(query, " ", "%20")
	}
	code, body := testkit.Call(s.t, "GET", u, "")
	if code != http.StatusOK {
		s.t.Fatalf("GET history of %s: %d %s", name, code, body)
	}
	var h contracts.JobHistoryListResult
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		s.t.Fatal(err)
	}
	return h
}

// waitHistory waits until job name has n history entries and returns them.
func (s *system) waitHistory(name string, n int) []contracts.JobHistoryDefinitionProperties {
	s.t.Helper()
	var h contracts.JobHistoryListResult
	testkit.Eventually(s.t, 30*time.Second, func() bool { h = s.history(name, ""); return len(h.Value) >= n },
		"job %s has %d history entries, want %d", name, len(h.Value), n)
	if len(h.Value) != n {
		s.t.Fatalf("job %s has %d history entries, want %d", name, len(h.Value), n)
	}
	out := make([]contracts.JobHistoryDefinitionProperties, n)
	for i, v := range h.Value {
		out[i] = v.Properties
	}
	return out
}

// call is one request a target received.
type call struct {
	path   string
	header http.Header
	body   string
	// at is the system's clock when it arrived.
	at time.Time
}

// target is a local HTTP endpoint that records its calls and answers each
// path's nth call (from 0) with respond.
type target struct {
	*httptest.Server
	mu      sync.Mutex
	calls   []call
	respond func(path string, n int) int
}

func newTarget(t *testing.T, clock *testkit.Clock, respond func(path string, n int) int) *target {
	t.Helper()
	tg := &target{respond: respond}
	if tg.respond == nil {
		tg.respond = func(string, int) int { return http.StatusOK }
	}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tg.mu.Lock()
		n := 0
		for _, c := range tg.calls {
			if c.path == r.URL.Path {
				n++
			}
		}
		tg.calls = append(tg.calls, call{path: r.URL.Path, header: r.Header.Clone(), body: string(body), at: clock.Now()})
		tg.mu.Unlock()
		w.WriteHeader(tg.respond(r.URL.Path, n))
		fmt.Fprintf(w, "answer %d to %s", n, r.URL.Path)
	}))
	t.Cleanup(tg.Close)
	return tg
}

// callsTo returns the calls to path so far.
func (tg *target) callsTo(path string) []call {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	var out []call
	for _, c := range tg.calls {
		if c.path == path {
			out = append(out, c)
		}
	}
	return out
}

// waitCalls waits until path has had n calls and returns them.
func (tg *target) waitCalls(t *testing.T, path string, n int) []call {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() bool { return len(tg.callsTo(path)) >= n },
		"%s was called %d times, want %d", path, len(tg.callsTo(path)), n)
	return tg.callsTo(path)
}

// host returns the target's host name, as history messages name it.
func (tg *target) host() string {
	u, _ := url.Parse(tg.URL)
	return u.Hostname()
}

// httpJob returns the definition of a job calling uri, with extra JSON
// members of "properties" and of "action" appended.
func httpJob(uri, action, properties string) string {
	return fmt.Sprintf(`{"properties": {"action": {"type": "Http", "request": {"uri": %q, "method": "POST", "body": "hello"}%s}%s}}`,
		uri, action, properties)
}
