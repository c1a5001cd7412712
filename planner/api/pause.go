package api

import (
	"context"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/transient"
	"github.com/jobscheduler/scheduler/planner/store"
)

// FaultResetter is what a Scheduling may also be: the keeper of the jobs'
// counts of consecutive Faulted occurrences (pauseAfterFaults), which a
// job enabled again starts from zero.
type FaultResetter interface {
	ResetFaults(ctx context.Context, ref contracts.JobRef) error
}

// enabling reports whether a write takes a job from Disabled to Enabled.
func enabling(existing *store.Job, state contracts.JobState) bool {
	return existing != nil && existing.Properties.State == contracts.JobStateDisabled && state == contracts.JobStateEnabled
}

// keepReason carries a disabled job's state reason over to the job that
// replaces it while it stays disabled; any other write clears it.
func keepReason(existing *store.Job, job *store.Job) {
	if existing != nil && existing.Properties.State == contracts.JobStateDisabled && job.Properties.State == contracts.JobStateDisabled {
		job.StateReason = existing.StateReason
	}
}

// resetFaults starts the job's count of consecutive Faulted occurrences
// from zero before it is enabled again, so that the fault that paused it
// does not count against it; transient faults are retried, then 503.
func (s *Server) resetFaults(ctx context.Context, ref contracts.JobRef) *apiError {
	r, ok := s.sched.(FaultResetter)
	if !ok {
		return nil
	}
	_, _, err := retry(ctx, pointAttempt, transient.Is, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, r.ResetFaults(ctx, ref)
	})
	if err != nil {
		return unavailable("resetting the job's consecutive faults failed; retry").because(err)
	}
	return nil
}
