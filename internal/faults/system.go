//go:build unix

package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// Role is one process of the scheduler: a planner, a worker or the
// history role.
type Role struct {
	*testkit.Process
	// Kind is planner, worker or history.
	Kind string
	// Port is the port of its --listen address.
	Port int

	// held is set while a fault keeps the role down on purpose, so that
	// the supervisor does not start it again.
	held atomic.Bool
}

// URL returns the base URL of the role's --listen address.
func (r *Role) URL() string { return "http://127.0.0.1:" + strconv.Itoa(r.Port) }

// Probe returns the status of GET path (/readyz, /healthz), 0 when there
// is no answer within a second, and the body.
func (r *Role) Probe(ctx context.Context, path string) (int, string) {
	return probe(ctx, r.URL()+path)
}

// System is a scheduler cluster of processes: a 3-node JetStream
// cluster, a redis-server, planners, workers and the history role of the
// real binary, all with --replicas 3, and the sink their jobs call.
type System struct {
	Settings Settings
	NATS     *testkit.JetStreamCluster
	Redis    *testkit.RedisProcess
	Planners []*Role
	Workers  []*Role
	History  *Role
	Sink     *Sink
	// Answers records every answer of the API; API is the suite's client.
	Answers *Answers
	API     *API
	// Timeline records when each part was ready and when not.
	Timeline *Timeline

	t   testing.TB
	bin string
	dir string
	key string
	env []string
}

// StartSystem starts the servers and the roles, waits until every role
// is ready, and creates the job collection. Everything is stopped (killed)
// when the test ends.
func StartSystem(t testing.TB, settings Settings) *System {
	t.Helper()
	s := &System{Settings: settings.withDefaults(), t: t, dir: t.TempDir(), key: seal.GenerateKey(), Answers: &Answers{}}
	if dir := os.Getenv(LogsEnv); dir != "" {
		s.dir = filepath.Join(dir, t.Name())
		if err := os.MkdirAll(s.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Logf("the roles' output goes to %s", s.dir)
	}
	s.bin = testkit.SchedulerBinary(t)
	s.Redis = testkit.RedisServer(t)
	s.NATS = testkit.NATSCluster(t, 3)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SCHEDULER_") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "SCHEDULER_ENCRYPTION_KEY="+s.key)

	var err error
	s.Sink, err = NewSink(Behaviour{Hold: s.Settings.Hold}, func(addr string) string { return socketOwner(addr, s.workerPids()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Sink.Close)

	for i := range s.Settings.Planners {
		s.Planners = append(s.Planners, s.role("planner", fmt.Sprintf("planner-%d", i+1),
			"--redis-url", s.Redis.URL(), "--lease", s.Settings.Lease.String(), "--action-timeout", s.Settings.ActionTimeout.String()))
		if i == 0 {
			// The first creates the bucket and the streams; the others
			// then find them.
			s.waitReady(s.Planners[0], 90*time.Second)
		}
	}
	if !s.Settings.NoHistory {
		s.History = s.role("history", "history")
	}
	for i := range s.Settings.Workers {
		name := fmt.Sprintf("worker-%d", i+1)
		s.Workers = append(s.Workers, s.role("worker", name, "--name", name, "--allow-loopback",
			"--ack-wait", s.Settings.AckWait.String(), "--drain-timeout", "2s"))
	}
	for _, r := range s.Roles() {
		s.waitReady(r, 90*time.Second)
	}
	bases := make([]string, len(s.Planners))
	for i, p := range s.Planners {
		bases[i] = p.URL()
	}
	s.API = &API{Bases: bases, Record: s.Answers, Source: "suite"}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	s.Timeline = NewTimeline()
	wg.Add(2)
	go func() { defer wg.Done(); s.supervise(ctx) }()
	go func() { defer wg.Done(); s.Timeline.Watch(ctx, s.probes()) }()

	create, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if code, body, err := s.API.Do(create, http.MethodPut, CollectionPath,
		`{"properties": {"sku": {"name": "P20Premium"}}}`); err != nil || code != http.StatusCreated {
		t.Fatalf("creating the job collection: %d %s %v", code, body, err)
	}
	return s
}

// role starts one process of the scheduler binary.
func (s *System) role(kind, name string, flags ...string) *Role {
	r := &Role{Kind: kind, Port: testkit.FreePort(s.t)}
	args := append([]string{"serve", kind, "--nats-url", s.NATS.URLs(), "--replicas", "3",
		"--listen", "127.0.0.1:" + strconv.Itoa(r.Port), "--log-format", "text"}, flags...)
	r.Process = testkit.StartProcess(s.t, name, filepath.Join(s.dir, name+".log"), s.env, s.bin, args...)
	return r
}

// waitReady waits until the role's /readyz answers 200.
func (s *System) waitReady(r *Role, within time.Duration) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := WaitReady(ctx, r); err != nil {
		s.t.Fatal(err)
	}
}

// WaitReady waits until every role's /readyz answers 200, or ctx ends.
func WaitReady(ctx context.Context, roles ...*Role) error {
	for {
		var errs []error
		for _, r := range roles {
			if code, body := r.Probe(ctx, "/readyz"); code != http.StatusOK {
				errs = append(errs, fmt.Errorf("%s: /readyz %d %s", r.Name, code, body))
			}
		}
		if len(errs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(errs...)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Roles returns every role: the planners, the history role, the workers.
func (s *System) Roles() []*Role {
	roles := append([]*Role(nil), s.Planners...)
	if s.History != nil {
		roles = append(roles, s.History)
	}
	return append(roles, s.Workers...)
}

// workerPids maps the running workers' process ids to their names.
func (s *System) workerPids() map[int]string {
	out := map[int]string{}
	for _, w := range s.Workers {
		if pid := w.Pid(); pid != 0 {
			out[pid] = w.Name
		}
	}
	return out
}

// Hold marks a role as kept down by a fault, or releases it.
func (r *Role) Hold(down bool) { r.held.Store(down) }

// supervise starts again, as an orchestrator would, every role that
// exited by itself (the exit is recorded by its Process).
func (s *System) supervise(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		for _, r := range s.Roles() {
			if !r.held.Load() && !r.Running() {
				_ = r.Start()
			}
		}
	}
}

// probes lists what the timeline watches: every role's /readyz and every
// NATS node's /healthz.
func (s *System) probes() map[string]string {
	out := map[string]string{}
	for _, r := range s.Roles() {
		out[r.Name] = r.URL() + "/readyz"
	}
	for _, n := range s.NATS.Nodes {
		out["nats "+n.ServerName] = n.MonitorURL() + "/healthz"
	}
	return out
}
