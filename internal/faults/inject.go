//go:build unix

package faults

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// Injector injects faults into a system, one after the other, each
// starting from a healthy system.
type Injector struct {
	Sys *System
	// Down is how long a killed NATS node or Redis stays down.
	Down time.Duration
	// Gap is the pause between a fault's recovery and the next fault.
	Gap time.Duration
	// Healthy bounds the wait for a healthy system after a fault, which
	// must then stay healthy for Stable before the next fault. Stable
	// defaults to half the lease plus a second, so that a planner has
	// looked at Redis in between (it does every quarter lease).
	Healthy, Stable time.Duration
	// NextDue returns the next instant at which occurrences fall due
	// after a time; a planner or NATS node is hit just before, while
	// occurrences are claimed and being published. Nil: at once.
	NextDue func(time.Time) time.Time
	// Logf reports progress.
	Logf func(format string, args ...any)

	n map[Kind]int // faults of each kind so far
}

// Run injects the faults in order and returns what was done.
func (in *Injector) Run(ctx context.Context, kinds []Kind) []Fault {
	in.n = map[Kind]int{}
	var out []Fault
	for _, k := range kinds {
		if ctx.Err() != nil {
			break
		}
		f := in.inject(ctx, k)
		in.n[k]++
		hctx, cancel := context.WithTimeout(ctx, in.Healthy)
		if at, err := in.Sys.WaitStable(hctx, cmp.Or(in.Stable, in.Sys.Settings.Lease/2+time.Second)); err != nil {
			f.Problem = joinProblems(f.Problem, fmt.Sprintf("not healthy %s after: %v", in.Healthy, err))
		} else {
			f.Healthy = at
		}
		cancel()
		in.Logf("%s %s: %s → lifted +%s, healthy +%s %s", f.Start.Format("15:04:05.000"), f.Kind, f.Target,
			f.End.Sub(f.Start).Round(time.Millisecond), since(f.Start, f.Healthy), f.Problem)
		out = append(out, f)
		sleep(ctx, in.Gap)
	}
	return out
}

func since(from, to time.Time) string {
	if to.IsZero() {
		return "never"
	}
	return to.Sub(from).Round(time.Millisecond).String()
}

func joinProblems(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// sleep waits d or until ctx ends: a fault lasts d.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// beforeDue waits until 250 ms before the next instant occurrences fall
// due: planners claim and publish them up to 2 s ahead, so a fault then
// meets the executions the workers hold for this instant and, as it lasts
// past it, the claims and publishes of the next.
func (in *Injector) beforeDue(ctx context.Context) {
	if in.NextDue != nil {
		sleep(ctx, time.Until(in.NextDue(time.Now().Add(time.Second)).Add(-250*time.Millisecond)))
	}
}

// inject injects one fault and lifts it.
func (in *Injector) inject(ctx context.Context, k Kind) Fault {
	s := in.Sys
	f := Fault{Kind: k}
	n := in.n[k]
	switch k {
	case KillPlanner, PausePlanner:
		// Kills hit the planners in turn, pauses the other one.
		i := n % len(s.Planners)
		if k == PausePlanner {
			i = (n + 1) % len(s.Planners)
		}
		p := s.Planners[i]
		f.Target = p.Name
		in.beforeDue(ctx)
		in.hit(ctx, &f, p, k == PausePlanner, s.Settings.Lease+3*time.Second)
	case KillWorker, PauseWorker:
		w := s.Workers[n%len(s.Workers)]
		wait, cancel := context.WithTimeout(ctx, 20*time.Second)
		c, ok := s.Sink.WaitInFlight(wait)
		cancel()
		if ok {
			f.Key = c.Key
			for _, o := range s.Workers {
				if o.Name == c.Worker {
					w = o
				}
			}
		} else {
			f.Problem = "no action in flight with a known worker; hit " + w.Name
		}
		f.Target = w.Name
		hold := 2 * time.Second
		if k == PauseWorker {
			hold = s.Settings.AckWait + 3*time.Second
		}
		in.hit(ctx, &f, w, k == PauseWorker, hold)
	case KillExecLeader, KillKVLeader:
		stream := contracts.ExecStream
		if k == KillKVLeader {
			stream = "KV_" + contracts.JobsBucket
		}
		var leader *testkit.NATSNode
		var err error
		deadline := time.Now().Add(20 * time.Second)
		for leader, err = s.NATS.LeaderOf(ctx, stream); err != nil && time.Now().Before(deadline); leader, err = s.NATS.LeaderOf(ctx, stream) {
			sleep(ctx, 200*time.Millisecond)
		}
		if k == KillExecLeader && err == nil {
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			leader, err = s.LeadAwayFromPlanners(lctx, stream)
			cancel()
		}
		if err != nil {
			f.Problem = "finding the leader: " + err.Error()
			f.Start, f.End = time.Now(), time.Now()
			return f
		}
		f.Target = "nats " + leader.ServerName
		in.beforeDue(ctx)
		f.Start = time.Now()
		if err := FreezeAndKill(ctx, leader.Process); err != nil {
			f.Problem = err.Error()
		}
		sleep(ctx, in.Down)
		if err := leader.Start(); err != nil {
			f.Problem = joinProblems(f.Problem, err.Error())
		}
		f.End = time.Now()
	case FlushRedis:
		f.Target, f.Start = "redis", time.Now()
		if err := s.Redis.FlushAll(ctx); err != nil {
			f.Problem = err.Error()
		}
		f.End = f.Start
	case KillRedis:
		f.Target, f.Start = "redis", time.Now()
		if err := s.Redis.Kill(); err != nil {
			f.Problem = err.Error()
		}
		sleep(ctx, in.Down/2)
		if err := s.Redis.Start(); err != nil {
			f.Problem = joinProblems(f.Problem, err.Error())
		}
		f.End = time.Now()
		up, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := s.Redis.WaitUp(up); err != nil {
			f.Problem = joinProblems(f.Problem, err.Error())
		}
		cancel()
	default:
		f.Problem = "unknown fault"
	}
	return f
}

// LeadAwayFromPlanners moves the lead of stream to a node no planner is
// connected to, if it is not there already, and returns that node. Killing
// it is the worst case: the planners' connections survive, so nothing
// fails the acknowledgements they wait for from it.
func (s *System) LeadAwayFromPlanners(ctx context.Context, stream string) (*testkit.NATSNode, error) {
	leader, err := s.NATS.LeaderOf(ctx, stream)
	if err != nil {
		return nil, err
	}
	var free []*testkit.NATSNode
	for _, n := range s.NATS.Nodes {
		planners, err := n.Clients(ctx, "scheduler planner")
		if err != nil {
			return nil, err
		}
		if planners == 0 {
			free = append(free, n)
		}
	}
	switch {
	case len(free) == 0:
		return leader, nil // every node has a planner: any will do
	case slices.Contains(free, leader):
		return leader, nil
	}
	return free[0], s.NATS.MoveLeader(ctx, stream, free[0])
}

// Freeze is how long FreezeAndKill keeps a node stopped before it kills
// it: long enough for occurrences of two instants (2 s apart in the
// suite) to come due meanwhile, so that every planner has a publish
// waiting on the node; shorter than a Raft election, so the node still
// leads when it dies.
const Freeze = 2500 * time.Millisecond

// FreezeAndKill stops a NATS node (SIGSTOP) for Freeze, then kills it
// (-9): publishes sent meanwhile wait on it for their acknowledgement
// when it dies, as when a node dies under load, which a kill at a random
// moment rarely hits.
func FreezeAndKill(ctx context.Context, p *testkit.Process) error {
	if err := p.Pause(); err != nil {
		return err
	}
	sleep(ctx, Freeze)
	return p.Kill()
}

// hit kills (and starts again) or pauses (and resumes) a role, keeping
// it down for d.
func (in *Injector) hit(ctx context.Context, f *Fault, r *Role, pause bool, d time.Duration) {
	r.Hold(true)
	defer r.Hold(false)
	f.Start = time.Now()
	var err error
	if pause {
		err = r.Pause()
	} else {
		err = r.Kill()
	}
	if err != nil {
		f.Problem = joinProblems(f.Problem, err.Error())
	}
	sleep(ctx, d)
	if pause {
		err = r.Resume()
	} else {
		err = r.Start()
	}
	if err != nil {
		f.Problem = joinProblems(f.Problem, err.Error())
	}
	f.End = time.Now()
}

// WaitStable waits until the system is healthy (see WaitHealthy) and has
// stayed so for d, and returns when that period began.
func (s *System) WaitStable(ctx context.Context, d time.Duration) (time.Time, error) {
	for {
		if err := s.WaitHealthy(ctx); err != nil {
			return time.Time{}, err
		}
		since := time.Now()
		for s.healthyNow(ctx) == nil {
			if time.Since(since) >= d {
				return since, nil
			}
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

// healthyNow returns what is not healthy at this moment.
func (s *System) healthyNow(ctx context.Context) error {
	var errs []error
	for _, r := range s.Roles() {
		if code, body := r.Probe(ctx, "/readyz"); code != http.StatusOK {
			errs = append(errs, fmt.Errorf("%s: /readyz %d %s", r.Name, code, body))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, s.NATS.Healthy(ctx))
	}
	return errors.Join(errs...)
}

// WaitHealthy waits until every role is ready and every NATS node healthy
// and routed to the others, or ctx ends.
func (s *System) WaitHealthy(ctx context.Context) error {
	for {
		err := WaitReady(ctx, s.Roles()...)
		if err == nil {
			err = s.NATS.Healthy(ctx)
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
