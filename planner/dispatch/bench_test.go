package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/loadtest"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// The planner's benchmarks are one-shot measurements of the whole path
// (store → timer → claim → publish → commit) against embedded NATS and the
// Redis named by SCHEDULER_TEST_REDIS_URL (miniredis without it, which is
// far slower than a real server). Run with -benchtime 1x; each reports its
// figures as metrics. Commands and figures are in docs/benchmarks.md.

// importJobs writes n jobs built by define(i) into collections of 1,000
// jobs each.
func importJobs(tb testing.TB, e *env, n int, define func(i int) string) {
	tb.Helper()
	if err := loadtest.ImportJobs(context.Background(), e.store, n, e.clock.Now(), define); err != nil {
		tb.Fatal(err)
	}
}

func oneTimeJob(at time.Time) string {
	return fmt.Sprintf(`{"startTime": %q, "action": {"type": "Http", "request": {"uri": "https://example.com/hook", "method": "POST"}}}`,
		at.UTC().Format(time.RFC3339))
}

func waitLen(tb testing.TB, ix *timer.Index, n int64, within time.Duration) {
	tb.Helper()
	testkit.Eventually(tb, within, func() bool {
		got, err := ix.Len(context.Background())
		return err == nil && got == n
	}, "the timer does not hold %d entries", n)
}

// BenchmarkBurst: 100,000 occurrences due at the same instant, with one and
// with two planners; reports how fast all of them are published, and the
// ceilings measured in the same run on the same servers, each with the
// burst's rate as a fraction of it: what JetStream stores per second when
// nothing else runs (publish-ceiling), and what the timer claims and
// commits per second (redis-ceiling). Every occurrence needs both, on the
// same cores, so the path cannot beat doing one after the other:
// combined-ceiling is 1/(1/publish + 1/redis), the rate of the two steps
// done in turn with nothing lost between them. dispatch-errors counts the
// errors the planners logged (a publish that stalled, a commit that
// failed).
func BenchmarkBurst(b *testing.B) {
	for _, planners := range []int{1, 2} {
		b.Run(fmt.Sprintf("planners=%d", planners), func(b *testing.B) {
			for b.Loop() {
				burst(b, planners, 100_000)
			}
		})
	}
}

func burst(b *testing.B, planners, n int) {
	e := setup(b)
	due := t0.Add(time.Minute)
	importJobs(b, e, n, func(int) string { return oneTimeJob(due) })
	errorsLogged := &errorCounter{Handler: slog.Default().Handler()}
	var ds []*Engine
	for range planners {
		ds = append(ds, e.planner(b, func(c *Config) {
			c.Batch, c.MaxIdle = 0, 50*time.Millisecond // the default batch
			c.Logger = slog.New(errorsLogged)
		}))
	}
	ix := e.index(b)
	waitLen(b, ix, int64(n), 5*time.Minute)
	publishCeiling := publishCeiling(b, e, due, n)
	redisCeiling := claimCommitCeiling(b, e, due, n)

	cpu := testkit.StartCPUWindow(b, e.rdb, "occurrence")
	start := time.Now()
	e.clock.Set(due)
	for _, d := range ds {
		d.Wake()
	}
	testkit.Eventually(b, 5*time.Minute, func() bool { return e.count(b) >= n }, "not all published")
	elapsed := time.Since(start)
	cpu.Stop(n)
	rate := float64(n) / elapsed.Seconds()
	b.ReportMetric(elapsed.Seconds(), "s-to-publish-all")
	b.ReportMetric(rate, "occurrences/s")
	b.ReportMetric(publishCeiling, "publish-ceiling-msgs/s")
	b.ReportMetric(rate/publishCeiling, "of-publish-ceiling")
	b.ReportMetric(redisCeiling, "redis-ceiling-occ/s")
	b.ReportMetric(rate/redisCeiling, "of-redis-ceiling")
	combined := 1 / (1/publishCeiling + 1/redisCeiling)
	b.ReportMetric(combined, "combined-ceiling-occ/s")
	b.ReportMetric(rate/combined, "of-combined-ceiling")
	b.ReportMetric(float64(errorsLogged.n.Load()), "dispatch-errors")
}

// errorCounter counts the error records it passes on to Handler.
type errorCounter struct {
	slog.Handler
	n atomic.Int64
}

func (c *errorCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		c.n.Add(1)
	}
	return c.Handler.Handle(ctx, r)
}

// publishCeiling measures how many executions per second JetStream stores
// on e's server when nothing else publishes: n messages with the size and
// headers of the execution of e's first job (a Nats-Msg-Id each),
// published asynchronously with as many acknowledgements pending as the
// dispatcher allows, to a stream with the EXEC stream's configuration under
// another name. The stream is deleted afterwards.
func publishCeiling(b *testing.B, e *env, due time.Time, n int) float64 {
	ctx := context.Background()
	ref := contracts.CollectionRef{Subscription: "bench", ResourceGroup: "rg", Collection: "c0000"}.Job("job-0000000")
	job, err := e.store.GetJob(ctx, ref)
	if err != nil {
		b.Fatal(err)
	}
	c := timer.Claim{Entry: timer.Entry{JobKey: ref.KVKey(), Due: due, Expected: due, Occurrence: 1, Action: contracts.MainAction}}
	tmpl, err := buildExecution(e.sealer, c, &cached{job: job}, due, time.Minute, true)
	if err != nil {
		b.Fatal(err)
	}
	exec, err := e.js.Stream(ctx, contracts.ExecStream)
	if err != nil {
		b.Fatal(err)
	}
	cfg := exec.CachedInfo().Config
	cfg.Name, cfg.Subjects = "CEILING", []string{"ceiling.>"}
	stream, err := e.js.CreateStream(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.js.DeleteStream(ctx, cfg.Name); err != nil {
			b.Error(err)
		}
	}()
	nc, _ := testkit.JetStream(b, e.ns)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(publishWindow))
	if err != nil {
		b.Fatal(err)
	}
	subject := "ceiling." + strings.TrimPrefix(tmpl.Subject, contracts.ExecSubjectPrefix)
	traceParent := tmpl.Header.Get(contracts.TraceParentHeader)
	cpu := testkit.StartCPUWindow(b, nil, "ceiling-msg")
	defer cpu.Stop(n)
	start := time.Now()
	for i := range n {
		m := nats.NewMsg(subject)
		m.Data = tmpl.Data
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s-%07d", tmpl.Header.Get(jetstream.MsgIDHeader), i))
		m.Header.Set(contracts.TraceParentHeader, traceParent)
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		b.Fatal("the acknowledgements did not come")
	}
	elapsed := time.Since(start)
	info, err := stream.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if info.State.Msgs != uint64(n) {
		b.Fatalf("the ceiling's stream holds %d messages, want %d", info.State.Msgs, n)
	}
	return float64(n) / elapsed.Seconds()
}

// claimCommitCeiling measures how many occurrences per second the timer
// claims and commits on e's Redis when nothing else runs: n entries due at
// one instant, claimed a default Batch at a time, each batch then committed
// with one CommitAll, under a prefix of their own that is flushed
// afterwards.
func claimCommitCeiling(b *testing.B, e *env, due time.Time, n int) float64 {
	ctx := context.Background()
	prefix := e.prefix + "-ceiling"
	defer testkit.FlushPrefix(e.rdb, prefix)
	ix, err := timer.New(e.rdb, timer.Config{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	entries := make([]timer.Entry, n)
	for i := range entries {
		ref := contracts.CollectionRef{Subscription: "bench", ResourceGroup: "rg", Collection: fmt.Sprintf("c%04d", i/1000)}.Job(fmt.Sprintf("job-%07d", i))
		entries[i] = timer.Entry{JobKey: ref.KVKey(), Due: due, Expected: due, Occurrence: 1, Action: contracts.MainAction, Revision: uint64(i + 1)}
	}
	if err := ix.ScheduleAll(ctx, entries); err != nil {
		b.Fatal(err)
	}
	batch := Config{}.withDefaults().Batch
	cpu := testkit.StartCPUWindow(b, e.rdb, "ceiling-occ")
	defer cpu.Stop(n)
	start := time.Now()
	claimed := 0
	for {
		claims, err := ix.Claim(ctx, due, time.Minute, batch)
		if err != nil {
			b.Fatal(err)
		}
		if len(claims) == 0 {
			break
		}
		claimed += len(claims)
		completions := make([]timer.Completion, len(claims))
		for i, c := range claims {
			completions[i] = timer.Completion{Claim: c}
		}
		if err := ix.CommitAll(ctx, completions); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	if claimed != n {
		b.Fatalf("claimed %d entries, want %d", claimed, n)
	}
	return float64(n) / elapsed.Seconds()
}

// BenchmarkSteady: 5,000 occurrences due every second for 60 seconds, on
// the real clock, with executions published ahead of their due time (the
// default, for the workers to hold them until then) and at it. Reports the
// lateness: when an execution was available to the workers (its arrival on
// NATS, or its due time when it arrived ahead of it) minus its due time;
// ahead-ms, how long before its due time the last of each second's
// arrived (the smallest lead, 0 when late); and the floor of publishing at
// the due time, measured in the same run: how long JetStream takes to
// store one second's 5,000 with nothing else running (floor-ms), with the
// p99 as a multiple of it.
func BenchmarkSteady(b *testing.B) {
	const perSecond, seconds = 5000, 60
	for _, ahead := range []time.Duration{0, -1} {
		name := "ahead=" + DefaultPublishAhead.String()
		if ahead < 0 {
			name = "ahead=0"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				steady(b, perSecond, seconds, ahead)
			}
		})
	}
}

func steady(b *testing.B, perSecond, seconds int, ahead time.Duration) {
	e := setup(b)
	e.realClock = true
	ix := e.index(b)
	base := time.Now().Add(90 * time.Second).Truncate(time.Second)
	importJobs(b, e, perSecond*seconds, func(i int) string { return oneTimeJob(base.Add(time.Duration(i/perSecond) * time.Second)) })
	var cfg Config
	e.planner(b, func(c *Config) {
		c.Lookahead, c.Batch, c.PublishAhead = 0, 0, ahead // the defaults, or at the due time
		cfg = c.withDefaults()
	})
	waitLen(b, ix, int64(perSecond*seconds), 85*time.Second)
	// The floor of each second's lateness when published at the due time:
	// how long JetStream takes to store one second's occurrences when
	// nothing else runs. The last of them cannot arrive sooner after its
	// due time.
	floor := float64(perSecond) / publishCeiling(b, e, base, perSecond) * 1000
	if time.Now().After(base) {
		b.Fatalf("the %d jobs were not scheduled before the first was due", perSecond*seconds)
	}
	arrivals := watchExecutions(b, e, perSecond*seconds)
	testkit.Eventually(b, time.Until(base)+time.Duration(seconds)*time.Second+time.Minute, func() bool {
		return arrivals.count() >= perSecond*seconds
	}, "not all occurrences arrived")
	all := arrivals.decoded(b)
	// A full round, a burst, is published up to the lookahead ahead; with
	// PublishAhead negative, nothing before its due time.
	maxLead := cfg.Lookahead
	if cfg.PublishAhead < 0 {
		maxLead = 0
	}
	late := make([]time.Duration, 0, len(all))
	lead := map[time.Time]time.Duration{} // each second's smallest lead
	for _, a := range all {
		x := a.exec
		due := x.ExpectedTime
		if !x.NotBefore.Equal(due) {
			b.Fatalf("%s carries notBefore %s, want its due time %s", x.OccurrenceKey, x.NotBefore, due)
		}
		if early := due.Sub(a.at); early > maxLead {
			b.Fatalf("%s published %s before it was due, more than the lead of %s", x.OccurrenceKey, early, maxLead)
		}
		late = append(late, max(a.at.Sub(due), 0))
		if l, ok := lead[due]; !ok || due.Sub(a.at) < l {
			lead[due] = due.Sub(a.at)
		}
	}
	slices.Sort(late)
	leads := make([]time.Duration, 0, len(lead))
	for _, l := range lead {
		leads = append(leads, max(l, 0))
	}
	slices.Sort(leads)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(p float64) float64 { return ms(late[int(p*float64(len(late)-1))]) }
	b.ReportMetric(pct(0.50), "p50-late-ms")
	b.ReportMetric(pct(0.99), "p99-late-ms")
	b.ReportMetric(pct(1), "max-late-ms")
	b.ReportMetric(ms(leads[len(leads)/2]), "ahead-ms")
	b.ReportMetric(floor, "floor-ms")
	b.ReportMetric(pct(0.99)/floor, "p99-of-floor")
}

// BenchmarkMillionJobs: 1,000,000 scheduled jobs; reports how long a planner
// takes to schedule them all from NATS at start, the Redis memory per job
// (real Redis only), and how long a rebuild after Redis lost everything takes.
func BenchmarkMillionJobs(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		e := setup(b)
		due := t0.Add(24 * time.Hour)
		importJobs(b, e, n, func(i int) string {
			return fmt.Sprintf(`{"startTime": %q, "action": {"type": "Http", "request": {"uri": "https://example.com/hooks/%d", "method": "POST"}},
				"recurrence": {"frequency": "Minute", "interval": 15}}`, due.Add(time.Duration(i%900)*time.Second).Format(time.RFC3339), i)
		})
		ix := e.index(b)
		before := usedMemory(b, e)
		start := time.Now()
		d := e.planner(b, func(c *Config) { c.Lease = 5 * time.Second })
		waitLen(b, ix, n, 30*time.Minute)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-schedule-from-NATS")
		if after := usedMemory(b, e); after > 0 {
			b.ReportMetric(float64(after-before)/n, "redis-bytes/job")
		}
		testkit.FlushPrefix(e.rdb, e.prefix)
		start = time.Now()
		waitLen(b, ix, n, 30*time.Minute)
		b.ReportMetric(time.Since(start).Seconds(), "s-to-rebuild-after-flush")
		d.Stop()
	}
}

// usedMemory returns Redis's used_memory, or 0 for miniredis.
func usedMemory(tb testing.TB, e *env) int64 {
	if !testkit.RealRedis() {
		return 0
	}
	info, err := e.rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
