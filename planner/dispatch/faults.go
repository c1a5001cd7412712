package dispatch

import (
	"context"

	"github.com/jobscheduler/scheduler/contracts"
)

// ResetFaults starts the job's count of consecutive Faulted occurrences
// from zero: the job is being enabled again.
func (in *Inspector) ResetFaults(ctx context.Context, ref contracts.JobRef) error {
	return in.ix.ResetFaults(ctx, ref.KVKey())
}
