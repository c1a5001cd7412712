package contracts

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func TestResultLastStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"a success of the main action", Result{ActionName: MainAction, Outcome: Succeeded}, LastSucceeded},
		{"a success on the last attempt", Result{ActionName: MainAction, Outcome: Succeeded, LastAttempt: true}, LastSucceeded},
		{"a failure with retries left", Result{ActionName: MainAction, Outcome: Failed}, LastFailed},
		{"a failure of the last attempt faults the occurrence", Result{ActionName: MainAction, Outcome: Failed, LastAttempt: true}, LastFaulted},
		{"the error action's failure leaves it", Result{ActionName: ErrorAction, Outcome: Failed, LastAttempt: true}, ""},
		{"the error action's success leaves it", Result{ActionName: ErrorAction, Outcome: Succeeded}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.r.LastStatus(); got != tt.want {
				t.Errorf("LastStatus() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTallyKeepsTheLastStatus(t *testing.T) {
	t.Parallel()
	at := func(m int) time.Time { return time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC) }
	attempt := func(action ActionName, outcome Outcome, last bool, start int) Result {
		return Result{ActionName: action, Outcome: outcome, LastAttempt: last, StartTime: at(start), EndTime: at(start).Add(time.Second)}
	}
	steps := []struct {
		name     string
		r        Result
		want     string
		wantTime time.Time
	}{
		{"a success", attempt(MainAction, Succeeded, false, 1), LastSucceeded, at(1).Add(time.Second)},
		{"then a failure", attempt(MainAction, Failed, false, 2), LastFailed, at(2).Add(time.Second)},
		{"then the last retry failing", attempt(MainAction, Failed, true, 3), LastFaulted, at(3).Add(time.Second)},
		{"then the error action, which leaves it", attempt(ErrorAction, Succeeded, false, 4), LastFaulted, at(3).Add(time.Second)},
		{"then a success", attempt(MainAction, Succeeded, false, 10), LastSucceeded, at(10).Add(time.Second)},
		{"then a late failure of an attempt that started earlier, which leaves it", attempt(MainAction, Failed, false, 5), LastSucceeded, at(10).Add(time.Second)},
	}
	var tally Tally
	for _, s := range steps {
		tally = tally.Add(s.r)
		if tally.LastStatus != s.want || !tally.LastStatusTime.Equal(s.wantTime) {
			t.Fatalf("after %s: last status %q at %v, want %q at %v", s.name, tally.LastStatus, tally.LastStatusTime, s.want, s.wantTime)
		}
	}
	if st := tally.Status(); st.LastStatus == nil || *st.LastStatus != LastSucceeded {
		t.Errorf("status shows %v, want %q", st.LastStatus, LastSucceeded)
	}
	if (Tally{}).Status().LastStatus != nil {
		t.Error("a job that never ran shows a last status")
	}

	// The tally travels as JSON in history's headers: the status with it.
	data, err := json.Marshal(tally)
	if err != nil {
		t.Fatal(err)
	}
	var back Tally
	if err := json.Unmarshal(data, &back); err != nil || back != tally {
		t.Fatalf("read back %+v (%v) from %s, want %+v", back, err, data, tally)
	}
	var fields map[string]any
	_ = json.Unmarshal(data, &fields)
	if fields["lastStatus"] != LastSucceeded || fields["lastStatusTime"] != "2026-01-01T00:10:01Z" {
		t.Errorf("JSON %s", data)
	}
}

func TestTallyCountsConsecutiveFaults(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	result := func(n int, outcome Outcome, last bool, action ActionName) Result {
		start := at.Add(time.Duration(n) * time.Minute)
		return Result{OccurrenceID: fmt.Sprintf("%032d", n), ActionName: action, Occurrence: int64(n), ExpectedTime: start,
			Outcome: outcome, LastAttempt: last, StartTime: start, EndTime: start.Add(time.Second)}
	}
	steps := []struct {
		r    Result
		want int64
	}{
		{result(1, Failed, true, MainAction), 1},
		{result(2, Failed, false, MainAction), 1}, // a retry follows: not Faulted yet
		{result(3, Failed, true, MainAction), 2},
		{result(4, Succeeded, true, ErrorAction), 2}, // the error action counts for nothing
		{result(5, Succeeded, false, MainAction), 0},
		{result(6, Failed, true, MainAction), 1},
	}
	var tally Tally
	for i, s := range steps {
		tally = tally.Add(s.r)
		if tally.ConsecutiveFaults != s.want {
			t.Fatalf("step %d: %d consecutive faults, want %d", i+1, tally.ConsecutiveFaults, s.want)
		}
	}
	if got := tally.Status().ConsecutiveFaults; got != 1 {
		t.Errorf("status shows %d", got)
	}
}
