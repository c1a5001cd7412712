package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// backfillRuns returns the expected time (after t0) of each run outside
// the schedule published, in order, failing on an attempt published twice.
func (e *env) backfillRuns(t *testing.T) []string {
	t.Helper()
	var out []string
	ids := map[string]bool{}
	for _, x := range e.executions(t) {
		if ids[x.OccurrenceID] {
			t.Fatalf("attempt %s published twice", x.OccurrenceKey)
		}
		ids[x.OccurrenceID] = true
		if x.Occurrence == 0 {
			out = append(out, x.ExpectedTime.Sub(t0).String())
		}
	}
	return out
}

// A backfill runs each instant of the range in order, as runs outside the
// schedule with the instants as expected times, one per pace; the one
// pending survives the loss of Redis, and none runs twice. A second
// backfill is refused while one is pending.
func TestABackfillRunsEachInstantInOrderAndSurvivesARedisFlush(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.clock.Set(t0.Add(time.Hour))
	j := e.addJob(t, "daily", minuteJob(t0.Add(time.Minute), 0))
	d := e.planner(t, func(c *Config) { c.Lease = 2 * time.Second })
	ix := e.index(t)

	plan, err := d.followUps.Backfill(ctx, j, t0.Add(90*time.Second), t0.Add(6*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if want := (api.BackfillPlan{Count: 5, First: t0.Add(2 * time.Minute), Last: t0.Add(6 * time.Minute), Pace: time.Second}); plan != want {
		t.Fatalf("plan %+v, want %+v", plan, want)
	}
	if _, err := d.followUps.Backfill(ctx, j, t0.Add(time.Minute), t0.Add(2*time.Minute)); !errors.Is(err, api.ErrBackfillPending) {
		t.Fatalf("a second backfill while one is pending: %v, want ErrBackfillPending", err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.backfillRuns(t)) == 1 }, "the first run was not published at once")
	var next timer.Entry
	testkit.Eventually(t, 10*time.Second, func() bool {
		got, ok, err := ix.Get(ctx, j.Ref.KVKey(), backfillSlot)
		next = got
		return err == nil && ok && got.Expected.Equal(t0.Add(3*time.Minute))
	}, "the first run was not committed with the next after it")
	if !next.Due.Equal(e.clock.Now().Add(time.Second)) {
		t.Fatalf("the next run %+v, want 3m due a pace from now", next)
	}

	testkit.FlushPrefix(e.rdb, e.prefix) // Redis loses everything
	testkit.Eventually(t, 10*time.Second, func() bool {
		got, ok, err := ix.Get(ctx, j.Ref.KVKey(), backfillSlot)
		return err == nil && ok && got.Expected.Equal(next.Expected) && got.Due.Equal(next.Due)
	}, "the pending backfill was not restored")
	testkit.Eventually(t, 10*time.Second, d.Ready, "not ready after the rebuild: %v", d.Problems())

	// The clock moves to each run as it comes due.
	testkit.Eventually(t, 30*time.Second, func() bool {
		if got, ok, err := ix.Get(ctx, j.Ref.KVKey(), backfillSlot); err == nil && ok && got.Due.After(e.clock.Now()) {
			if pace := got.Due.Sub(e.clock.Now()); pace != time.Second {
				t.Errorf("run %s is due %s after the one before, not a pace (1s)", got.Expected, pace)
			}
			e.clock.Set(got.Due)
			d.Wake()
		}
		return len(e.backfillRuns(t)) >= 5
	}, "the backfill did not run every instant")
	if got, want := e.backfillRuns(t), []string{"2m0s", "3m0s", "4m0s", "5m0s", "6m0s"}; !slices.Equal(got, want) {
		t.Fatalf("backfill ran %v, want %v", got, want)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, inTimer, _ := ix.Get(ctx, j.Ref.KVKey(), backfillSlot)
		_, _, kept, _ := d.followUps.store.Get(ctx, j.Ref.KVKey(), backfillSlot)
		return !inTimer && !kept
	}, "the backfill is still pending after its last run")
	// Once it has run, another is accepted.
	if _, err := d.followUps.Backfill(ctx, j, t0.Add(time.Minute), t0.Add(2*time.Minute)); err != nil {
		t.Fatalf("a backfill after the last one ran: %v", err)
	}
}

// Backfill refuses a range of more instants than the limit, naming how
// many, and schedules nothing for a range without any.
func TestABackfillOfTooManyOrNoInstantsIsNotScheduled(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.clock.Set(t0.Add(30 * 24 * time.Hour))
	j := e.addJob(t, "minutely", minuteJob(t0.Add(time.Minute), 0))
	d := e.planner(t, nil)
	var tooLarge *api.BackfillTooLargeError
	_, err := d.followUps.Backfill(ctx, j, t0, t0.Add(10*24*time.Hour))
	if !errors.As(err, &tooLarge) || tooLarge.Count != 14400 || tooLarge.More {
		t.Fatalf("ten days of minutes: %v, want 14400 above the limit", err)
	}
	plan, err := d.followUps.Backfill(ctx, j, t0.Add(10*time.Second), t0.Add(50*time.Second))
	if err != nil || plan.Count != 0 {
		t.Fatalf("a range without an instant: %+v (%v)", plan, err)
	}
	if all, err := d.followUps.store.List(ctx); err != nil || len(all) != 0 {
		t.Fatalf("kept %s (%v)", fmt.Sprint(all), err)
	}
}

// A backfill run claimed again (its planner stopped after moving the
// backfill on, before committing the run) is published again under the
// same id, and the backfill is not moved on twice; its last run ends it.
func TestABackfillRunClaimedAgainIsNotMovedOnTwice(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.clock.Set(t0.Add(time.Hour))
	j := e.addJob(t, "daily", minuteJob(t0.Add(time.Minute), 0))
	d := e.planner(t, nil)
	d.Stop() // nothing is dispatched: the test moves the backfill on itself
	if _, err := d.followUps.Backfill(ctx, j, t0.Add(2*time.Minute), t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	job, err := d.jobs.get(ctx, j.Ref.KVKey())
	if err != nil || job == nil {
		t.Fatalf("the job %v (%v)", job, err)
	}
	first := timer.Claim{Entry: timer.Entry{JobKey: j.Ref.KVKey(), Slot: backfillSlot, Due: t0.Add(2 * time.Minute), Expected: t0.Add(2 * time.Minute),
		Remaining: 1, Revision: j.Revision, Action: "MainAction"}}
	now := e.clock.Now()
	a, err := d.followUps.advanceBackfill(ctx, first, job, now)
	if err != nil || a == nil || !a.Expected.Equal(t0.Add(3*time.Minute)) || !a.Due.Equal(now.Add(time.Second)) || a.Remaining != 0 {
		t.Fatalf("moved on to %+v (%v), want 3m due a pace from now, none after it", a, err)
	}
	b, err := d.followUps.advanceBackfill(ctx, first, job, now.Add(10*time.Second))
	if err != nil || b == nil || *b != *a {
		t.Fatalf("claimed again, moved on to %+v (%v), want %+v again", b, err, a)
	}
	last := timer.Claim{Entry: *a}
	if next, err := d.followUps.advanceBackfill(ctx, last, job, now.Add(time.Second)); err != nil || next != nil {
		t.Fatalf("after the last run: %+v (%v), want none", next, err)
	}
	if _, _, kept, err := d.followUps.store.Get(ctx, j.Ref.KVKey(), backfillSlot); kept || err != nil {
		t.Fatalf("the backfill is still kept after its last run (%v)", err)
	}
}
