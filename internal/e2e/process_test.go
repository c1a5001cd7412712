package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testkit.RemoveBinary()
	os.Exit(code)
}

// schedulerBinary is the scheduler, built once for the package's tests.
func schedulerBinary(t *testing.T) string { return testkit.SchedulerBinary(t) }

// process is a worker running as its own process.
type process struct {
	cmd    *exec.Cmd
	output *bytes.Buffer
}

// workerProcess starts `scheduler serve worker` against the system's NATS
// with the given extra flags.
func (s *system) workerProcess(t *testing.T, name string, flags ...string) *process {
	t.Helper()
	cmd := exec.Command(schedulerBinary(t), append([]string{"serve", "worker", "--listen", "127.0.0.1:0",
		"--allow-loopback", "--name", name, "--log-format", "text"}, flags...)...)
	cmd.Env = append(os.Environ(),
		"SCHEDULER_NATS_URL="+s.ns.ClientURL(),
		"SCHEDULER_ENCRYPTION_KEY="+base64.StdEncoding.EncodeToString(s.key))
	p := &process{cmd: cmd, output: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.output, p.output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %s said:\n%s", name, p.output)
		}
	})
	return p
}

// resultEvents collects the result events published on NATS.
func resultEvents(t *testing.T, s *system) func() []contracts.ResultEvent {
	t.Helper()
	nc, err := nats.Connect(s.ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	var (
		mu  sync.Mutex
		out []contracts.ResultEvent
	)
	if _, err := nc.Subscribe(contracts.ResultSubjectPrefix+">", func(m *nats.Msg) {
		var ev contracts.ResultEvent
		if json.Unmarshal(m.Data, &ev) == nil {
			mu.Lock()
			out = append(out, ev)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() []contracts.ResultEvent {
		mu.Lock()
		defer mu.Unlock()
		return append([]contracts.ResultEvent(nil), out...)
	}
}

// Three worker processes share the execution consumer: every execution is
// performed once, by one of them, and all three take part.
func TestThreeWorkerProcessesShareTheWork(t *testing.T) {
	t.Parallel()
	s := start(t, options{workers: 0})
	s.workers[0].Stop(t.Context()) // only the processes work
	for i := range 3 {
		s.workerProcess(t, fmt.Sprintf("proc-%d", i+1), "--concurrency", "2")
	}
	events := resultEvents(t, s)
	tg := newTarget(t, s.clock, nil)
	const jobs = 45 // a Standard collection holds 50
	for i := range jobs {
		s.put(fmt.Sprintf("job-%02d", i), httpJob(tg.URL+"/work", "", `, "startTime": "2026-06-01T08:01:00Z"`))
	}
	s.tick(time.Minute)
	calls := tg.waitCalls(t, "/work", jobs)
	testkit.Eventually(t, 60*time.Second, func() bool { return len(events()) >= jobs }, "%d result events of %d", len(events()), jobs)

	keys := map[string]int{}
	for _, c := range calls {
		keys[c.header.Get("Idempotency-Key")]++
	}
	workers := map[string]int{}
	for _, ev := range events() {
		workers[ev.Data.Worker]++
	}
	if len(calls) != jobs || len(keys) != jobs {
		t.Fatalf("%d calls with %d distinct keys, want %d once each", len(calls), len(keys), jobs)
	}
	if len(workers) != 3 {
		t.Errorf("the work went to %v, want all three workers", workers)
	}
	for i := range jobs {
		name := fmt.Sprintf("job-%02d", i)
		s.waitJob(name, func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	}
}

// A worker killed (SIGKILL) in the middle of an action has its execution
// delivered again after AckWait: another worker performs it, with the same
// idempotency key, and it is counted and stored once.
func TestAnActionOfAKilledWorkerIsPerformedByAnother(t *testing.T) {
	t.Parallel()
	s := start(t, options{workers: 0})
	s.workers[0].Stop(t.Context())
	release := make(chan struct{})
	defer close(release)
	tg := newTarget(t, s.clock, func(_ string, n int) int {
		if n == 0 {
			<-release // the first call never gets an answer while its worker lives
		}
		return http.StatusOK
	})
	first := s.workerProcess(t, "doomed", "--ack-wait", "2s")
	s.put("survivor", httpJob(tg.URL+"/work", "", `, "startTime": "2026-06-01T08:01:00Z"`))
	s.tick(time.Minute)
	tg.waitCalls(t, "/work", 1)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()

	s.workerProcess(t, "heir", "--ack-wait", "2s")
	calls := tg.waitCalls(t, "/work", 2)
	if a, b := calls[0].header.Get("Idempotency-Key"), calls[1].header.Get("Idempotency-Key"); a == "" || a != b {
		t.Errorf("idempotency keys %q and %q, want the same", a, b)
	}
	j := s.waitJob("survivor", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	if j.Properties.Status.ExecutionCount != 1 {
		t.Errorf("status %+v, want one execution", j.Properties.Status)
	}
	s.waitHistory("survivor", 1)
}

// SIGTERM makes a worker process stop fetching and finish the action in
// flight before it exits: its result is stored and nothing is performed
// twice.
func TestAWorkerStopsGracefullyOnSIGTERM(t *testing.T) {
	t.Parallel()
	s := start(t, options{workers: 0})
	s.workers[0].Stop(t.Context())
	release := make(chan struct{})
	tg := newTarget(t, s.clock, func(_ string, n int) int {
		if n == 0 {
			<-release
		}
		return http.StatusOK
	})
	w := s.workerProcess(t, "graceful", "--drain-timeout", "30s")
	s.put("inflight", httpJob(tg.URL+"/work", "", `, "startTime": "2026-06-01T08:01:00Z"`))
	s.tick(time.Minute)
	tg.waitCalls(t, "/work", 1)
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	close(release) // the action finishes while the worker drains
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the worker exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not exit after SIGTERM")
	}
	j := s.waitJob("inflight", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	if j.Properties.Status.ExecutionCount != 1 || len(tg.callsTo("/work")) != 1 {
		t.Errorf("status %+v after %d calls", j.Properties.Status, len(tg.callsTo("/work")))
	}
}
