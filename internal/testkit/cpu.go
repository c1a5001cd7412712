package testkit

import (
	"context"
	"os"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ProfileEnv names a file prefix: a benchmark that measures a window with
// CPUWindow writes a CPU profile of that window alone (not of its set-up)
// to <prefix>-<benchmark name>-<unit>.prof.
const ProfileEnv = "SCHEDULER_BENCH_PROFILE"

// unsafeInFileName matches what a benchmark's name may hold that a profile's
// file name should not.
var unsafeInFileName = regexp.MustCompile(`[^A-Za-z0-9=_-]+`)

// CPUWindow measures the CPU time one part of a benchmark costs: this
// process's (every role the benchmark runs in it, and an embedded NATS
// server) and the Redis server's, read from its INFO.
type CPUWindow struct {
	tb        testing.TB
	rdb       redis.UniversalClient
	unit      string
	process   time.Duration
	redis     time.Duration
	redisOK   bool
	profiling bool
}

// StartCPUWindow starts measuring the cost of units of work (Stop says how
// many were done); rdb may be nil.
func StartCPUWindow(tb testing.TB, rdb redis.UniversalClient, unit string) *CPUWindow {
	tb.Helper()
	w := &CPUWindow{tb: tb, rdb: rdb, unit: unit}
	if prefix := os.Getenv(ProfileEnv); prefix != "" {
		name := unsafeInFileName.ReplaceAllString(tb.Name(), "_")
		f, err := os.Create(prefix + "-" + name + "-" + unit + ".prof")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = f.Close() })
		if err := pprof.StartCPUProfile(f); err != nil {
			tb.Logf("no profile of the window: %v", err) // -cpuprofile is on
		} else {
			w.profiling = true
		}
	}
	w.process = ProcessCPU()
	w.redis, w.redisOK = redisCPU(rdb)
	return w
}

// Stop ends the window and reports, per unit of work (n of them were
// done in the window), the microseconds of CPU of this process
// (process-cpu-us/<unit>) and of the Redis server (redis-cpu-us/<unit>,
// when it reports its CPU: the embedded Redis-protocol server runs in
// this process and is counted with it).
func (w *CPUWindow) Stop(n int) {
	process := ProcessCPU() - w.process
	redisNow, ok := redisCPU(w.rdb)
	if w.profiling {
		pprof.StopCPUProfile()
	}
	b, isBench := w.tb.(*testing.B)
	if !isBench || n <= 0 {
		return
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
	b.ReportMetric(per(process), "process-cpu-us/"+w.unit)
	if ok && w.redisOK {
		b.ReportMetric(per(redisNow-w.redis), "redis-cpu-us/"+w.unit)
	}
}

// ProcessCPU returns the user and system CPU time of this process so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU returns the user and system CPU time of rdb's server so far, and
// false when it does not report it.
func redisCPU(rdb redis.UniversalClient) (time.Duration, bool) {
	if rdb == nil {
		return 0, false
	}
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0, false
	}
	var total float64
	found := 0
	for line := range strings.Lines(info) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
			continue
		}
		s, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, false
		}
		total += s
		found++
	}
	return time.Duration(total * float64(time.Second)), found == 2
}
