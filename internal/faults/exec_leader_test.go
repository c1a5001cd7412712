//go:build unix

package faults

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// Regression: killing the NATS node that leads the EXEC stream stopped
// dispatch for good; both planners, connected to surviving nodes, waited
// for acknowledgements that never came. With a one-time job due every
// second, three times: the lead of EXEC goes to a node no planner is
// connected to, which is frozen while occurrences come due (so their
// publishes wait on it), then killed -9 and kept down for a while. Each
// time, calls go on within NATSResumeBound of the kill, and none is lost.
// (One kill does not always catch the bug: the planners are not always
// left waiting.)
func TestKillingTheEXECLeaderDoesNotStopDispatch(t *testing.T) {
	testkit.FaultsMode(t)
	sys := StartSystem(t, Settings{Planners: 2, Workers: 1, NoHistory: true})
	const (
		n      = 80
		kills  = 3
		every  = 25 * time.Second // a kill every 25 s from +10 s
		down   = 12 * time.Second
		settle = NATSResumeBound + 20*time.Second
	)
	t0 := time.Now().Add(15 * time.Second).Truncate(time.Second)
	jobs := make([]JobSpec, n)
	for i := range jobs {
		jobs[i] = JobSpec{Name: fmt.Sprintf("second-%02d", i), Target: Succeeds, Start: t0.Add(time.Duration(i) * time.Second)}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code, body, err := sys.API.Do(ctx, http.MethodPut, CollectionPath+"/jobs/"+jobs[i].Name, jobs[i].Definition(sys.Sink.URL()))
		cancel()
		if err != nil || code != http.StatusCreated {
			t.Fatalf("creating job %s: %d %s %v", jobs[i].Name, code, body, err)
		}
	}

	type kill struct {
		node      string
		at, until time.Time
	}
	var done []kill
	for k := range kills {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		leader, err := sys.LeadAwayFromPlanners(ctx, contracts.ExecStream)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		sleep(t.Context(), time.Until(t0.Add(10*time.Second+time.Duration(k)*every-250*time.Millisecond)))
		at := time.Now()
		if err := FreezeAndKill(t.Context(), leader.Process); err != nil {
			t.Fatal(err)
		}
		sleep(t.Context(), down)
		if err := leader.Start(); err != nil {
			t.Fatal(err)
		}
		done = append(done, kill{node: leader.ServerName, at: at, until: time.Now()})
		ctx, cancel = context.WithTimeout(t.Context(), 60*time.Second)
		err = sys.NATS.WaitHealthy(ctx)
		cancel()
		if err != nil {
			t.Fatalf("the NATS cluster is not healthy after %s came back: %v", leader.ServerName, err)
		}
	}

	deadline := jobs[n-1].Start.Add(settle)
	first := map[string]Call{}
	for time.Now().Before(deadline) && len(first) < n {
		for _, c := range sys.Sink.Calls() {
			if _, ok := first[c.Job]; !ok {
				first[c.Job] = c
			}
		}
		sleep(t.Context(), 200*time.Millisecond)
	}
	var lost []string
	for _, j := range jobs {
		if _, ok := first[j.Name]; !ok {
			lost = append(lost, j.Name)
		}
	}
	for _, k := range done {
		// How late the occurrences due while the node was away were
		// dispatched, counted from the kill for those due before it.
		var delay time.Duration
		due := 0
		for _, j := range jobs {
			if j.Start.Before(k.at) || j.Start.After(k.until) {
				continue
			}
			due++
			if c, ok := first[j.Name]; ok {
				delay = max(delay, c.At.Sub(latest(j.Start, k.at)))
			} else {
				delay = infinite
			}
		}
		t.Logf("killed %s, the EXEC leader, at +%s for %s: %d occurrences due meanwhile, dispatched within %s (bound %s)",
			k.node, k.at.Sub(t0).Round(time.Millisecond), k.until.Sub(k.at).Round(time.Millisecond), due, dur(delay), NATSResumeBound)
		if delay > NATSResumeBound {
			t.Errorf("dispatch resumed %s after the EXEC leader was killed at +%s, want within %s",
				dur(delay), k.at.Sub(t0).Round(time.Millisecond), NATSResumeBound)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d occurrences lost: %v", len(lost), n, lost)
	}
}
