package dispatch

import (
	"context"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/api"
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
	v, err := in.read(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	next := make([]time.Time, len(refs))
	for i := range refs {
		if v.found[i] {
			next[i] = v.scheduled[i].Expected
		}
		for _, e := range v.followUps[i] {
			if next[i].IsZero() || e.Due.Before(next[i]) {
				next[i] = e.Due
			}
		}
	}
	return next, v.tallies, nil
}

// Pending returns, for each job, the runs the timer holds for it — its
// scheduled occurrence (at its scheduled time, with the number of
// occurrences after it) and each pending retry, error action and run —
// and its tally, in four round trips to Redis at most.
func (in *Inspector) Pending(ctx context.Context, refs []contracts.JobRef) ([][]api.TimerEntry, []contracts.Tally, error) {
	v, err := in.read(ctx, refs)
	if err != nil {
		return nil, nil, err
	}
	out := make([][]api.TimerEntry, len(refs))
	for i := range refs {
		if v.found[i] {
			e := v.scheduled[i]
			out[i] = append(out[i], api.TimerEntry{Kind: api.RunScheduled, Due: e.Expected, Remaining: e.Remaining})
		}
		for _, e := range v.followUps[i] {
			out[i] = append(out[i], api.TimerEntry{Kind: followUpKind(e), Due: e.Due})
		}
	}
	return out, v.tallies, nil
}

// followUpKind tells what a follow-up entry runs: the error action, the
// next run of a backfill, a run asked for outside the schedule (occurrence
// 0, first attempt), an occurrence of the schedule waiting behind one in
// flight (BufferSlot), or a retry.
func followUpKind(e timer.Entry) api.RunKind {
	switch {
	case e.Slot == BufferSlot:
		return api.RunScheduled
	case e.Action == contracts.ErrorAction:
		return api.RunErrorAction
	case e.Slot == backfillSlot:
		return api.RunBackfill
	case e.Occurrence == 0 && e.Attempt == 0:
		return api.RunNow
	}
	return api.RunRetry
}

// timerView is what the timer holds of some jobs.
type timerView struct {
	scheduled []timer.Entry
	found     []bool
	followUps [][]timer.Entry
	tallies   []contracts.Tally
}

// read reads the jobs' scheduled entries, follow-ups and tallies.
func (in *Inspector) read(ctx context.Context, refs []contracts.JobRef) (timerView, error) {
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.KVKey()
	}
	var v timerView
	var err error
	if v.scheduled, v.found, err = in.ix.GetAll(ctx, keys, scheduleSlot); err != nil {
		return v, err
	}
	if v.followUps, err = in.ix.FollowUps(ctx, keys); err != nil {
		return v, err
	}
	v.tallies, _, err = in.ix.Statuses(ctx, keys)
	return v, err
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

// ExecutionCounts returns the attempts of the collections' jobs that ended
// in each minute from the one holding from up to the one before to, by
// outcome, for the minutes that have any, earliest first, in one round
// trip to Redis.
func (in *Inspector) ExecutionCounts(ctx context.Context, cols []contracts.CollectionRef, from, to time.Time) ([]api.MinuteExecutions, error) {
	counts, err := in.ix.ExecutionCounts(ctx, cols, from, to)
	if err != nil {
		return nil, err
	}
	out := make([]api.MinuteExecutions, len(counts))
	for i, c := range counts {
		out[i] = api.MinuteExecutions{Minute: c.Minute, Succeeded: c.Succeeded, Failed: c.Failed}
	}
	return out, nil
}
