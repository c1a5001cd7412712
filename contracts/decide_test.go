package contracts

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	three := 3
	withErrorAction := &JobAction{
		RetryPolicy: &RetryPolicy{RetryType: RetryFixed, RetryInterval: "PT20S", RetryCount: &three},
		ErrorAction: &JobAction{RetryPolicy: &RetryPolicy{RetryType: RetryFixed, RetryInterval: "PT1M"}},
	}
	mainOnly := &JobAction{}
	result := func(action ActionName, outcome Outcome, lastAttempt, lastOccurrence bool) Result {
		return Result{ActionName: action, Outcome: outcome, LastAttempt: lastAttempt, LastOccurrence: lastOccurrence}
	}
	tests := []struct {
		name string
		r    Result
		main *JobAction
		want Decision
	}{
		{"a success ends the occurrence", result(MainAction, Succeeded, false, false), withErrorAction,
			Decision{}},
		{"a success of the last occurrence completes the job", result(MainAction, Succeeded, false, true), withErrorAction,
			Decision{EndState: JobStateCompleted}},
		{"a success on the last attempt of the last occurrence completes the job", result(MainAction, Succeeded, true, true), mainOnly,
			Decision{EndState: JobStateCompleted}},
		{"a failure with retries left is retried after the main action's interval", result(MainAction, Failed, false, true), withErrorAction,
			Decision{Next: RetrySameAction, Delay: 20 * time.Second}},
		{"without a policy a failure is retried after the default interval", result(MainAction, Failed, false, false), mainOnly,
			Decision{Next: RetrySameAction, Delay: DefaultRetryInterval}},
		{"the main action's last failure faults the occurrence and runs the error action", result(MainAction, Failed, true, false), withErrorAction,
			Decision{Next: RunErrorAction, Faulted: true}},
		{"the error action runs even for the last occurrence: the job ends after it", result(MainAction, Failed, true, true), withErrorAction,
			Decision{Next: RunErrorAction, Faulted: true}},
		{"without an error action the main action's last failure ends the occurrence", result(MainAction, Failed, true, false), mainOnly,
			Decision{Faulted: true}},
		{"without an error action the last occurrence's last failure faults the job", result(MainAction, Failed, true, true), mainOnly,
			Decision{Faulted: true, EndState: JobStateFaulted}},
		{"the error action is retried on its own policy", result(ErrorAction, Failed, false, true), withErrorAction,
			Decision{Next: RetrySameAction, Delay: time.Minute}},
		{"the error action's last failure ends the occurrence", result(ErrorAction, Failed, true, false), withErrorAction,
			Decision{}},
		{"the error action's success on the last occurrence leaves the job Faulted", result(ErrorAction, Succeeded, false, true), withErrorAction,
			Decision{EndState: JobStateFaulted}},
		{"the error action's last failure on the last occurrence faults the job", result(ErrorAction, Failed, true, true), withErrorAction,
			Decision{EndState: JobStateFaulted}},
		{"a job without an action (deleted meanwhile) follows up nothing", result(MainAction, Failed, false, true), nil,
			Decision{EndState: JobStateFaulted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Decide(tt.r, tt.main); got != tt.want {
				t.Errorf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLastAttempt(t *testing.T) {
	t.Parallel()
	two := 2
	tests := []struct {
		name    string
		attempt int
		policy  *RetryPolicy
		want    bool
	}{
		{"the default policy retries four times", 3, nil, false},
		{"the default policy's fifth attempt is its last", 4, nil, true},
		{"None makes the first attempt the last", 0, &RetryPolicy{RetryType: RetryNone}, true},
		{"Fixed with a count", 1, &RetryPolicy{RetryType: RetryFixed, RetryCount: &two}, false},
		{"Fixed with a count, its last", 2, &RetryPolicy{RetryType: RetryFixed, RetryCount: &two}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := LastAttempt(tt.attempt, tt.policy); got != tt.want {
				t.Errorf("LastAttempt(%d) = %v", tt.attempt, got)
			}
		})
	}
}
