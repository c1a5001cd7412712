package contracts

import (
	"fmt"
	"time"
)

// TallyHeader is the NATS header of each history entry that carries the
// job's Tally after the entry, as JSON. The planner restores its counters
// from the newest entry of each job after Redis lost them.
const TallyHeader = "Scheduler-Tally"

// Tally is the running count of a job's executions: what the job's status
// shows, and the occurrence its schedule has reached.
type Tally struct {
	// Occurrence is the number of the latest occurrence of the job's
	// schedule known to have run, and OccurrenceTime when it was due. A
	// schedule started again (a new start time or recurrence, or the job
	// enabled again) numbers its occurrences from 1.
	Occurrence     int64     `json:"occurrence,omitempty"`
	OccurrenceTime time.Time `json:"occurrenceTime,omitzero"`
	// Executions counts the attempts of the main action, Failures those
	// that failed, and Faulted the occurrences whose every attempt failed.
	Executions int64 `json:"executionCount,omitempty"`
	Failures   int64 `json:"failureCount,omitempty"`
	Faulted    int64 `json:"faultedCount,omitempty"`
	// ConsecutiveFaults counts the Faulted occurrences since the last
	// occurrence whose main action succeeded (or since the job was
	// enabled again): what PauseAfterFaults compares with.
	ConsecutiveFaults int64 `json:"consecutiveFaults,omitempty"`
	// LastExecution is when the latest attempt of the main action started.
	LastExecution time.Time `json:"lastExecutionTime,omitzero"`
	// LastStatus is how the attempt of the main action that started last
	// ended: LastSucceeded, LastFailed or LastFaulted (see
	// Result.LastStatus); empty before the first one. LastStatusTime is
	// when that attempt ended (the result's EndTime); it started at
	// LastExecution. A result that arrives after that of an attempt
	// started later changes neither.
	LastStatus     string    `json:"lastStatus,omitempty"`
	LastStatusTime time.Time `json:"lastStatusTime,omitzero"`
	// Recent holds the tags (AttemptTag) of the job's latest counted
	// attempts, oldest first, at most RecentAttempts of them: a result
	// delivered again after the tally was restored from history is
	// recognised by its tag and not counted twice.
	Recent string `json:"recent,omitempty"`
}

// A tally remembers the tags of its job's latest RecentAttempts attempts,
// TagLen characters each.
const (
	TagLen         = 8
	RecentAttempts = 8
)

// AttemptTag returns the tag of an attempt's occurrence id in a tally's
// Recent list: its first TagLen characters (of 32 hex digits), unique among
// one job's recent attempts. A shorter id is padded with spaces.
func AttemptTag(id string) string {
	if len(id) < TagLen {
		return fmt.Sprintf("%*s", TagLen, id)
	}
	return id[:TagLen]
}

// Remember returns recent (a Recent list) with the tag of id added, the
// oldest tags dropped beyond RecentAttempts.
func Remember(recent, id string) string {
	recent += AttemptTag(id)
	if n := TagLen * RecentAttempts; len(recent) > n {
		recent = recent[len(recent)-n:]
	}
	return recent
}

// Counts returns what the result adds to a tally: one execution for an
// attempt of the main action, one failure for a failed one, one faulted
// occurrence when it faults its occurrence. The error action's attempts
// are in history but not counted.
func (r Result) Counts() (executions, failures, faulted int64) {
	if r.ActionName != MainAction {
		return 0, 0, 0
	}
	executions = 1
	if r.Outcome != Succeeded {
		failures = 1
	}
	if Decide(r, nil).Faulted {
		faulted = 1
	}
	return executions, failures, faulted
}

// The values of Tally.LastStatus and JobStatus.LastStatus: how the latest
// attempt of a job's main action ended. LastFaulted is a failure that
// faulted its occurrence: no retry was left.
const (
	LastSucceeded = string(Succeeded)
	LastFailed    = string(Failed)
	LastFaulted   = string(JobStateFaulted)
)

// LastStatuses are the values of Tally.LastStatus, in documentation order.
var LastStatuses = []string{LastSucceeded, LastFailed, LastFaulted}

// LastStatus returns the value the result gives a tally's LastStatus, ""
// for an attempt of the error action, which leaves it.
func (r Result) LastStatus() string {
	switch {
	case r.ActionName != MainAction:
		return ""
	case r.Outcome == Succeeded:
		return LastSucceeded
	case Decide(r, nil).Faulted:
		return LastFaulted
	default:
		return LastFailed
	}
}

// Add returns the tally after the result.
func (t Tally) Add(r Result) Tally {
	executions, failures, faulted := r.Counts()
	t.Executions += executions
	t.Failures += failures
	t.Faulted += faulted
	switch {
	case faulted > 0:
		t.ConsecutiveFaults++
	case executions > 0 && r.Outcome == Succeeded:
		t.ConsecutiveFaults = 0
	}
	// Results may arrive out of order (attempts of different occurrences
	// overlap, a result is delivered again late): the attempt that started
	// last gives the status, whichever result came last.
	if status := r.LastStatus(); status != "" && !r.StartTime.Before(t.LastExecution) {
		t.LastStatus, t.LastStatusTime = status, r.EndTime.UTC()
	}
	if executions > 0 && r.StartTime.After(t.LastExecution) {
		t.LastExecution = r.StartTime.UTC()
	}
	if r.Occurrence > 0 && r.ExpectedTime.After(t.OccurrenceTime) {
		t.Occurrence, t.OccurrenceTime = r.Occurrence, r.ExpectedTime.UTC()
	}
	t.Recent = Remember(t.Recent, r.OccurrenceID)
	return t
}

// Status returns the counters of the tally as the API shows them.
func (t Tally) Status() JobStatus {
	s := JobStatus{ExecutionCount: int(t.Executions), FailureCount: int(t.Failures), FaultedCount: int(t.Faulted),
		ConsecutiveFaults: int(t.ConsecutiveFaults)}
	if !t.LastExecution.IsZero() {
		last := t.LastExecution
		s.LastExecutionTime = &last
	}
	if t.LastStatus != "" {
		status := t.LastStatus
		s.LastStatus = &status
	}
	return s
}
