package dispatch

import (
	"context"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Inspector answers the API's questions about the timer: when a job runs
// next and what it has counted. It only reads.
type Inspector struct {
	ix *timer.Index
}

// Runtimes returns, for each job, when it runs next — its scheduled
// occurrence or a pending retry, error action or run, whichever is due
// first; zero when none is — and its tally, in four round trips to Redis
// at most.
func (in *Inspector) Runtimes(ctx context.Context, refs []contracts.JobRef) ([]time.Time, []contracts.Tally, error) {
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.KVKey()
	}
	entries, found, err := in.ix.GetAll(ctx, keys, scheduleSlot)
	if err != nil {
		return nil, nil, err
	}
	followUps, err := in.ix.FollowUps(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	tallies, _, err := in.ix.Statuses(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	next := make([]time.Time, len(refs))
	for i := range refs {
		if found[i] {
			next[i] = entries[i].Expected
		}
		for _, e := range followUps[i] {
			if next[i].IsZero() || e.Due.Before(next[i]) {
				next[i] = e.Due
			}
		}
	}
	return next, tallies, nil
}

// Scheduled returns the job's scheduled occurrence: when it is due and how
// many occurrences of its schedule follow it (-1 for no limit). It reports
// false when the timer holds none (the job is new, disabled or ended).
func (in *Inspector) Scheduled(ctx context.Context, ref contracts.JobRef) (time.Time, int64, bool, error) {
	e, ok, err := in.ix.Get(ctx, ref.KVKey(), scheduleSlot)
	if err != nil || !ok {
		return time.Time{}, 0, false, err
	}
	return e.Expected, e.Remaining, true, nil
}
