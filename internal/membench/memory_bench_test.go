//go:build linux

package membench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/internal/loadtest"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// The memory benchmark is a one-shot measurement: run it with
//
//	go test ./internal/membench -run '^$' -bench BenchmarkRoleMemory -benchtime 1x -timeout 60m
//
// It needs redis-server on the PATH (it is skipped without it) and builds
// the scheduler and nats-server from the module.

func TestMain(m *testing.M) {
	code := m.Run()
	testkit.RemoveBinary()
	testkit.RemoveNATSServerBinary()
	os.Exit(code)
}

const (
	// readyWithin bounds the wait for the roles to be ready and for the
	// planner to have scheduled every job.
	readyWithin = 30 * time.Minute
	// settleFor is how long the memory of the ready roles is sampled, once
	// a second; the figures are the last sample's.
	settleFor = 10 * time.Second
)

// processes are what a run measures, in the order they are reported: the
// three roles, then the servers they use.
var processes = []string{"planner", "worker", "history", "nats", "redis"}

// roles are the processes that are the scheduler's binary.
var roles = processes[:3]

// BenchmarkRoleMemory measures the resident memory of the planner, a
// worker and the history consumer, each a process of the real binary
// (`scheduler serve ROLE`), and of the nats-server and redis-server they
// use: with no job (the baseline), then with 1,000,000 recurring jobs that
// the planner has all scheduled and none of which is due. It reports, per
// process, the resident set (VmRSS) after the roles were ready and let run
// for 10 s, its peak (VmHWM), for the roles their Go heap in use, and, for
// the million, the bytes each job adds to the baseline.
func BenchmarkRoleMemory(b *testing.B) {
	var baseline *footprint
	for _, jobs := range []int{0, 1_000_000} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			for b.Loop() {
				if jobs > 0 && baseline == nil {
					b.Log("measuring the baseline (no job) first")
					fp := measure(b, 0)
					baseline = &fp
				}
				fp := measure(b, jobs)
				fp.report(b, baseline)
				if jobs == 0 {
					baseline = &fp
				}
			}
		})
	}
}

// usage is the memory of one process, in bytes.
type usage struct {
	// rss is VmRSS, the resident set; hwm is VmHWM, its peak.
	rss, hwm int64
	// heap is the Go heap in use (go_memstats_heap_inuse_bytes) of a role,
	// 0 for a server.
	heap int64
}

// footprint is what one run measured.
type footprint struct {
	jobs int
	// ready is how long the roles took from their start until every one
	// was ready and the planner had scheduled every job.
	ready time.Duration
	of    map[string]usage
}

const mib = 1 << 20

// report reports fp as the benchmark's metrics, with the bytes per job
// above base when fp has jobs and base is known.
func (fp footprint) report(b *testing.B, base *footprint) {
	b.ReportMetric(fp.ready.Seconds(), "s-to-ready")
	for _, name := range processes {
		u := fp.of[name]
		b.ReportMetric(float64(u.rss)/mib, name+"-RSS-MiB")
		b.ReportMetric(float64(u.hwm)/mib, name+"-peak-MiB")
		if slices.Contains(roles, name) {
			b.ReportMetric(float64(u.heap)/mib, name+"-heap-MiB")
		}
		if fp.jobs > 0 && base != nil {
			b.ReportMetric(float64(u.rss-base.of[name].rss)/float64(fp.jobs), name+"-B/job")
		}
	}
}

// measure starts a nats-server and a redis-server of its own, writes jobs
// recurring jobs into the job store, starts the three roles, waits until
// they are ready and the planner scheduled every job, samples their memory
// for settleFor and stops everything.
func measure(b *testing.B, jobs int) footprint {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skipf("no /proc to read the memory of processes from: %v", err)
	}
	bin := testkit.SchedulerBinary(b)
	rs := testkit.RedisServer(b)
	ns := natsServer(b)
	key := seal.GenerateKey()
	if jobs > 0 {
		began := time.Now()
		importJobs(b, ns.URL(), key, jobs)
		b.Logf("%d jobs written into the job store in %s", jobs, time.Since(began).Round(time.Second))
	}

	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SCHEDULER_") {
			env = append(env, kv)
		}
	}
	env = append(env, "SCHEDULER_ENCRYPTION_KEY="+key)
	dir := b.TempDir()
	began := time.Now()
	started := map[string]*role{
		"planner": startRole(b, bin, env, dir, "planner", ns.URL(), "--redis-url", rs.URL()),
		"worker":  startRole(b, bin, env, dir, "worker", ns.URL()),
		"history": startRole(b, bin, env, dir, "history", ns.URL()),
	}
	waitScheduled(b, rs, started, jobs)
	ready := time.Since(began)
	b.Logf("roles ready and %d jobs scheduled %s after the start", jobs, ready.Round(time.Second))

	pids := map[string]int{"nats": ns.Pid(), "redis": rs.Pid()}
	for name, r := range started {
		pids[name] = r.Pid()
	}
	fp := footprint{jobs: jobs, ready: ready, of: settle(b, pids, started)}
	for _, name := range processes {
		u := fp.of[name]
		b.Logf("%-8s RSS %7.1f MiB  peak %7.1f MiB  Go heap in use %7.1f MiB", name, float64(u.rss)/mib, float64(u.hwm)/mib, float64(u.heap)/mib)
	}
	// Stop everything now rather than at the end of the benchmark, so that
	// the next run has the machine to itself.
	for _, p := range []*testkit.Process{started["planner"].Process, started["worker"].Process, started["history"].Process, ns.Process, rs.Process} {
		if err := p.Kill(); err != nil {
			b.Error(err)
		}
	}
	return fp
}

// natsServer starts a nats-server process with JetStream, a file store in
// a temporary folder and the default sync interval (syncing every write
// would make importing a million jobs take far longer, and changes nothing
// of the memory), and waits until it is healthy.
func natsServer(b *testing.B) *testkit.NATSNode {
	b.Helper()
	bin := testkit.NATSServerBinary(b)
	dir := b.TempDir()
	n := &testkit.NATSNode{ServerName: "membench", ClientPort: testkit.FreePort(b), MonitorPort: testkit.FreePort(b),
		StoreDir: filepath.Join(dir, "store"), Config: filepath.Join(dir, "nats.conf")}
	conf := fmt.Sprintf("server_name: %q\nlisten: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\njetstream {\n  store_dir: %q\n}\n",
		n.ServerName, n.ClientPort, n.MonitorPort, n.StoreDir)
	if err := os.WriteFile(n.Config, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	n.Process = testkit.StartProcess(b, "nats-server", filepath.Join(dir, "nats.log"), nil, bin, "-c", n.Config)
	poll(b, time.Minute, 100*time.Millisecond, "nats-server is not healthy", func() error {
		return n.Healthy(context.Background())
	})
	return n
}

// importJobs writes n enabled jobs into the job store, in collections of
// 1,000 (loadtest.ImportJobs): each calls its own HTTP endpoint every 15 minutes,
// starting a day from now (spread over the first 15 minutes), so that none
// is due while the benchmark runs. It seals them with key, the roles' key.
func importJobs(b *testing.B, natsURL, key string, n int) {
	b.Helper()
	ctx := context.Background()
	_, js := testkit.JetStreamAt(b, natsURL)
	raw, err := seal.ParseKey(key)
	if err != nil {
		b.Fatal(err)
	}
	sealer, err := seal.New(raw)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(ctx, js, store.Config{Sealer: sealer})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	first := now.Add(24 * time.Hour).Truncate(time.Second)
	err = loadtest.ImportJobs(ctx, st, n, now, func(i int) string {
		return fmt.Sprintf(`{"startTime": %q, "action": {"type": "Http", "request": {"uri": "https://example.com/hooks/%d", "method": "POST"}},
			"recurrence": {"frequency": "Minute", "interval": 15}}`, first.Add(time.Duration(i%900)*time.Second).Format(time.RFC3339), i)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// role is a role of the binary running as a process, with the base URL of
// its endpoints.
type role struct {
	*testkit.Process
	base string
}

// startRole starts `scheduler serve kind` on a free loopback port,
// connected to natsURL, with flags.
func startRole(b *testing.B, bin string, env []string, dir, kind, natsURL string, flags ...string) *role {
	b.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(b))
	args := append([]string{"serve", kind, "--listen", addr, "--nats-url", natsURL, "--log-format", "text"}, flags...)
	return &role{
		Process: testkit.StartProcess(b, kind, filepath.Join(dir, kind+".log"), env, bin, args...),
		base:    "http://" + addr,
	}
}

var client = &http.Client{Timeout: 10 * time.Second}

// ready returns nil when the role's /readyz answers 200.
func (r *role) ready() error {
	res, err := client.Get(r.base + "/readyz")
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		var reason bytes.Buffer
		_, _ = reason.ReadFrom(res.Body)
		return fmt.Errorf("%s: /readyz %d %s", r.Name, res.StatusCode, strings.TrimSpace(reason.String()))
	}
	return nil
}

// heap returns the role's Go heap in use, from its /metrics.
func (r *role) heap() (int64, error) {
	res, err := client.Get(r.base + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", r.Name, err)
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("%s: no go_memstats_heap_inuse_bytes in /metrics (%d): %v", r.Name, res.StatusCode, lines.Err())
}

// waitScheduled waits until every role is ready and the timer in Redis
// holds jobs entries (one per recurring job), failing at once when a role
// exits.
func waitScheduled(b *testing.B, rs *testkit.RedisProcess, started map[string]*role, jobs int) {
	b.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer rdb.Close()
	ix, err := timer.New(rdb, timer.Config{}) // the planner's default prefix and partitions
	if err != nil {
		b.Fatal(err)
	}
	poll(b, readyWithin, time.Second, "the roles are not ready", func() error {
		for _, name := range roles {
			r := started[name]
			if !r.Running() {
				b.Fatalf("%s exited: %v", name, r.SelfExits())
			}
		}
		n, err := ix.Len(context.Background())
		if err != nil {
			return err
		}
		if n != int64(jobs) {
			return fmt.Errorf("the timer holds %d entries of %d", n, jobs)
		}
		for _, name := range roles {
			if err := started[name].ready(); err != nil {
				return err
			}
		}
		return nil
	})
}

// settle samples the memory of the processes once a second for settleFor
// and returns the last sample, with the Go heap of the roles read at its
// time.
func settle(b *testing.B, pids map[string]int, started map[string]*role) map[string]usage {
	b.Helper()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last map[string]usage
	for end := time.Now().Add(settleFor); ; {
		last = map[string]usage{}
		for name, pid := range pids {
			rss, hwm, err := memoryOf(pid)
			if err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			last[name] = usage{rss: rss, hwm: hwm}
		}
		if !time.Now().Before(end) {
			break
		}
		<-tick.C
	}
	for name, r := range started {
		heap, err := r.heap()
		if err != nil {
			b.Fatal(err)
		}
		u := last[name]
		u.heap = heap
		last[name] = u
	}
	return last
}

// memoryOf returns the VmRSS and VmHWM of a process, in bytes.
func memoryOf(pid int) (rss, hwm int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(data)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, line, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
	}
	return rss, hwm, nil
}

// poll calls cond every interval until it returns nil, failing the
// benchmark with msg and cond's last error after within.
func poll(b *testing.B, within, interval time.Duration, msg string, cond func() error) {
	b.Helper()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s after %s: %v", msg, within, err)
		}
		<-tick.C
	}
}
