package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

var (
	testJob = contracts.JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc", Job: "job"}
	t0      = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	quiet   = slog.New(slog.NewTextHandler(io.Discard, nil))
)

// recorder is a Sender that records each attempt it is given and answers
// with outcome; when block is set, an attempt waits for it to close (or for
// its context to end).
type recorder struct {
	mu       sync.Mutex
	attempts []actions.Attempt
	actions  []*contracts.JobAction
	at       []time.Time // when each attempt started
	outcome  actions.Outcome
	block    chan struct{}
	started  chan struct{}
}

func newRecorder() *recorder {
	return &recorder{outcome: actions.Outcome{Succeeded: true, StatusCode: 200, Message: "Http Action - Response from host 'x': 'OK'"},
		started: make(chan struct{}, 100)}
}

func (r *recorder) Send(ctx context.Context, a *contracts.JobAction, at actions.Attempt) actions.Outcome {
	r.mu.Lock()
	r.attempts = append(r.attempts, at)
	r.actions = append(r.actions, a)
	r.at = append(r.at, time.Now())
	block := r.block
	r.mu.Unlock()
	select {
	case r.started <- struct{}{}:
	default: // nobody waits for this many starts
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return actions.Failure("cancelled", ctx.Err())
		}
	}
	return r.outcome
}

func (r *recorder) Close() error { return nil }

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.attempts)
}

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.attempts))
	for i, a := range r.attempts {
		out[i] = a.ID
	}
	return out
}

// first returns when the first attempt started.
func (r *recorder) first() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at[0]
}

// observer is an Observer that counts what it observes.
type observer struct {
	mu       sync.Mutex
	held     int
	maxHeld  int
	started  int
	finished int
	keptBack int // results waiting now
	kept     int // results that waited
	skipped  map[string]int
}

func newObserver() *observer { return &observer{skipped: map[string]int{}} }

func (o *observer) Held(delta int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held += delta
	o.maxHeld = max(o.maxHeld, o.held)
}

func (o *observer) KeptBack(delta int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.keptBack += delta
	if delta > 0 {
		o.kept++
	}
}

func (o *observer) Started() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started++
}

func (o *observer) Finished(*contracts.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished++
}

func (o *observer) Skipped(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.skipped[reason]++
}

func (o *observer) skips(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.skipped[reason]
}

type env struct {
	ns     *server.Server
	js     jetstream.JetStream
	sealer *seal.Sealer
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{ns: testkit.NATS(t)}
	_, e.js = testkit.JetStream(t, e.ns)
	var err error
	if e.sealer, err = seal.New(bytes.Repeat([]byte{5}, 32)); err != nil {
		t.Fatal(err)
	}
	return e
}

// worker starts a worker with its own connection, as another process would.
func (e *env) worker(t *testing.T, sender actions.Sender, tweak func(*Config)) (*Worker, *nats.Conn) {
	t.Helper()
	nc, js := testkit.JetStream(t, e.ns)
	cfg := Config{Sender: sender, Sealer: e.sealer, Logger: quiet, Name: fmt.Sprintf("w%p", nc)}
	if tweak != nil {
		tweak(&cfg)
	}
	w, err := Start(context.Background(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return w, nc
}

// idle returns a worker that does not pull, with its own connection, and
// the consumer it would pull from: the test hands it deliveries itself.
func (e *env) idle(t *testing.T, sender actions.Sender, tweak func(*Config)) (*Worker, jetstream.Consumer) {
	t.Helper()
	nc, js := testkit.JetStream(t, e.ns)
	cfg := Config{Sender: sender, Sealer: e.sealer, Logger: quiet, Name: fmt.Sprintf("w%p", nc)}
	if tweak != nil {
		tweak(&cfg)
	}
	w, cons, err := open(context.Background(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return w, cons
}

// hand gives the worker a delivery as its pull loop would, pulled at
// pulledAt.
func (w *Worker) hand(m jetstream.Msg, pulledAt time.Time) {
	w.slots <- struct{}{}
	w.receive(m, pulledAt)
}

// execution publishes the execution of attempt n of a Basic-authenticated
// HTTP action, sealed as the planner seals it, and returns it.
func (e *env) execution(t *testing.T, n int, tweak func(*contracts.Execution)) contracts.Execution {
	t.Helper()
	due := t0.Add(time.Duration(n) * time.Minute)
	id := contracts.OccurrenceID(testJob, due, contracts.MainAction, 0)
	action := &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{
		URI: "https://example.com/hook", Method: "POST",
		Authentication: &contracts.HTTPAuthentication{Type: contracts.HTTPAuthBasic, Username: "u", Password: "s3cret-pass"},
	}}
	sealed, err := json.Marshal(e.sealer.SealAction(action, id))
	if err != nil {
		t.Fatal(err)
	}
	x := contracts.Execution{
		Version: contracts.MessageVersion, OccurrenceID: id,
		OccurrenceKey: contracts.OccurrenceKey(testJob, due, contracts.MainAction, 0),
		Job:           testJob, ActionName: contracts.MainAction, Occurrence: int64(n), ExpectedTime: due,
		DispatchedAt: due, Action: sealed, Timeout: contracts.MillisOf(time.Minute), Revision: 3, LastAttempt: true,
	}
	if tweak != nil {
		tweak(&x)
	}
	data, _ := json.Marshal(x)
	msg := nats.NewMsg(contracts.ExecSubjectPrefix + testJob.Tokens())
	msg.Data = data
	msg.Header.Set(contracts.TraceParentHeader, contracts.TraceParent(id))
	if _, err := e.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
	return x
}

// ensureStreams creates EXEC and RESULTS as the planner would.
func (e *env) ensureStreams(t *testing.T) {
	t.Helper()
	w, _ := e.worker(t, newRecorder(), nil) // a worker creates them when no planner did
	w.Stop(context.Background())
}

// results returns the result events on RESULTS, by stream order.
func (e *env) results(t *testing.T) []contracts.ResultEvent {
	t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, contracts.ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []contracts.ResultEvent
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		var ev contracts.ResultEvent
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func (e *env) pendingExecutions(t *testing.T) uint64 {
	t.Helper()
	s, err := e.js.Stream(context.Background(), contracts.ExecStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func TestAWorkerPerformsAnExecutionAndPublishesItsResult(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	rec := newRecorder()
	e.worker(t, rec, nil)
	x := e.execution(t, 1, nil)

	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result")
	testkit.Eventually(t, 10*time.Second, func() bool { return e.pendingExecutions(t) == 0 }, "the execution was not acknowledged")

	if rec.count() != 1 {
		t.Fatalf("performed %d times", rec.count())
	}
	at := rec.attempts[0]
	if at.ID != x.OccurrenceID || at.Job != testJob || !at.Expected.Equal(x.ExpectedTime) || at.ActionName != contracts.MainAction {
		t.Errorf("attempt %+v", at)
	}
	if want := "00-" + x.OccurrenceID + "-"; !strings.HasPrefix(at.TraceParent, want) || len(at.TraceParent) != 55 {
		t.Errorf("traceparent %q, want the trace of the occurrence (%s…)", at.TraceParent, want)
	}
	if got := rec.actions[0].Request.Authentication.Password; got != "s3cret-pass" {
		t.Errorf("the sender got the password %q, want it opened", got)
	}

	ev := e.results(t)[0]
	if ev.SpecVersion != "1.0" || ev.ID != x.OccurrenceID || ev.Type != contracts.EventSucceeded ||
		ev.Source != "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/job" ||
		ev.Subject != "20260501T090100Z/MainAction/0" || ev.DataContentType != "application/json" || ev.Time.IsZero() {
		t.Errorf("event attributes %+v", ev)
	}
	r := ev.Data
	if r.Outcome != contracts.Succeeded || r.StatusCode != 200 || r.Occurrence != 1 || r.Revision != 3 || !r.LastAttempt ||
		r.ActionType != contracts.ActionHTTP || r.StartTime.After(r.EndTime) || r.Worker == "" || r.Message == "" {
		t.Errorf("result %+v", r)
	}
}

func TestAnActionThatCannotBeOpenedFailsWithoutBeingPerformed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	other, _ := seal.New(bytes.Repeat([]byte{6}, 32))
	rec := newRecorder()
	e.worker(t, rec, func(c *Config) { c.Sealer = other })
	e.execution(t, 1, nil)
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result")
	r := e.results(t)[0].Data
	if r.Outcome != contracts.Failed || !strings.Contains(r.Message, "encryption key") || strings.Contains(r.Message, "s3cret") {
		t.Fatalf("result %+v", r)
	}
	if rec.count() != 0 {
		t.Fatal("an action that could not be opened was performed")
	}
}

func TestThreeWorkersPerformEachExecutionOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	rec := newRecorder()
	for range 3 {
		e.worker(t, rec, func(c *Config) { c.Concurrency = 4 })
	}
	const n = 300
	for i := range n {
		e.execution(t, i+1, nil)
	}
	testkit.Eventually(t, 30*time.Second, func() bool { return len(e.results(t)) == n }, "%d results of %d", len(e.results(t)), n)
	seen := map[string]int{}
	for _, id := range rec.ids() {
		seen[id]++
	}
	workers := map[string]bool{}
	for _, ev := range e.results(t) {
		workers[ev.Data.Worker] = true
	}
	if len(seen) != n || rec.count() != n {
		t.Fatalf("%d distinct executions performed %d times, want %d once each", len(seen), rec.count(), n)
	}
	if len(workers) != 3 {
		t.Errorf("the executions went to %d workers, want all 3", len(workers))
	}
}

// A worker that dies during an action (its connection gone, nothing
// acknowledged) has the execution delivered again after AckWait, and
// another worker performs it with the same idempotency key.
func TestAnExecutionOfAKilledWorkerIsPerformedAgain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	stuck := newRecorder()
	stuck.block = make(chan struct{}) // never released: the action hangs
	_, nc := e.worker(t, stuck, func(c *Config) { c.AckWait, c.DrainTimeout = time.Second, time.Millisecond })
	x := e.execution(t, 1, nil)
	<-stuck.started
	nc.Close() // the process is gone

	rec := newRecorder()
	e.worker(t, rec, func(c *Config) { c.AckWait = time.Second })
	testkit.Eventually(t, 20*time.Second, func() bool { return len(e.results(t)) == 1 }, "the execution was not performed again")
	if ids := rec.ids(); len(ids) != 1 || ids[0] != x.OccurrenceID || stuck.ids()[0] != x.OccurrenceID {
		t.Fatalf("performed with ids %v after %v, want %s both times", ids, stuck.ids(), x.OccurrenceID)
	}
	if r := e.results(t)[0].Data; r.Outcome != contracts.Succeeded {
		t.Fatalf("result %+v", r)
	}
}

// Stop lets an action finish within the drain timeout; past it, the action
// is cancelled and its execution handed back, for another worker.
func TestStopFinishesOrHandsBackTheWorkInFlight(t *testing.T) {
	t.Parallel()

	t.Run("an action that finishes within the drain timeout is acknowledged", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.ensureStreams(t)
		rec := newRecorder()
		rec.block = make(chan struct{})
		w, _ := e.worker(t, rec, func(c *Config) { c.DrainTimeout = time.Minute })
		e.execution(t, 1, nil)
		<-rec.started
		stopped := make(chan struct{})
		go func() { w.Stop(context.Background()); close(stopped) }()
		close(rec.block)
		<-stopped
		if got := len(e.results(t)); got != 1 {
			t.Fatalf("%d results after a drained stop, want 1", got)
		}
		// The acknowledgement is sent without waiting for an answer.
		testkit.Eventually(t, 10*time.Second, func() bool { return e.pendingExecutions(t) == 0 },
			"%d executions left after a drained stop", e.pendingExecutions(t))
	})

	t.Run("an action still running at the drain timeout is handed back", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.ensureStreams(t)
		rec := newRecorder()
		rec.block = make(chan struct{}) // never released
		w, _ := e.worker(t, rec, func(c *Config) { c.DrainTimeout = 50 * time.Millisecond })
		x := e.execution(t, 1, nil)
		<-rec.started
		w.Stop(context.Background())
		if got := len(e.results(t)); got != 0 {
			t.Fatalf("a cancelled action published %d results", got)
		}
		next := newRecorder()
		e.worker(t, next, nil)
		testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "the handed-back execution was not performed")
		if ids := next.ids(); len(ids) != 1 || ids[0] != x.OccurrenceID {
			t.Fatalf("performed %v", ids)
		}
	})
}

func TestAnExecutionDeliveredTooOftenFailsWithoutBeingPerformed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	rec := newRecorder()
	rec.block = make(chan struct{})
	w, _ := e.worker(t, rec, func(c *Config) { c.DrainTimeout = time.Millisecond; c.MaxDeliveries = 1 })
	e.execution(t, 1, nil)
	<-rec.started
	w.Stop(context.Background()) // handed back: delivered once so far

	after := newRecorder()
	e.worker(t, after, func(c *Config) { c.MaxDeliveries = 1 })
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result")
	r := e.results(t)[0].Data
	if r.Outcome != contracts.Failed || !strings.Contains(r.Message, "delivered 2 times") || after.count() != 0 {
		t.Fatalf("result %+v, performed %d times", r, after.count())
	}
}

// A long action keeps its execution: the worker reports progress, so
// JetStream does not deliver it to another worker after AckWait.
func TestALongActionIsNotDeliveredTwice(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	rec := newRecorder()
	rec.block = make(chan struct{})
	for range 2 {
		e.worker(t, rec, func(c *Config) { c.AckWait = time.Second })
	}
	e.execution(t, 1, nil)
	<-rec.started
	began := time.Now()
	testkit.Eventually(t, 10*time.Second, func() bool { return rec.count() > 1 || time.Since(began) > 3500*time.Millisecond },
		"the action did not run for three and a half AckWaits")
	if n := rec.count(); n != 1 {
		t.Fatalf("the execution was delivered %d times during a long action", n)
	}
	close(rec.block)
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result")
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := Start(context.Background(), e.js, Config{Concurrency: -1})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"Config.Sender is required", "Config.Sealer is required", "Config.Concurrency is -1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
