package dispatch

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// Regression: when the NATS node leading EXEC died, JetStream's
// acknowledgements never came and the dispatch loop waited for them for
// good, while readiness stayed green. Here EXEC is gone and a subscriber
// swallows the executions without answering, which is what a publisher
// sees then: the dispatcher gives the attempt back after PublishTimeout,
// reports that it makes no progress, and publishes it (once) when the
// stream answers again.
func TestDispatchDoesNotWaitForAnAcknowledgementThatNeverComes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	d := e.planner(t, func(c *Config) {
		c.Lease, c.PublishTimeout, c.StallAfter, c.MaxIdle = 5*time.Second, 300*time.Millisecond, 2*time.Second, 50*time.Millisecond
	})
	if err := e.js.DeleteStream(ctx, contracts.ExecStream); err != nil {
		t.Fatal(err)
	}
	nc, _ := testkit.JetStream(t, e.ns)
	var swallowed atomic.Int64
	sub, err := nc.Subscribe(contracts.ExecSubjectPrefix+">", func(*nats.Msg) { swallowed.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	e.addJob(t, "j", minuteJob(t0.Add(time.Minute), 0))
	e.clock.Set(t0.Add(time.Minute))
	d.Wake()
	testkit.Eventually(t, 10*time.Second, func() bool { return swallowed.Load() >= 2 },
		"the attempt was not published again after its acknowledgement did not come")
	testkit.Eventually(t, 10*time.Second, func() bool {
		for _, p := range d.Problems() {
			if strings.Contains(p, "dispatch has made no progress") {
				return true
			}
		}
		return false
	}, "readiness does not say that dispatch is stuck: %v", d.Problems())

	// The stream answers again: the occurrence is stored once, and the
	// engine is ready again.
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := streams.EnsureExec(ctx, e.js, 1, DuplicateWindow(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	e.waitCount(t, 1)
	testkit.Eventually(t, 10*time.Second, d.Ready, "not ready once dispatch goes on: %v", d.Problems())
	checkOnce(t, e.executions(t), 1, 1)
}
