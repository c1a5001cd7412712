package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
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
	ctx := context.Background()
	first, errs := planner.ParseJob([]byte(define(0)), e.clock.Now())
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	jobs := make([]store.Job, 0, 10_000)
	flush := func() {
		if err := e.store.ImportJobs(ctx, jobs); err != nil {
			tb.Fatal(err)
		}
		jobs = jobs[:0]
	}
	for i := range n {
		coll := contracts.CollectionRef{Subscription: "bench", ResourceGroup: "rg", Collection: fmt.Sprintf("c%04d", i/1000)}
		if i%1000 == 0 {
			if _, err := e.store.PutCollection(ctx, store.Collection{Ref: coll}, 0); err != nil {
				tb.Fatal(err)
			}
		}
		p := first.Clone()
		if i > 0 {
			if p, errs = planner.ParseJob([]byte(define(i)), e.clock.Now()); len(errs) > 0 {
				tb.Fatal(errs)
			}
		}
		p.State = contracts.JobStateEnabled
		jobs = append(jobs, store.Job{Ref: coll.Job(fmt.Sprintf("job-%07d", i)), Properties: p})
		if len(jobs) == cap(jobs) {
			flush()
		}
	}
	flush()
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
// with two planners; reports how fast all of them are published.
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
	var ds []*Engine
	for range planners {
		ds = append(ds, e.planner(b, func(c *Config) { c.Batch, c.MaxIdle = 0, 50*time.Millisecond })) // the default batch
	}
	ix, _ := timer.New(e.rdb, timer.Config{Prefix: e.prefix})
	waitLen(b, ix, int64(n), 5*time.Minute)
	start := time.Now()
	e.clock.Set(due)
	for _, d := range ds {
		d.Wake()
	}
	testkit.Eventually(b, 5*time.Minute, func() bool { return e.count(b) >= n }, "not all published")
	elapsed := time.Since(start)
	b.ReportMetric(elapsed.Seconds(), "s-to-publish-all")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "occurrences/s")
}

// BenchmarkSteady: 5,000 occurrences due every second for 60 seconds, on
// the real clock; reports the lateness (the time an execution message
// arrives on NATS minus its due time).
func BenchmarkSteady(b *testing.B) {
	const perSecond, seconds = 5000, 60
	for b.Loop() {
		e := setup(b)
		e.realClock = true
		ix, _ := timer.New(e.rdb, timer.Config{Prefix: e.prefix})
		base := time.Now().Add(90 * time.Second).Truncate(time.Second)
		importJobs(b, e, perSecond*seconds, func(i int) string { return oneTimeJob(base.Add(time.Duration(i/perSecond) * time.Second)) })
		e.planner(b, func(c *Config) { c.Lookahead, c.Batch = 0, 0 }) // the defaults
		waitLen(b, ix, perSecond*seconds, 85*time.Second)
		if time.Now().After(base) {
			b.Fatalf("the %d jobs were not scheduled before the first was due", perSecond*seconds)
		}
		// The handler only notes the arrival; decoding afterwards keeps the
		// subscriber's own work out of the measured lateness.
		type arrival struct {
			at   time.Time
			data []byte
		}
		arrivals := make([]arrival, 0, perSecond*seconds)
		var mu sync.Mutex
		nc, err := nats.Connect(e.ns.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		sub, err := nc.Subscribe(contracts.ExecSubjectPrefix+">", func(m *nats.Msg) {
			at := time.Now()
			mu.Lock()
			arrivals = append(arrivals, arrival{at, m.Data})
			mu.Unlock()
		})
		if err != nil {
			b.Fatal(err)
		}
		sub.SetPendingLimits(-1, -1)
		testkit.Eventually(b, time.Until(base)+seconds*time.Second+time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(arrivals) >= perSecond*seconds
		}, "not all occurrences arrived")
		mu.Lock()
		late := make([]time.Duration, 0, len(arrivals))
		for _, a := range arrivals {
			var x contracts.Execution
			if err := json.Unmarshal(a.data, &x); err != nil {
				b.Fatal(err)
			}
			if a.at.Before(x.ExpectedTime) {
				b.Fatalf("%s published %s before it was due", x.OccurrenceKey, x.ExpectedTime.Sub(a.at))
			}
			late = append(late, a.at.Sub(x.ExpectedTime))
		}
		mu.Unlock()
		slices.Sort(late)
		pct := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))]) / float64(time.Millisecond) }
		b.ReportMetric(pct(0.50), "p50-late-ms")
		b.ReportMetric(pct(0.99), "p99-late-ms")
		b.ReportMetric(pct(1), "max-late-ms")
	}
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
		ix, _ := timer.New(e.rdb, timer.Config{Prefix: e.prefix})
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
