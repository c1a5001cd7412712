package dispatch

import (
	"context"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

const retryingJob = `{"startTime": "2026-01-01T00:01:00Z",
	"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST"},
		"retryPolicy": {"retryType": "Fixed", "retryInterval": "PT1M", "retryCount": 2},
		"errorAction": {"type": "Http", "request": {"uri": "https://example.com/error", "method": "POST"}}}}`

// failed returns the failed result of the last execution on EXEC.
func (e *env) failed(t *testing.T) contracts.Result {
	t.Helper()
	x, _ := e.lastExecution(t)
	r := x.Result(contracts.ActionHTTP)
	r.Outcome, r.StartTime, r.EndTime = contracts.Failed, e.clock.Now(), e.clock.Now()
	return r
}

// followUp does for result r what the feedback loop does when it processes
// it at processed: it decides what follows, keeps it in the follow-ups
// bucket, then puts it in the timer.
func (e *env) followUp(t *testing.T, d *Engine, ix *timer.Index, j store.Job, r contracts.Result, processed time.Time) *timer.Entry {
	t.Helper()
	dec := contracts.Decide(r, j.Properties.Action)
	next := &timer.Entry{JobKey: j.Ref.KVKey(), Slot: FollowUpSlot(r.Occurrence, r.ExpectedTime), Expected: r.ExpectedTime,
		Occurrence: r.Occurrence, Action: r.ActionName, Attempt: r.Attempt + 1, Due: processed.Add(dec.Delay),
		Remaining: 0, Revision: j.Revision}
	switch dec.Next {
	case contracts.RunErrorAction:
		next.Action, next.Attempt = contracts.ErrorAction, 0
	case contracts.NoFollowUp:
		next = nil
	}
	if err := d.followUps.Settle(context.Background(), r, next); err != nil {
		t.Fatal(err)
	}
	if next != nil {
		if err := ix.Schedule(context.Background(), *next); err != nil {
			t.Fatal(err)
		}
	}
	return next
}

// Regression: a pending retry lived only in the Redis timer, so a job whose
// first attempt failed never retried, never ran its error action and never
// ended after Redis lost its data (or at every restart of `scheduler dev`).
// Now the retry comes back at its original due time, and one already on
// EXEC is not published twice.
func TestAPendingRetryAndErrorActionSurviveTheLossOfRedis(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	d := e.planner(t, func(c *Config) { c.Lease = 2 * time.Second })
	ix := e.index(t)
	j := e.addJob(t, "retrying", retryingJob)
	e.clock.Set(t0.Add(time.Minute))
	d.Wake()
	e.waitCount(t, 1)
	retry := e.followUp(t, d, ix, j, e.failed(t), e.clock.Now())
	if retry == nil || retry.Attempt != 1 || !retry.Due.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("the retry %+v", retry)
	}
	nextOf := func() time.Time {
		next, _, err := d.inspector.Runtimes(ctx, []contracts.JobRef{j.Ref})
		if err != nil {
			t.Fatal(err)
		}
		return next[0]
	}
	if at := nextOf(); !at.Equal(retry.Due) {
		t.Errorf("the job runs next at %v, want its retry at %v", at, retry.Due)
	}

	testkit.FlushPrefix(e.rdb, e.prefix) // Redis loses everything
	testkit.Eventually(t, 10*time.Second, func() bool {
		got, ok, err := ix.Get(ctx, j.Ref.KVKey(), retry.Slot)
		return err == nil && ok && got.Attempt == 1 && got.Due.Equal(retry.Due)
	}, "the retry was not restored at its due time")
	testkit.Eventually(t, 10*time.Second, d.Ready, "the engine is not ready after the rebuild: %v", d.Problems())

	e.clock.Set(retry.Due)
	d.Wake()
	e.waitCount(t, 2)
	x, _ := e.lastExecution(t)
	if x.Attempt != 1 || x.Occurrence != 1 {
		t.Fatalf("the second execution %+v, want the retry", x)
	}
	// Redis is lost again while the retry waits on EXEC: it is not restored,
	// so not published a second time.
	testkit.FlushPrefix(e.rdb, e.prefix)
	testkit.Eventually(t, 10*time.Second, func() bool {
		built, err := ix.Built(ctx)
		return err == nil && built
	}, "the timer was not rebuilt")
	if _, ok, _ := ix.Get(ctx, j.Ref.KVKey(), retry.Slot); ok {
		t.Fatal("the retry waiting on EXEC was restored: it would run twice")
	}

	// Its last failure runs the error action, which survives the loss too.
	// (The result is processed a minute ahead of the clock, so that the
	// error action, due at once, waits for the loss.)
	r := e.failed(t)
	r.LastAttempt = true
	errorAction := e.followUp(t, d, ix, j, r, e.clock.Now().Add(time.Minute))
	if errorAction == nil || errorAction.Action != contracts.ErrorAction {
		t.Fatalf("the error action %+v", errorAction)
	}
	testkit.FlushPrefix(e.rdb, e.prefix)
	testkit.Eventually(t, 10*time.Second, func() bool {
		got, ok, err := ix.Get(ctx, j.Ref.KVKey(), errorAction.Slot)
		return err == nil && ok && got.Action == contracts.ErrorAction
	}, "the error action was not restored")
	e.clock.Set(errorAction.Due)
	d.Wake()
	e.waitCount(t, 3)
	if x, _ := e.lastExecution(t); x.ActionName != contracts.ErrorAction {
		t.Fatalf("the third execution %+v, want the error action", x)
	}
	// Its result ends the follow-ups: nothing is left to restore.
	done := e.failed(t)
	done.Outcome = contracts.Succeeded
	e.followUp(t, d, ix, j, done, e.clock.Now())
	if _, _, ok, err := d.followUps.store.Get(ctx, j.Ref.KVKey(), errorAction.Slot); ok || err != nil {
		t.Fatalf("the error action is still kept after its result (%v)", err)
	}
}

// A run requested with POST …/run is kept like a retry: a planner that
// starts on an empty Redis (as `scheduler dev` does at every start) runs
// it, once.
func TestARunSurvivesARestartOnAnEmptyRedis(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	j := e.addJob(t, "on-demand", minuteJob(t0.Add(time.Hour), 0))
	a := e.planner(t, func(c *Config) { c.Lease = 2 * time.Second })
	a.Stop() // stopped: it keeps the run without dispatching it
	if err := a.followUps.RunNow(ctx, j); err != nil {
		t.Fatal(err)
	}
	testkit.FlushPrefix(e.rdb, e.prefix) // the planner starts again on an empty Redis
	b := e.planner(t, func(c *Config) { c.Lease = 2 * time.Second })
	e.waitCount(t, 1)
	if x, _ := e.lastExecution(t); !x.Run() {
		t.Fatalf("the execution %+v is not the run", x)
	}
	testkit.FlushPrefix(e.rdb, e.prefix) // and again, the run waiting on EXEC
	testkit.Eventually(t, 10*time.Second, b.Ready, "not ready after the rebuild: %v", b.Problems())
	if n := e.count(t); n != 1 {
		t.Fatalf("%d executions, want the run once", n)
	}
}

// A run that could not be put in the timer is not kept: the caller was told
// it failed, and it must not run later.
func TestARunTheTimerRefusedIsNotKept(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	rdb, o := e.flakyRedis(t)
	e.plannerRDB = rdb
	d := e.planner(t, func(c *Config) { c.Lease = 2 * time.Second })
	j := e.addJob(t, "on-demand", minuteJob(t0.Add(time.Hour), 0))
	o.down.Store(true)
	if err := d.followUps.RunNow(ctx, j); err == nil {
		t.Fatal("a run was accepted while the timer did not answer")
	}
	if all, err := d.followUps.store.List(ctx); err != nil || len(all) != 0 {
		t.Fatalf("a run that could not be scheduled is kept: %+v (%v)", all, err)
	}
}
