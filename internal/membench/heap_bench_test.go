//go:build linux

package membench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/service"
	"github.com/jobscheduler/scheduler/planner/timer"
)

var heapProfile = flag.String("planner-heap-profile", "", "file BenchmarkPlannerHeap writes the planner's heap profile to")

// BenchmarkPlannerHeap runs the planner in the benchmark's own process
// (service.Start, what `scheduler serve planner` runs) with 1,000,000
// recurring jobs, against a nats-server and a redis-server of its own. Once
// the planner is ready with every job scheduled it collects garbage and
// reports the Go heap in use, and the bytes each job adds to it; with
// -planner-heap-profile FILE (after -args) it writes the heap profile to
// FILE for `go tool pprof`:
//
//	go test ./internal/membench -run '^$' -bench BenchmarkPlannerHeap -benchtime 1x -timeout 60m -args -planner-heap-profile /tmp/planner.heap
func BenchmarkPlannerHeap(b *testing.B) {
	const jobs = 1_000_000
	for b.Loop() {
		rs := testkit.RedisServer(b)
		ns := natsServer(b)
		key := seal.GenerateKey()
		importJobs(b, ns.URL(), key, jobs)
		raw, err := seal.ParseKey(key)
		if err != nil {
			b.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		svc, err := service.Start(ctx, service.Config{NATSURL: ns.URL(), RedisURL: rs.URL(), EncryptionKey: raw,
			Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		defer svc.Stop(context.Background())
		rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
		defer rdb.Close()
		ix, err := timer.New(rdb, timer.Config{})
		if err != nil {
			b.Fatal(err)
		}
		began := time.Now()
		poll(b, readyWithin, time.Second, "the planner did not schedule every job", func() error {
			n, err := ix.Len(ctx)
			switch {
			case err != nil:
				return err
			case n != jobs:
				return fmt.Errorf("the timer holds %d entries of %d", n, jobs)
			case !svc.Ready():
				return errors.New("the planner is not ready")
			}
			return nil
		})
		b.ReportMetric(time.Since(began).Seconds(), "s-to-ready")

		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse)/mib, "heap-MiB")
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/jobs, "heap-B/job")
		b.ReportMetric(float64(after.HeapObjects-before.HeapObjects)/jobs, "objects/job")
		if *heapProfile != "" {
			f, err := os.Create(*heapProfile)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			b.Logf("heap profile written to %s", *heapProfile)
		}
	}
}
