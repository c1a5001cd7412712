package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// A worker paused for longer than its ack wait (SIGSTOP) used to perform,
// when it resumed, the executions it had pulled before the pause, which
// JetStream had given to another worker meanwhile. It now skips a delivery
// whose ack wait may have run out, without handing it back, and the other
// worker performs each execution once.
func TestAWorkerSkipsDeliveriesWhoseAckWaitMayHaveRunOut(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	const ackWait = 2 * time.Second
	// The paused worker's clock reads an ack wait later at every reading,
	// as if the process stopped for that long between any two steps.
	var paused atomic.Int64
	pausedClock := func() time.Time { return time.Now().Add(time.Duration(paused.Add(int64(ackWait)))) }
	late, obs := newRecorder(), newObserver()
	w, _ := e.worker(t, late, func(c *Config) { c.AckWait, c.Observer, c.clock = ackWait, obs, pausedClock })
	const n = 3
	for i := range n {
		e.execution(t, i+1, nil)
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return obs.skips(SkipStale)+late.count() >= n },
		"%d stale deliveries skipped and %d performed, of %d", obs.skips(SkipStale), late.count(), n)
	skippedAt := time.Now()
	w.Stop(context.Background())
	if late.count() != 0 {
		t.Fatalf("the paused worker performed %d stale deliveries", late.count())
	}

	rec := newRecorder()
	e.worker(t, rec, func(c *Config) { c.AckWait = ackWait })
	testkit.Eventually(t, 20*time.Second, func() bool { return len(e.results(t)) == n }, "%d results of %d", len(e.results(t)), n)
	testkit.Eventually(t, 10*time.Second, func() bool { return e.pendingExecutions(t) == 0 }, "executions left unacknowledged")
	seen := map[string]int{}
	for _, id := range rec.ids() {
		seen[id]++
	}
	if len(seen) != n || rec.count() != n {
		t.Fatalf("%d executions performed %d times by the other worker, want %d once each", len(seen), rec.count(), n)
	}
	if got := obs.skips(SkipStale); got != n {
		t.Errorf("%d stale deliveries skipped, want %d", got, n)
	}
	// Not handed back: JetStream delivered them again only when their ack
	// wait ran out, not as soon as the other worker asked.
	if waited := rec.first().Sub(skippedAt); waited < ackWait/2 {
		t.Errorf("the skipped executions were delivered again %s after the skip: they were handed back", waited)
	}
}

func TestTheStaleGuardLeavesMostOfTheAckWait(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ackWait, wait, guard, hb time.Duration }{
		{time.Second, 200 * time.Millisecond, 200 * time.Millisecond, 0},
		{10 * time.Second, 2 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{90 * time.Second, 5 * time.Second, 5 * time.Second, 1250 * time.Millisecond},
	} {
		wait, guard, hb := pullWait(c.ackWait), staleGuard(c.ackWait), pullHeartbeat(pullWait(c.ackWait))
		if wait != c.wait || guard != c.guard || hb != c.hb {
			t.Errorf("AckWait %s: pull wait %s, guard %s, heartbeat %s; want %s, %s, %s", c.ackWait, wait, guard, hb, c.wait, c.guard, c.hb)
		}
		// A message delivered at the very end of a pull request still has
		// more than half its ack wait to be started in.
		if left := c.ackWait - guard - wait; left < c.ackWait/2 {
			t.Errorf("AckWait %s: %s left to start a delivery", c.ackWait, left)
		}
	}
}
