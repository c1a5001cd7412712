//go:build unix

package faults

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testkit.RemoveBinary()
	testkit.RemoveNATSServerBinary()
	os.Exit(code)
}

// plans are the suite's two forms.
var plans = map[string]Plan{
	// About two minutes of faults, each kind once, with a short lease and
	// ack wait so that the run fits in CI.
	"short": {
		Settings: Settings{Lease: 5 * time.Second, AckWait: 10 * time.Second, ActionTimeout: 5 * time.Second},
		Mix:      Mix{Window: 180 * time.Second, TickEvery: 2 * time.Second, Of: 1, Count: 3, RetryInterval: 15 * time.Second},
		Faults:   EveryKind,
		Down:     10 * time.Second,
		Gap:      5 * time.Second,
	},
	// Every fault three times, more jobs, and the planners' default lease
	// (30 s), the one the lateness bound is stated for.
	"full": {
		Settings: Settings{Lease: 30 * time.Second, AckWait: 30 * time.Second, ActionTimeout: 20 * time.Second},
		Mix:      Mix{Window: 20 * time.Minute, TickEvery: 2 * time.Second, Of: 3, Count: 5, RetryInterval: 15 * time.Second},
		Faults:   slices.Concat(EveryKind, EveryKind, EveryKind),
		Down:     20 * time.Second,
		Gap:      10 * time.Second,
	},
}

// The whole system survives the loss, pause or restart of any one part:
// a planner, a worker, the NATS node leading EXEC or the KV bucket, Redis
// (flushed or killed). See the package documentation for what is checked.
func TestFaultSuite(t *testing.T) {
	mode := testkit.FaultsMode(t)
	plan := plans[mode]
	o := Run(t, plan)
	r := Analyze(o)
	r.Print(t.Logf)
	for _, c := range r.Failed() {
		t.Errorf("%s: %s", c.Name, c.Detail)
	}
}
