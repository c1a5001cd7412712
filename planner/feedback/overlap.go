package feedback

import (
	"context"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/dispatch"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// occurrenceOver reports whether result r, with decision d, ends the
// in-flight time of its occurrence of the schedule: an attempt of the main
// action that no retry follows (it succeeded, or failed its last retry).
// The error action that may follow does not count as in flight.
func occurrenceOver(r contracts.Result, d contracts.Decision) bool {
	return r.ActionName == contracts.MainAction && r.Occurrence > 0 && d.Next != contracts.RetrySameAction
}

// over clears the running mark of each occurrence a result ended, for the
// jobs whose overlap policy is not Allow (only they have one), and makes
// the occurrence buffered behind it due now. It returns the error of each
// result's work, and whether an occurrence was made due.
func (c *Consumer) over(ctx context.Context, work []pending) ([]error, bool) {
	errs := make([]error, len(work))
	woke := false
	now := c.cfg.Now()
	for i, p := range work {
		policy := p.job.Properties.Overlap
		if policy == "" || policy == contracts.OverlapAllow || !occurrenceOver(p.result, p.decision) {
			continue
		}
		r := p.result
		due, err := c.ix.Over(ctx, r.Job.KVKey(), timer.Occurrence{Number: r.Occurrence, Expected: r.ExpectedTime}, now, dispatch.BufferSlot)
		errs[i] = err
		woke = woke || due
	}
	return errs, woke
}
