package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// backfillSlot is the slot of a job's pending backfill: its next run. One
// slot per job, so that a second backfill is refused while one is pending
// (written with a create in the follow-ups bucket, it is refused however
// many planners are asked at once).
const backfillSlot = "b"

// backfillCountCap bounds the instants counted to tell how many a range
// holds beyond api.MaxBackfill.
const backfillCountCap = 100 * api.MaxBackfill

// Backfill schedules a run of the job's main action for each instant of
// its schedule in [start, end], in order, one per Config.CatchUpPace, each
// with its instant as its expected time. They are runs outside the
// schedule, like RunNow's: occurrence 0, their retries and error action in
// a slot of their own, the job's next run and counts unchanged. The
// pending backfill (its next run and the end of its range) is written to
// the follow-ups bucket before it is put in the timer, and moved on to its
// next run before each run is published, so that it survives the loss of
// Redis and a planner's restart without running an instant twice. It
// returns api.ErrBackfillPending when the job has one pending, and an
// *api.BackfillTooLargeError when the range holds more than
// api.MaxBackfill instants; a range without any is not scheduled (Count
// 0).
func (f *FollowUps) Backfill(ctx context.Context, j store.Job, start, end time.Time) (api.BackfillPlan, error) {
	c, err := f.jobs.compile(j)
	if err != nil {
		return api.BackfillPlan{}, err
	}
	if !c.sched.Recurring() {
		return api.BackfillPlan{}, api.ErrBackfillNotRecurring
	}
	plan := api.BackfillPlan{Pace: f.cfg.CatchUpPace}
	for at, ok := firstAtOrAfter(c.sched, start); ok && !at.After(end); at, ok = c.sched.Next(at) {
		if plan.Count == 0 {
			plan.First = at
		}
		plan.Last = at
		if plan.Count++; plan.Count > backfillCountCap {
			return api.BackfillPlan{}, &api.BackfillTooLargeError{Count: backfillCountCap, More: true}
		}
	}
	if plan.Count > api.MaxBackfill {
		return api.BackfillPlan{}, &api.BackfillTooLargeError{Count: plan.Count}
	}
	if plan.Count == 0 {
		return plan, nil
	}
	e := timer.Entry{
		JobKey: j.Ref.KVKey(), Slot: backfillSlot, Due: plan.First, Expected: plan.First,
		Action: contracts.MainAction, Remaining: int64(plan.Count - 1), Revision: j.Revision,
	}
	rec := record(j.Ref, e)
	rec.End = end.UTC()
	err = f.store.Put(ctx, rec, 0)
	if errors.Is(err, store.ErrConflict) {
		return api.BackfillPlan{}, api.ErrBackfillPending
	}
	if err != nil {
		return api.BackfillPlan{}, err
	}
	if err := f.ix.Schedule(ctx, e); err != nil {
		// Not scheduled: nor kept, so that it does not run after the
		// caller was told it failed.
		if derr := f.store.Delete(context.WithoutCancel(ctx), e.JobKey, e.Slot, 0); derr != nil {
			f.cfg.Logger.Warn("taking back a backfill that could not be scheduled", slog.String("job", e.JobKey), slog.String("error", derr.Error()))
		}
		return api.BackfillPlan{}, err
	}
	f.wake()
	return plan, nil
}

// firstAtOrAfter returns the schedule's first instant at or after t.
func firstAtOrAfter(sched *planner.Schedule, t time.Time) (time.Time, bool) {
	return sched.Next(t.Add(-time.Nanosecond))
}

// advanceBackfill moves the job's pending backfill past its run c, claimed
// at now, before c is published, and returns the timer entry of its next
// run: the schedule's next instant up to the end of the range, due no
// sooner than CatchUpPace after c; nil when c is its last. A backfill moved
// on already (c is published again after its planner stopped before
// committing it) gives the run it holds; one that is gone (the job was
// deleted) gives none.
func (f *FollowUps) advanceBackfill(ctx context.Context, c timer.Claim, job *cached, now time.Time) (*timer.Entry, error) {
	var err error
	for range settleAttempts {
		held, rev, ok, gerr := f.store.Get(ctx, c.JobKey, backfillSlot)
		switch {
		case gerr != nil:
			return nil, gerr
		case !ok:
			return nil, nil
		case held.Expected.After(c.Expected):
			e := entry(held)
			return &e, nil
		}
		var at time.Time
		if job != nil && held.Remaining != 0 {
			at, ok = job.sched.Next(c.Expected)
		}
		if job == nil || held.Remaining == 0 || !ok || at.After(held.End) {
			err = f.store.Delete(ctx, c.JobKey, backfillSlot, rev)
			if err == nil {
				return nil, nil
			}
		} else {
			next := held
			next.Expected = at
			next.Due = maxTime(at, maxTime(now, c.Due).Add(f.cfg.CatchUpPace)).UTC().Truncate(time.Millisecond)
			if next.Remaining > 0 {
				next.Remaining--
			}
			if err = f.store.Put(ctx, next, rev); err == nil {
				e := entry(next)
				return &e, nil
			}
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("moving on the backfill of %s: %w", c.JobKey, err)
}
