package contracts

import "time"

// FollowUp is the kind of attempt that follows a result.
type FollowUp int

const (
	// NoFollowUp: the occurrence ends with the attempt.
	NoFollowUp FollowUp = iota
	// RetrySameAction: the same action is tried again after its retry
	// interval.
	RetrySameAction
	// RunErrorAction: the main action failed its last attempt; the error
	// action runs at once.
	RunErrorAction
)

// Decision is what follows one attempt: whether another attempt does, and
// what the attempt settles of its occurrence and of its job.
type Decision struct {
	// Next is the attempt that follows, if any.
	Next FollowUp
	// Delay is how long after the result a retry is due (its retry
	// interval); 0 for the error action, which runs at once.
	Delay time.Duration
	// Faulted reports that the occurrence faulted: its main action failed
	// and no retry follows (the error action may still run).
	Faulted bool
	// EndState is the state the job ends in when nothing follows the
	// attempt and its occurrence was the job's last: Completed when the
	// main action succeeded, Faulted otherwise. Empty when the job goes
	// on.
	EndState JobState
}

// LastAttempt reports whether attempt (0-based) of an action with the
// retry policy is its last: no retry follows it if it fails. The planner
// writes it into each execution, so that the result says it whatever the
// job became since.
func LastAttempt(attempt int, policy *RetryPolicy) bool {
	retries, _ := EffectiveRetry(policy)
	return attempt >= retries
}

// Decide returns what follows result r of a job whose main action is main
// (its error action, and both retry policies, as the job has them now):
// the one place that decides retries, the error action, faulted
// occurrences and the end of a job.
//
//   - A success ends its occurrence.
//   - A failure that is not the last attempt is retried after the action's
//     retry interval.
//   - The main action's last failure faults the occurrence and runs the
//     error action when the job has one.
//   - The error action's last failure, or its success, ends the occurrence.
//
// When the occurrence ends and it was the job's last (r.LastOccurrence),
// the job ends: Completed when its main action succeeded, else Faulted.
func Decide(r Result, main *JobAction) Decision {
	var d Decision
	failed := r.Outcome != Succeeded
	d.Faulted = failed && r.ActionName == MainAction && r.LastAttempt
	switch {
	case !failed || main == nil:
	case !r.LastAttempt:
		d.Next = RetrySameAction
		_, d.Delay = EffectiveRetry(main.RetryPolicyOf(r.ActionName))
	case r.ActionName == MainAction && main.ErrorAction != nil:
		d.Next = RunErrorAction
	}
	if d.Next == NoFollowUp && r.LastOccurrence {
		d.EndState = JobStateFaulted
		if r.ActionName == MainAction && !failed {
			d.EndState = JobStateCompleted
		}
	}
	return d
}
