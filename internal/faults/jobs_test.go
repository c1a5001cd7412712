package faults

import (
	"slices"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
)

var t0 = time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)

// The instants the suite expects of each job of a mix are those the
// planner previews for its definition: the suite's arithmetic and the
// recurrence engine agree, and every definition is valid.
func TestTheExpectedInstantsAreThePlannersOwn(t *testing.T) {
	t.Parallel()
	mix := Mix{Window: 3 * time.Minute, TickEvery: 2 * time.Second, Of: 2, Count: 3, RetryInterval: 15 * time.Second}
	until := t0.Add(5 * time.Minute)
	for _, j := range mix.Jobs(t0) {
		want := j.Instants(until)
		got, err := planner.Preview([]byte(j.Definition("http://127.0.0.1:1")), t0.Add(-10*time.Second), len(want)+1)
		if err != nil {
			t.Fatalf("%s: %v", j.Name, err)
		}
		if j.Forever {
			got = slices.DeleteFunc(got, func(at time.Time) bool { return at.After(until) })
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s: the planner previews %v, the suite expects %v", j.Name, got, want)
		}
	}
}

func TestTheAttemptsOfAnOccurrence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		job         JobSpec
		main        int
		errorAction bool
		faults      bool
		state       contracts.JobState
	}{
		{"a target that succeeds takes one attempt", JobSpec{Target: Succeeds, Retries: 2, RetryInterval: time.Minute, ErrorAction: true}, 1, false, false, contracts.JobStateCompleted},
		{"a flaky target takes its failures and one more", JobSpec{Target: Flaky, FailFirst: 2, Retries: 3, RetryInterval: time.Minute, ErrorAction: true}, 3, false, false, contracts.JobStateCompleted},
		{"a flaky target failing more than the retries faults", JobSpec{Target: Flaky, FailFirst: 3, Retries: 1, RetryInterval: time.Minute, ErrorAction: true}, 2, true, true, contracts.JobStateFaulted},
		{"a failing target uses every retry, then the error action", JobSpec{Target: Fails, Retries: 2, RetryInterval: time.Minute, ErrorAction: true}, 3, true, true, contracts.JobStateFaulted},
		{"a job without end is disabled", JobSpec{Target: Succeeds, Every: 1, Forever: true}, 1, false, false, contracts.JobStateDisabled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			main, errorAction := tc.job.Attempts()
			if main != tc.main || errorAction != tc.errorAction || tc.job.Faults() != tc.faults || tc.job.FinalState() != tc.state {
				t.Errorf("attempts %d, error action %t, faults %t, state %s", main, errorAction, tc.job.Faults(), tc.job.FinalState())
			}
		})
	}
}

// Each expected attempt is keyed by the id the target receives as its
// Idempotency-Key.
func TestExpectedAttemptsAreKeyedByTheirIdempotencyKey(t *testing.T) {
	t.Parallel()
	j := JobSpec{Name: "doomed", Target: Fails, Start: t0, Every: 1, Count: 2, Retries: 1, RetryInterval: 15 * time.Second, ErrorAction: true}
	got := j.ExpectedAttempts(t0.Add(time.Hour))
	if len(got) != 6 { // 2 occurrences × (2 attempts + the error action)
		t.Fatalf("%d attempts, want 6", len(got))
	}
	key := contracts.OccurrenceID(j.Ref(), t0.Add(time.Minute), contracts.ErrorAction, 0)
	if e, ok := got[key]; !ok || e.Action != contracts.ErrorAction || !e.Succeeds {
		t.Errorf("the second occurrence's error action is %+v, %t", e, ok)
	}
}
