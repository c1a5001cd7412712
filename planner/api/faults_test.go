package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/store"
)

// restartableNATS starts a NATS server and returns it with a function that
// starts it again, on the same port and store, once it was shut down.
func restartableNATS(t *testing.T) (*server.Server, func()) {
	t.Helper()
	dir := t.TempDir()
	ns := testkit.NATSIn(t, dir)
	port := ns.Addr().(*net.TCPAddr).Port
	return ns, func() {
		again, err := server.NewServer(&server.Options{
			Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
		})
		if err != nil {
			t.Errorf("starting NATS again: %v", err)
			return
		}
		again.Start()
		t.Cleanup(func() {
			again.Shutdown()
			again.WaitForShutdown()
		})
		if !again.ReadyForConnections(10 * time.Second) {
			t.Error("NATS did not become ready again")
		}
	}
}

// wantUnavailable checks a 503 with Retry-After and an ARM body.
func wantUnavailable(t *testing.T, r response, what string) {
	t.Helper()
	if r.status != http.StatusServiceUnavailable || r.errorCode(t) != codeUnavailable || r.header.Get("Retry-After") != "2" {
		t.Errorf("%s: %d, Retry-After %q, want 503 %s with Retry-After 2: %s", what, r.status, r.header.Get("Retry-After"), codeUnavailable, r.body)
	}
	// The cause is logged, not sent: it names NATS, KV keys and servers.
	for _, internal := range []string{"nats", "c.sub1", "j.sub1", "deadline", "127.0.0.1"} {
		if strings.Contains(strings.ToLower(string(r.body)), internal) {
			t.Errorf("%s: the 503 carries internals (%q): %s", what, internal, r.body)
		}
	}
}

// A NATS server gone under a running API: every route retries, then
// answers 503 with Retry-After, never 500.
func TestNATSDownAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	b := setupWith(t, testkit.NATS(t), Config{RetryWindow: 300 * time.Millisecond, History: &fakeHistory{}})
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/calendars/h", calendarBody)
	b.ns.Shutdown()
	b.ns.WaitForShutdown()

	for _, tt := range []struct{ method, path, body string }{
		{"GET", base + "/jc/calendars", ""},
		{"GET", base + "/jc/calendars/h", ""},
		{"PUT", base + "/jc/calendars/h", calendarBody},
		{"PATCH", base + "/jc/calendars/h", `{"properties": {"description": "x"}}`},
		{"DELETE", base + "/jc/calendars/h", ""},
		{"GET", base + "/jc/jobs/j", ""},
		{"PUT", base + "/jc/jobs/j", weeklyJob},
		{"PUT", base + "/jc/jobs/new", weeklyJob},
		{"PATCH", base + "/jc/jobs/j", `{"properties": {"state": "Disabled"}}`},
		{"DELETE", base + "/jc/jobs/j", ""},
		{"POST", base + "/jc/jobs/j/run", ""},
		{"GET", base + "/jc/jobs/j/preview", ""},
		{"GET", base + "/jc/jobs/j/history", ""},
		{"GET", base + "/jc/jobs", ""},
		{"GET", base + "/jc", ""},
		{"PUT", base + "/jc", collectionBody},
		{"PATCH", base + "/jc", `{"tags": {"env": "prod"}}`},
		{"DELETE", base + "/jc", ""},
		{"POST", base + "/jc/enable", ""},
		{"POST", base + "/jc/disable", ""},
		{"GET", base, ""},
		{"GET", "/subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections", ""},
	} {
		t.Run(tt.method+" "+strings.TrimPrefix(tt.path, base), func(t *testing.T) {
			t.Parallel()
			wantUnavailable(t, b.do(t, tt.method, tt.path, tt.body), tt.method+" "+tt.path)
		})
	}
}

// A NATS server that comes back within the retry window: the requests that
// met it gone answer as if nothing happened.
func TestNATSBackWithinTheRetryWindowAnswers200(t *testing.T) {
	t.Parallel()
	ns, restart := restartableNATS(t)
	retried := make(chan error, 64)
	b := setupWith(t, ns, Config{RetryWindow: 20 * time.Second}, func(b *bundle) { b.api.retried = retried })
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)
	ns.Shutdown()
	ns.WaitForShutdown()

	var wg sync.WaitGroup
	answers := make([]response, 3)
	for i, req := range []struct{ method, path, body string }{
		{"GET", base + "/jc/jobs/j", ""},
		{"PUT", base + "/jc/jobs/created", weeklyJob},
		{"GET", base + "/jc/jobs", ""},
	} {
		wg.Go(func() { answers[i] = b.do(t, req.method, req.path, req.body) })
	}
	for range 3 { // each request met the fault
		select {
		case <-retried:
		case <-time.After(15 * time.Second):
			t.Fatal("no request retried a fault")
		}
	}
	restart()
	wg.Wait()
	for i, want := range []int{http.StatusOK, http.StatusCreated, http.StatusOK} {
		if answers[i].status != want {
			t.Errorf("request %d: %d, want %d: %s", i, answers[i].status, want, answers[i].body)
		}
	}
	b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/created", "")
}

// redisScheduling keeps runs and the jobs' status in Redis, as the
// planner's timer does, so that a Redis server that is down fails them
// with the real client's errors.
type redisScheduling struct{ rdb *redis.Client }

func (s redisScheduling) Runtimes(ctx context.Context, refs []contracts.JobRef) ([]time.Time, []contracts.Tally, error) {
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = "next:" + r.KVKey()
	}
	if err := s.rdb.MGet(ctx, keys...).Err(); err != nil {
		return nil, nil, err
	}
	return make([]time.Time, len(refs)), make([]contracts.Tally, len(refs)), nil
}

func (s redisScheduling) Pending(ctx context.Context, refs []contracts.JobRef) ([][]TimerEntry, []contracts.Tally, error) {
	_, tallies, err := s.Runtimes(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	return make([][]TimerEntry, len(refs)), tallies, nil
}

func (s redisScheduling) Scheduled(ctx context.Context, ref contracts.JobRef) (time.Time, int64, bool, error) {
	err := s.rdb.Get(ctx, "next:"+ref.KVKey()).Err()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, 0, false, nil
	}
	return time.Time{}, 0, false, err
}

func (s redisScheduling) ExecutionCounts(ctx context.Context, cols []contracts.CollectionRef, _, _ time.Time) ([]MinuteExecutions, error) {
	if err := s.rdb.Get(ctx, "executions").Err(); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	return nil, nil
}

func (s redisScheduling) Backfill(ctx context.Context, j store.Job, start, end time.Time) (BackfillPlan, error) {
	return BackfillPlan{}, s.rdb.RPush(ctx, "backfills", j.Ref.KVKey()).Err()
}

func (s redisScheduling) RunNow(ctx context.Context, j store.Job) error {
	return s.rdb.RPush(ctx, "runs", j.Ref.KVKey()).Err()
}

// Redis down: the job reads still answer (the status falls back on the
// definitions), a run answers 503; a Redis back within the retry window
// takes the run, once.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // Redis is down: nothing listens there
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })

	b := setupWith(t, testkit.NATS(t), Config{RetryWindow: 300 * time.Millisecond}, func(b *bundle) { b.api.sched = redisScheduling{rdb} })
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)

	t.Run("the job reads answer from the definitions", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/j", "")
		if !strings.Contains(string(r.body), `"nextExecutionTime":"2016-04-04T05:00:00Z"`) {
			t.Errorf("status from the definition: %s", r.body)
		}
		b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs", "")
		b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/j/preview", "")
	})
	t.Run("a run answers 503", func(t *testing.T) {
		wantUnavailable(t, b.do(t, "POST", base+"/jc/jobs/j/run", ""), "run")
	})
	t.Run("the execution counts answer 503", func(t *testing.T) {
		wantUnavailable(t, b.do(t, "GET", base+"/jc/executionCounts", ""), "execution counts")
	})
	t.Run("a Redis back within the retry window takes the run once", func(t *testing.T) {
		retried := make(chan error, 64)
		slow := setupWith(t, testkit.NATS(t), Config{RetryWindow: 20 * time.Second}, func(b *bundle) {
			b.api.sched, b.api.retried = redisScheduling{rdb}, retried
		})
		slow.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
		slow.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)
		done := make(chan response)
		go func() { done <- slow.do(t, "POST", base+"/jc/jobs/j/run", "") }()
		select {
		case <-retried:
		case <-time.After(15 * time.Second):
			t.Fatal("the run did not retry")
		}
		mr := miniredis.NewMiniRedis()
		if err := mr.StartAddr(addr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(mr.Close)
		if r := <-done; r.status != http.StatusOK {
			t.Fatalf("run: %d %s", r.status, r.body)
		}
		if runs, err := mr.List("runs"); err != nil || len(runs) != 1 {
			t.Fatalf("runs in Redis: %v %v, want one", runs, err)
		}
	})
}

// fakeHistory answers every history read with the error set.
type fakeHistory struct {
	mu  sync.Mutex
	err error
}

func (h *fakeHistory) set(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

func (h *fakeHistory) List(context.Context, contracts.JobRef) ([]contracts.HistoryEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return nil, h.err
}

func TestHistoryFaults(t *testing.T) {
	t.Parallel()
	hist := &fakeHistory{}
	b := setupWith(t, testkit.NATS(t), Config{RetryWindow: 100 * time.Millisecond, History: hist})
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)
	hist.set(fmt.Errorf("reading the history of sub1/rg1/jc/j: %w", nats.ErrNoResponders))
	wantUnavailable(t, b.do(t, "GET", base+"/jc/jobs/j/history", ""), "history with no responders")
	hist.set(errors.New("decoding: unexpected end of JSON input"))
	if r := b.do(t, "GET", base+"/jc/jobs/j/history", ""); r.status != http.StatusInternalServerError || r.header.Get("Retry-After") != "" {
		t.Errorf("history with an error of no known condition: %d, want 500 without Retry-After: %s", r.status, r.body)
	}
}

// lostAnswers is a store whose writes take effect but whose answers are
// lost (nats: timeout), as when a connection drops after a write, lose
// times; with unranked, a lost create is written without the quota check
// and the confirmation of a create, as a create cut half way may be.
type lostAnswers struct {
	*store.Store
	lose     atomic.Int32
	unranked atomic.Bool
}

func (l *lostAnswers) lost(err error) error {
	if err == nil && l.lose.Add(-1) >= 0 {
		return fmt.Errorf("writing: %w", nats.ErrTimeout)
	}
	return err
}

func (l *lostAnswers) CreateJobIn(ctx context.Context, j store.Job, a store.Admission) (store.Job, error) {
	if l.unranked.Load() && l.lose.Load() > 0 {
		return store.Job{}, l.lost(l.ImportJobs(ctx, []store.Job{j}))
	}
	saved, err := l.Store.CreateJobIn(ctx, j, a)
	return saved, l.lost(err)
}

func (l *lostAnswers) UpdateJob(ctx context.Context, j store.Job, expected uint64) (store.Job, error) {
	saved, err := l.Store.UpdateJob(ctx, j, expected)
	return saved, l.lost(err)
}

func (l *lostAnswers) DeleteJob(ctx context.Context, ref contracts.JobRef) error {
	return l.lost(l.Store.DeleteJob(ctx, ref))
}

func (l *lostAnswers) PutCollection(ctx context.Context, c store.Collection, expected uint64) (store.Collection, error) {
	saved, err := l.Store.PutCollection(ctx, c, expected)
	return saved, l.lost(err)
}

func (l *lostAnswers) DeleteCollection(ctx context.Context, ref contracts.CollectionRef) error {
	return l.lost(l.Store.DeleteCollection(ctx, ref))
}

// A write that took effect but whose answer was lost is retried, and the
// retry, finding it done, answers what the write did: 201 for a create,
// 200 for a delete, not 200 and 404.
func TestWritesWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	l := &lostAnswers{}
	b := setupWith(t, testkit.NATS(t), Config{}, func(b *bundle) {
		l.Store = b.store
		b.api.store = jobStore{st: l}
	})
	lose := func() { l.lose.Store(1) }

	lose()
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	lose()
	r := b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)
	if !strings.Contains(string(r.body), `"name":"jc/j"`) {
		t.Fatalf("created: %s", r.body)
	}
	lose()
	b.mustDo(t, http.StatusOK, "PATCH", base+"/jc/jobs/j", `{"properties": {"state": "Disabled"}}`)
	if r := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/j", ""); !strings.Contains(string(r.body), `"state":"Disabled"`) {
		t.Fatalf("after the patch: %s", r.body)
	}
	lose()
	b.mustDo(t, http.StatusOK, "PATCH", base+"/jc", `{"tags": {"env": "prod"}}`)
	lose()
	b.mustDo(t, http.StatusOK, "DELETE", base+"/jc/jobs/j", "")
	b.mustDo(t, http.StatusNotFound, "GET", base+"/jc/jobs/j", "")

	t.Run("a lost create that left the collection over its quota is undone", func(t *testing.T) {
		// collectionBody allows 3 jobs.
		for _, name := range []string{"a", "b", "c"} {
			b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/"+name, weeklyJob)
		}
		l.unranked.Store(true)
		lose()
		r := b.mustDo(t, http.StatusConflict, "PUT", base+"/jc/jobs/d", weeklyJob)
		if r.errorCode(t) != codeQuotaExceeded {
			t.Fatalf("code %q: %s", r.errorCode(t), r.body)
		}
		b.mustDo(t, http.StatusNotFound, "GET", base+"/jc/jobs/d", "")
		l.unranked.Store(false)
	})
	lose()
	b.mustDo(t, http.StatusOK, "DELETE", base+"/jc", "")
	b.mustDo(t, http.StatusNotFound, "GET", base+"/jc", "")
}
