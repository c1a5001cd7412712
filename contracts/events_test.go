package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestResultEventRoundTrip(t *testing.T) {
	t.Parallel()
	r := validResult()
	ev := r.Event()
	if ev.SpecVersion != "1.0" || ev.ID != r.OccurrenceID || ev.Type != EventSucceeded ||
		ev.Source != "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/coll/jobs/job" ||
		ev.Subject != "20260102T051500Z/MainAction/0" || !ev.Time.Equal(r.EndTime) || ev.DataContentType != "application/json" {
		t.Errorf("event %+v", ev)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"specversion":"1.0"`, `"datacontenttype":"application/json"`, `"data":{"v":1,`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("%s lacks %s", data, key)
		}
	}
	back, err := ParseResultEvent(data)
	if err != nil || back.OccurrenceID != r.OccurrenceID || back.Outcome != r.Outcome {
		t.Fatalf("parsed %+v, %v", back, err)
	}
	r.Outcome = Failed
	if r.Event().Type != EventFailed {
		t.Error("a failed attempt's event is not of the failed type")
	}
	for _, bad := range []string{`{`, `{"specversion":"0.3","data":{}}`, `{"specversion":"1.0","data":{"v":1}}`} {
		if _, err := ParseResultEvent([]byte(bad)); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%s: %v, want ErrInvalidMessage", bad, err)
		}
	}
}

func TestResultCounts(t *testing.T) {
	t.Parallel()
	failed := func(action ActionName, last bool) Result {
		return Result{ActionName: action, Outcome: Failed, LastAttempt: last}
	}
	tests := []struct {
		name                          string
		r                             Result
		executions, failures, faulted int64
	}{
		{"a success counts one execution", Result{ActionName: MainAction, Outcome: Succeeded}, 1, 0, 0},
		{"a failure with retries left counts a failure", failed(MainAction, false), 1, 1, 0},
		{"the main action's last failure faults the occurrence", failed(MainAction, true), 1, 1, 1},
		{"the error action's attempts are not counted", failed(ErrorAction, true), 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, f, x := tt.r.Counts()
			if e != tt.executions || f != tt.failures || x != tt.faulted {
				t.Errorf("Counts() = %d, %d, %d", e, f, x)
			}
		})
	}
}

func TestTallyAdd(t *testing.T) {
	t.Parallel()
	at := func(m int) time.Time { return time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC) }
	var tally Tally
	for _, r := range []Result{
		{OccurrenceID: "a1a1a1a1ffff", ActionName: MainAction, Occurrence: 1, ExpectedTime: at(1), StartTime: at(1), Outcome: Failed},
		{OccurrenceID: "b2b2b2b2ffff", ActionName: MainAction, Occurrence: 1, ExpectedTime: at(1), StartTime: at(2), Outcome: Failed, LastAttempt: true},
		{OccurrenceID: "c3c3c3c3ffff", ActionName: ErrorAction, Occurrence: 1, ExpectedTime: at(1), StartTime: at(3), Outcome: Succeeded},
		{OccurrenceID: "d4d4d4d4ffff", ActionName: MainAction, Occurrence: 0, ExpectedTime: at(9), StartTime: at(9), Outcome: Succeeded}, // a run outside the schedule
		{OccurrenceID: "e5e5e5e5ffff", ActionName: MainAction, Occurrence: 2, ExpectedTime: at(5), StartTime: at(5), Outcome: Succeeded},
	} {
		tally = tally.Add(r)
	}
	want := Tally{Occurrence: 2, OccurrenceTime: at(5), Executions: 4, Failures: 2, Faulted: 1, LastExecution: at(9), LastStatus: LastSucceeded,
		Recent: "a1a1a1a1b2b2b2b2c3c3c3c3d4d4d4d4e5e5e5e5"}
	if tally != want {
		t.Fatalf("tally %+v, want %+v", tally, want)
	}
	// A schedule started again numbers from 1, later in time.
	tally = tally.Add(Result{ActionName: MainAction, Occurrence: 1, ExpectedTime: at(30), StartTime: at(30), Outcome: Succeeded})
	if tally.Occurrence != 1 || !tally.OccurrenceTime.Equal(at(30)) {
		t.Errorf("after a restarted schedule: %+v", tally)
	}
	for i := range RecentAttempts {
		tally = tally.Add(Result{OccurrenceID: fmt.Sprintf("%08d", i), ActionName: ErrorAction, Outcome: Succeeded})
	}
	if tally.Recent != "0000000000000001000000020000000300000004000000050000000600000007" {
		t.Errorf("the recent attempts %q, want the latest %d", tally.Recent, RecentAttempts)
	}
	st := tally.Status()
	if st.ExecutionCount != 5 || st.FailureCount != 2 || st.FaultedCount != 1 || !st.LastExecutionTime.Equal(at(30)) {
		t.Errorf("status %+v", st)
	}
	if (Tally{}).Status().LastExecutionTime != nil {
		t.Error("a job that never ran shows a last execution")
	}
}

func TestTraceParent(t *testing.T) {
	t.Parallel()
	id := "0af7651916cd43dd8448eb211c80319c"
	root := TraceParent(id)
	if !strings.HasPrefix(root, "00-"+id+"-") || !strings.HasSuffix(root, "-01") || len(root) != 55 || TraceParent(id) != root {
		t.Fatalf("TraceParent = %q, want a stable context in the occurrence's trace", root)
	}
	if got := ChildTraceParent(root, id, "b7ad6b7169203331"); got != "00-"+id+"-b7ad6b7169203331-01" {
		t.Errorf("child %q", got)
	}
	parent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	if got := ChildTraceParent(parent, id, "b7ad6b7169203331"); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-00" {
		t.Errorf("child of an unsampled parent %q", got)
	}
	for _, bad := range []string{"", "garbage", "01-" + id + "-00f067aa0ba902b7-01"} {
		if got := ChildTraceParent(bad, id, "b7ad6b7169203331"); got != "00-"+id+"-b7ad6b7169203331-01" {
			t.Errorf("child of %q: %q", bad, got)
		}
	}
	if got := ChildTraceParent("", "not-hex", "b7ad6b7169203331"); !strings.HasPrefix(got, "00-") || len(got) != 55 {
		t.Errorf("an id that is not a trace id: %q", got)
	}
}

func TestRetryPolicyOf(t *testing.T) {
	t.Parallel()
	mainPolicy, errorPolicy := &RetryPolicy{RetryType: RetryNone}, &RetryPolicy{RetryType: RetryFixed}
	a := &JobAction{RetryPolicy: mainPolicy, ErrorAction: &JobAction{}}
	if a.RetryPolicyOf(ErrorAction) != mainPolicy || a.RetryPolicyOf(MainAction) != mainPolicy {
		t.Error("an error action without a policy does not use the main action's")
	}
	a.ErrorAction.RetryPolicy = errorPolicy
	if a.RetryPolicyOf(ErrorAction) != errorPolicy || a.ActionOf(ErrorAction) != a.ErrorAction || a.ActionOf(MainAction) != a {
		t.Error("the error action's own policy or the actions are not picked")
	}
	var none *JobAction
	if none.RetryPolicyOf(MainAction) != nil || none.ActionOf(ErrorAction) != nil {
		t.Error("a nil action has a policy or an error action")
	}
}
