package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type env struct {
	ns     *server.Server
	js     jetstream.JetStream
	store  *store.Store
	rdb    redis.UniversalClient
	prefix string
	clock  *testkit.Clock
	// realClock makes the planners use the real time instead of clock.
	realClock bool
	// plannerRDB, when set, is the Redis client of the planners started
	// next, instead of rdb.
	plannerRDB redis.UniversalClient
	sealer     *seal.Sealer
}

func setup(t testing.TB) *env {
	t.Helper()
	e := &env{ns: testkit.NATS(t), clock: testkit.NewClock(t0)}
	_, e.js = testkit.JetStream(t, e.ns)
	e.rdb, e.prefix, _ = testkit.Redis(t)
	var err error
	if e.sealer, err = seal.New(bytes.Repeat([]byte{3}, 32)); err != nil {
		t.Fatal(err)
	}
	e.store = e.openStore(t, e.js)
	if _, err := e.store.PutCollection(context.Background(), store.Collection{Ref: collection}, 0); err != nil {
		t.Fatal(err)
	}
	return e
}

var collection = contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc"}

func (e *env) openStore(t testing.TB, js jetstream.JetStream) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), js, store.Config{Sealer: e.sealer, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// planner starts an engine with its own NATS connection, store and timer
// client, as a separate planner process would have.
func (e *env) planner(t testing.TB, tweak func(*Config)) *Engine {
	t.Helper()
	_, js := testkit.JetStream(t, e.ns)
	rdb := e.rdb
	if e.plannerRDB != nil {
		rdb = e.plannerRDB
	}
	ix, err := timer.New(rdb, timer.Config{Prefix: e.prefix})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Lease: 30 * time.Second, Batch: 200, MaxIdle: 5 * time.Millisecond, Settle: time.Millisecond,
		Lookahead: time.Nanosecond, Sealer: e.sealer, Now: e.clock.Now} // the fake clock jumps to due instants
	if e.realClock {
		cfg.Now, cfg.Lookahead = time.Now, 0
	}
	if tweak != nil {
		tweak(&cfg)
	}
	fu, err := store.OpenFollowUps(context.Background(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(js, e.openStore(t, js), fu, ix, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	testkit.Eventually(t, 10*time.Minute, d.Ready, "the engine did not become ready")
	return d
}

// index is a client of the planners' timer, for looking at what they
// keep of a job.
func (e *env) index(t testing.TB) *timer.Index {
	t.Helper()
	ix, err := timer.New(e.rdb, timer.Config{Prefix: e.prefix})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// addJob stores a job from its JSON definition, created at the fake now.
func (e *env) addJob(t *testing.T, name, definition string) store.Job {
	t.Helper()
	props, errs := planner.ParseJob([]byte(definition), e.clock.Now())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if props.State == "" {
		props.State = contracts.JobStateEnabled
	}
	now := e.clock.Now()
	j, err := e.store.CreateJob(context.Background(), store.Job{Ref: collection.Job(name), Properties: props,
		Created: now, Anchored: now, Updated: now}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func minuteJob(start time.Time, count int) string {
	countField := ""
	if count > 0 {
		countField = fmt.Sprintf(`, "count": %d`, count)
	}
	return fmt.Sprintf(`{"startTime": %q, "action": {"type": "Http", "request": {"uri": "https://example.com/hook", "method": "POST"}},
		"recurrence": {"frequency": "Minute"%s}}`, start.Format(time.RFC3339), countField)
}

// executions returns every message on the EXEC stream, read by sequence
// (a work queue allows no second consumer).
func (e *env) executions(t *testing.T) []contracts.Execution {
	t.Helper()
	ctx := context.Background()
	stream, err := e.js.Stream(ctx, contracts.ExecStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]contracts.Execution, 0, info.State.Msgs)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		var x contracts.Execution
		if err := json.Unmarshal(m.Data, &x); err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get(jetstream.MsgIDHeader); got != x.OccurrenceID {
			t.Fatalf("Nats-Msg-Id %q, occurrence id %q", got, x.OccurrenceID)
		}
		out = append(out, x)
	}
	return out
}

func (e *env) count(t testing.TB) int {
	t.Helper()
	stream, err := e.js.Stream(context.Background(), contracts.ExecStream)
	if err != nil {
		return 0
	}
	info, err := stream.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(info.State.Msgs)
}

func (e *env) waitCount(t *testing.T, want int) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, func() bool { return e.count(t) >= want }, "%d executions, want %d", e.count(t), want)
	if got := e.count(t); got != want {
		t.Fatalf("%d executions, want %d", got, want)
	}
}

// checkOnce fails unless every occurrence of every job was published exactly
// once, numbered 1…perJob.
func checkOnce(t *testing.T, execs []contracts.Execution, jobs, perJob int) {
	t.Helper()
	ids := map[string]bool{}
	seen := map[string]map[int64]bool{}
	for _, x := range execs {
		if ids[x.OccurrenceID] {
			t.Fatalf("occurrence %s published twice", x.OccurrenceKey)
		}
		ids[x.OccurrenceID] = true
		if seen[x.Job.Job] == nil {
			seen[x.Job.Job] = map[int64]bool{}
		}
		seen[x.Job.Job][x.Occurrence] = true
	}
	if len(seen) != jobs {
		t.Fatalf("%d jobs fired, want %d", len(seen), jobs)
	}
	for job, occ := range seen {
		for n := int64(1); n <= int64(perJob); n++ {
			if !occ[n] {
				t.Fatalf("job %s: occurrence %d missing", job, n)
			}
		}
	}
}

func TestTwoPlannersDispatchEveryOccurrenceOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const jobs, perJob = 100, 100 // 10,000 occurrences
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.addJob(t, fmt.Sprintf("job-%03d", i), minuteJob(t0.Add(time.Minute), perJob))
		}()
	}
	wg.Wait()
	a := e.planner(t, nil)
	b := e.planner(t, nil)
	for m := 1; m <= perJob; m++ {
		e.clock.Set(t0.Add(time.Duration(m) * time.Minute))
		a.Wake()
		b.Wake()
		e.waitCount(t, m*jobs)
	}
	checkOnce(t, e.executions(t), jobs, perJob)
	ix := e.index(t)
	if n, err := ix.Len(context.Background()); err != nil || n != 0 {
		t.Fatalf("%d entries left after every job's count was reached (%v)", n, err)
	}
}

func TestPlannerDyingBetweenPublishAndCommitCausesNoDuplicate(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.addJob(t, "j", minuteJob(t0.Add(time.Minute), 3))
	// a loses Redis the moment JetStream has stored the execution: its
	// commit fails, as a planner dying then would leave it.
	rdb, o := e.flakyRedis(t)
	e.plannerRDB = rdb
	stored := make(chan struct{}, 1)
	a := e.planner(t, func(c *Config) {
		c.Lease = 6 * time.Second
		c.Observer = observerFunc(func(events.Dispatched) {
			o.down.Store(true)
			stored <- struct{}{}
		})
	})
	e.plannerRDB = nil
	e.clock.Set(t0.Add(time.Minute))
	a.Wake()
	select {
	case <-stored:
	case <-time.After(30 * time.Second):
		t.Fatal("the execution was not stored")
	}
	a.Stop() // dies with occurrence 1 published but not committed
	e.waitCount(t, 1)

	b := e.planner(t, func(c *Config) { c.Lease = 6 * time.Second })
	e.clock.Advance(7 * time.Second) // the lease expires: b takes the occurrence over
	ix := e.index(t)
	testkit.Eventually(t, 10*time.Second, func() bool {
		entry, ok, _ := ix.Get(context.Background(), collection.Job("j").KVKey(), "")
		return ok && entry.Occurrence == 2
	}, "the taken-over occurrence was not committed")
	if n := e.count(t); n != 1 {
		t.Fatalf("%d executions after the take-over, want 1 (the republish must be dropped as a duplicate)", n)
	}
	for m := 2; m <= 3; m++ {
		e.clock.Set(t0.Add(time.Duration(m) * time.Minute))
		b.Wake()
		e.waitCount(t, m)
	}
	checkOnce(t, e.executions(t), 1, 3)
}

// observerFunc is an Observer of one function.
type observerFunc func(events.Dispatched)

func (f observerFunc) Dispatched(d events.Dispatched) { f(d) }

func TestRedisFlushedWhileRunningLosesNoJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const jobs = 5
	for i := range jobs {
		e.addJob(t, fmt.Sprintf("j%d", i), minuteJob(t0.Add(time.Minute), 0))
	}
	d := e.planner(t, func(c *Config) { c.Lease = time.Second })
	e.clock.Set(t0.Add(time.Minute))
	d.Wake()
	e.waitCount(t, jobs)

	testkit.FlushPrefix(e.rdb, e.prefix) // Redis loses everything
	ix := e.index(t)
	testkit.Eventually(t, 10*time.Second, func() bool {
		n, _ := ix.Len(context.Background())
		return n == jobs
	}, "the timer was not rebuilt")
	e.clock.Set(t0.Add(2 * time.Minute))
	d.Wake()
	e.waitCount(t, 2*jobs)
	checkOnce(t, e.executions(t), jobs, 2)
}

func TestDispatcherFollowsTheStore(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	d := e.planner(t, nil)
	ix := e.index(t)
	pending := func(name string) (timer.Entry, bool) {
		entry, ok, _ := ix.Get(ctx, collection.Job(name).KVKey(), "")
		return entry, ok
	}

	t.Run("a new job without a start time runs at once", func(t *testing.T) {
		e.addJob(t, "now", `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}}`)
		e.clock.Advance(time.Second) // past the settle delay
		d.Wake()
		e.waitCount(t, 1)
		testkit.Eventually(t, 5*time.Second, func() bool { _, ok := pending("now"); return !ok }, "a one-time job stays scheduled")
	})
	t.Run("a disabled job is unscheduled and a re-enabled one resumes from now", func(t *testing.T) {
		j := e.addJob(t, "daily", minuteJob(t0.Add(time.Hour), 0))
		testkit.Eventually(t, 5*time.Second, func() bool { _, ok := pending("daily"); return ok }, "not scheduled")
		j.Properties.State = contracts.JobStateDisabled
		j, err := e.store.UpdateJob(ctx, j, j.Revision)
		if err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 5*time.Second, func() bool { _, ok := pending("daily"); return !ok }, "still scheduled when disabled")
		e.clock.Set(t0.Add(3*time.Hour + 30*time.Second))
		j.Properties.State = contracts.JobStateEnabled
		j.Anchored = e.clock.Now()
		if _, err := e.store.UpdateJob(ctx, j, j.Revision); err != nil {
			t.Fatal(err)
		}
		want := t0.Add(3*time.Hour + time.Minute) // missed instants are skipped
		testkit.Eventually(t, 5*time.Second, func() bool { p, ok := pending("daily"); return ok && p.Expected.Equal(want) },
			"not resumed at %s", want)
	})
	t.Run("a start time changed in the second the job was anchored moves its next run", func(t *testing.T) {
		first := e.clock.Now().Add(2 * time.Hour).Truncate(time.Minute)
		j := e.addJob(t, "moved", minuteJob(first, 0))
		testkit.Eventually(t, 5*time.Second, func() bool { p, ok := pending("moved"); return ok && p.Expected.Equal(first) }, "not scheduled")
		moved := first.Add(-time.Hour)
		j.Properties.StartTime = &moved // Anchored stays: the clock has not moved
		if _, err := e.store.UpdateJob(ctx, j, j.Revision); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 5*time.Second, func() bool { p, ok := pending("moved"); return ok && p.Expected.Equal(moved) },
			"still scheduled at the old start time, not %s", moved)
	})
	t.Run("a run outside the schedule is published at once", func(t *testing.T) {
		before := e.count(t)
		j, err := e.store.GetJob(ctx, collection.Job("daily"))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.followUps.RunNow(ctx, j); err != nil {
			t.Fatal(err)
		}
		e.waitCount(t, before+1)
	})
	t.Run("nothing fires in a suspended collection", func(t *testing.T) {
		c, err := e.store.GetCollection(ctx, collection)
		if err != nil {
			t.Fatal(err)
		}
		c.Properties.State = contracts.JobCollectionStateSuspended
		if _, err := e.store.PutCollection(ctx, c, c.Revision); err != nil {
			t.Fatal(err)
		}
		before := e.count(t)
		p, _ := pending("daily")
		e.clock.Set(p.Expected.Add(2 * time.Second)) // past the lookup cache
		d.Wake()
		testkit.Eventually(t, 5*time.Second, func() bool { q, ok := pending("daily"); return ok && q.Occurrence > p.Occurrence },
			"the suspended occurrence was not skipped")
		if n := e.count(t); n != before {
			t.Fatalf("%d executions in a suspended collection", n-before)
		}
	})
	t.Run("a deleted job is unscheduled", func(t *testing.T) {
		if err := e.store.DeleteJob(ctx, collection.Job("daily")); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, 5*time.Second, func() bool { _, ok := pending("daily"); return !ok }, "still scheduled after delete")
	})
}

// The bucket keeps one write of a key: a job deleted and created again at
// once may reach a follower that fell behind as one write over another, the
// delete gone. The job is still new: it starts from its first occurrence,
// with nothing of the old job's runs in its status.
func TestAJobCreatedAgainOverADeleteNotReadStartsAnew(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	d := e.planner(t, nil)
	ix := e.index(t)
	key := collection.Job("again").KVKey()
	// state is what the planners keep of the job, as last read: read
	// reads it again.
	var state struct {
		Next       timer.Entry
		Executions int64
	}
	read := func() {
		state.Next, _, _ = ix.Get(ctx, key, "")
		state.Executions = 0
		if tallies, _, _ := ix.Statuses(ctx, []string{key}); len(tallies) == 1 {
			state.Executions = tallies[0].Executions
		}
	}
	start := t0.Add(time.Hour)
	j := e.addJob(t, "again", minuteJob(start, 3))
	e.clock.Set(start.Add(time.Second))
	d.Wake()
	e.waitCount(t, 1)
	first := e.executions(t)[0]
	if _, err := ix.Record(ctx, timer.Record{JobKey: key, AttemptID: first.OccurrenceID, Executions: 1, Started: start, Status: "Succeeded",
		Ended: start, Occurrence: first.Occurrence, OccurrenceTime: start}); err != nil { // as the result's feedback does
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, func() bool { read(); return state.Next.Occurrence == 2 && state.Executions == 1 },
		"the first run did not move the job on: %+v", &state)

	// The new job, written over the old as the follower reads it when the
	// delete between them was replaced before it read that.
	now := e.clock.Now()
	j.Created, j.Anchored = now, now
	if _, err := e.store.UpdateJob(ctx, j, j.Revision); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*time.Second, func() bool {
		read()
		return state.Next.Occurrence == 1 && state.Next.Remaining == 2 && state.Executions == 0
	}, "the job created again keeps the old job's runs: %+v", &state)
}

// Scheduled reports the timer's entry of a job, with the occurrences of its
// count that follow it, and nothing for a job the timer does not hold.
func TestScheduledReportsTheTimersEntry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	d := e.planner(t, nil)
	start := t0.Add(time.Hour)
	e.addJob(t, "counted", minuteJob(start, 3))
	e.addJob(t, "endless", minuteJob(start, 0))
	for _, tt := range []struct {
		job       string
		remaining int64
	}{{"counted", 2}, {"endless", -1}} {
		testkit.Eventually(t, 5*time.Second, func() bool {
			at, remaining, ok, err := d.inspector.Scheduled(ctx, collection.Job(tt.job))
			return err == nil && ok && at.Equal(start) && remaining == tt.remaining
		}, "%s is not reported scheduled at %s with %d to follow", tt.job, start, tt.remaining)
	}
	if _, _, ok, err := d.inspector.Scheduled(ctx, collection.Job("absent")); ok || err != nil {
		t.Errorf("a job the timer does not hold: ok %v, err %v", ok, err)
	}
}

// Jobs scheduled for later than the dispatcher's next look at the timer do
// not wake it; one due before that does, and so does any while it is not
// asleep.
func TestWakeForWakesOnlyForWhatIsDueSooner(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	d := newDispatcher(nil, nil, nil, nil, Config{Lookahead: 500 * time.Millisecond, Now: func() time.Time { return now }})
	woken := func() bool {
		select {
		case <-d.kick:
			return true
		default:
			return false
		}
	}
	d.WakeFor(now.Add(time.Hour))
	if !woken() {
		t.Error("a dispatcher that is not asleep was not woken")
	}
	d.sleepUntil.Store(now.Add(time.Minute).UnixNano())
	d.WakeFor(now.Add(time.Hour))
	if woken() {
		t.Error("woken for an entry due after its next look")
	}
	d.WakeFor(now.Add(time.Minute + 400*time.Millisecond))
	if !woken() {
		t.Error("not woken for an entry it must claim, within the lookahead, before its next look")
	}
}
