package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// A timeline shows where a burst's time goes. With
// SCHEDULER_BENCH_TIMELINE=1 the burst benchmark samples, every 100 ms
// from a second before the due time until the results settle, the cores
// this process used since the last sample, how many executions were
// published on EXEC and delivered to the workers, how many jobs called the
// sink, how many results were stored and how many each of their
// consumers, the planner's and the history's, acknowledged; it logs the
// table at the end, and, once just before the due time, the process's
// heap and stacks (the executions the workers hold). With SCHEDULER_BENCH_PROFILE_WINDOW=<from>,<to> (durations from
// the due time, "0s,700ms") it writes a CPU profile of that part of the
// burst to window.prof in the working directory.
type timeline struct {
	rows []timelineRow
	stop chan struct{}
	done chan struct{}
}

type timelineRow struct {
	at                           time.Duration
	cores                        float64
	published, delivered, called uint64
	results, planner, history    uint64
}

// startTimeline samples until end; nil unless SCHEDULER_BENCH_TIMELINE is
// set.
func startTimeline(b *testing.B, js jetstream.JetStream, due time.Time, called func() int) *timeline {
	b.Helper()
	if window := os.Getenv("SCHEDULER_BENCH_PROFILE_WINDOW"); window != "" {
		profileWindow(b, due, window)
	}
	if os.Getenv("SCHEDULER_BENCH_TIMELINE") == "" {
		return nil
	}
	t := &timeline{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		ctx := context.Background()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		lastCPU, lastAt := testkit.ProcessCPU(), time.Now()
		memory := false
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
			}
			cpu, at := testkit.ProcessCPU(), time.Now()
			row := timelineRow{at: at.Sub(due).Round(10 * time.Millisecond), cores: float64(cpu-lastCPU) / float64(at.Sub(lastAt)), called: uint64(called())}
			lastCPU, lastAt = cpu, at
			if row.at < -time.Second {
				continue
			}
			if !memory && row.at > -200*time.Millisecond {
				memory = true
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.Logf("just before the due time: heap in use %d MiB, stacks %d MiB, %d goroutines", ms.HeapInuse>>20, ms.StackInuse>>20, runtime.NumGoroutine())
			}
			row.published, row.delivered, _ = consumerCounts(ctx, js, contracts.ExecStream, contracts.WorkersConsumer)
			row.results, _, row.planner = consumerCounts(ctx, js, contracts.ResultsStream, contracts.PlannerConsumer)
			_, _, row.history = consumerCounts(ctx, js, contracts.ResultsStream, contracts.HistoryConsumer)
			t.rows = append(t.rows, row)
		}
	}()
	return t
}

// consumerCounts returns, for a consumer of a stream, the stream
// sequence of the last message it could deliver (the last it delivered
// and those pending), of the last it delivered, and its ack floor; zeros
// when it cannot be read.
func consumerCounts(ctx context.Context, js jetstream.JetStream, stream, consumer string) (last, delivered, acked uint64) {
	c, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		return 0, 0, 0
	}
	ci := c.CachedInfo() // fetched just now by Consumer
	return ci.Delivered.Stream + ci.NumPending, ci.Delivered.Stream, ci.AckFloor.Stream
}

// profileWindow writes a CPU profile of the part of the burst window names
// to window.prof.
func profileWindow(b *testing.B, due time.Time, window string) {
	b.Helper()
	from, to, _ := strings.Cut(window, ",")
	start, err1 := time.ParseDuration(from)
	end, err2 := time.ParseDuration(to)
	if err1 != nil || err2 != nil || end <= start {
		b.Fatalf("SCHEDULER_BENCH_PROFILE_WINDOW=%q: want <from>,<to>, two durations from the due time, from before to", window)
	}
	f, err := os.Create("window.prof")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		defer f.Close()
		time.Sleep(time.Until(due.Add(start)))
		if err := pprof.StartCPUProfile(f); err != nil {
			return // another profile runs (SCHEDULER_BENCH_PROFILE)
		}
		time.Sleep(end - start)
		pprof.StopCPUProfile()
	}()
}

// end stops sampling and logs the table.
func (t *timeline) end(b *testing.B) {
	if t == nil {
		return
	}
	close(t.stop)
	<-t.done
	var sb strings.Builder
	fmt.Fprintf(&sb, "%8s %6s %9s %9s %9s %9s %9s %9s\n", "after", "cores", "published", "delivered", "called", "results", "planner", "history")
	for _, r := range t.rows {
		fmt.Fprintf(&sb, "%8s %6.2f %9d %9d %9d %9d %9d %9d\n", r.at, r.cores, r.published, r.delivered, r.called, r.results, r.planner, r.history)
	}
	b.Log("\n" + sb.String())
}
