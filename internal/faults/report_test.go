package faults

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// outcome is a run of jobs that went as expected: every attempt called
// the sink once, a little late, and the API shows what the sink saw.
func outcome(jobs ...JobSpec) Outcome {
	o := Outcome{
		Settings: Settings{Lease: 5 * time.Second}, Jobs: jobs,
		Status: map[string]contracts.JobDefinition{}, History: map[string][]contracts.JobHistoryDefinitionProperties{},
		MustUntil: map[string]time.Time{}, MayUntil: map[string]time.Time{},
	}
	for _, j := range jobs {
		main, _ := j.Attempts()
		st := &contracts.JobStatus{}
		prev := time.Time{}
		for _, at := range j.Instants(t0.Add(time.Hour)) {
			for n := range main {
				failed := j.Target == Fails || j.Target == Flaky && n < j.FailFirst
				arrive := at.Add(10 * time.Millisecond)
				if n > 0 {
					arrive = prev.Add(j.RetryInterval + time.Second)
				}
				o.Calls = append(o.Calls, sinkCall(j, at, contracts.MainAction, n, arrive, failed))
				prev = arrive
				st.ExecutionCount++
				if failed {
					st.FailureCount++
				}
				o.History[j.Name] = append(o.History[j.Name], historyEntry(at, contracts.MainAction, n, failed))
			}
			if j.Faults() {
				st.FaultedCount++
				o.Calls = append(o.Calls, sinkCall(j, at, contracts.ErrorAction, 0, prev.Add(time.Second), false))
				o.History[j.Name] = append(o.History[j.Name], historyEntry(at, contracts.ErrorAction, 0, false))
			}
		}
		o.Status[j.Name] = contracts.JobDefinition{Properties: contracts.JobProperties{State: j.FinalState(), Status: st}}
	}
	o.ExecLastSeq = uint64(len(o.Calls))
	return o
}

func sinkCall(j JobSpec, at time.Time, action contracts.ActionName, n int, arrive time.Time, failed bool) Call {
	path, status := j.Path(), http.StatusOK
	if action == contracts.ErrorAction {
		path = j.ErrorPath()
	}
	if failed {
		status = http.StatusInternalServerError
	}
	return Call{Path: path, Job: j.Name, Key: contracts.OccurrenceID(j.Ref(), at, action, n), Expected: at,
		At: arrive, Answered: arrive.Add(5 * time.Millisecond), Status: status, Worker: "worker-1"}
}

func historyEntry(at time.Time, action contracts.ActionName, n int, failed bool) contracts.JobHistoryDefinitionProperties {
	h := contracts.JobHistoryDefinitionProperties{ExpectedExecutionTime: &at, ActionName: action, RetryCount: n}
	if failed {
		h.Status = contracts.StatusFailed
	}
	return h
}

var (
	everyMinute = JobSpec{Name: "every", Target: Succeeds, Start: t0, Every: 1, Count: 3}
	doomed      = JobSpec{Name: "doomed", Target: Fails, Start: t0, Retries: 1, RetryInterval: 15 * time.Second, ErrorAction: true}
	flaky       = JobSpec{Name: "flaky", Target: Flaky, FailFirst: 1, Start: t0, Retries: 2, RetryInterval: 15 * time.Second, ErrorAction: true}
)

func failedChecks(r *Report) string {
	var names []string
	for _, c := range r.Failed() {
		names = append(names, c.Name+" ("+c.Detail+")")
	}
	return strings.Join(names, "; ")
}

func TestARunThatWentWellPassesEveryCheck(t *testing.T) {
	t.Parallel()
	r := Analyze(outcome(everyMinute, doomed, flaky))
	if failed := failedChecks(r); failed != "" {
		t.Fatalf("failed: %s", failed)
	}
	if r.Occurrences != 5 || r.Attempts != 8 || r.Distinct != 8 || r.P50 != 10*time.Millisecond {
		t.Errorf("report %+v", r)
	}
}

func TestAMissingRetryIsLost(t *testing.T) {
	t.Parallel()
	o := outcome(doomed)
	o.Calls = o.Calls[:1] // the retry and the error action never came
	o.ExecLastSeq = 1
	r := Analyze(o)
	if len(r.LostAttempts) != 2 || len(r.LostOccurrences) != 0 {
		t.Errorf("lost attempts %v, occurrences %v", r.LostAttempts, r.LostOccurrences)
	}
	if !strings.Contains(failedChecks(r), "no occurrence lost") || !strings.Contains(failedChecks(r), "counters and history") {
		t.Errorf("failed: %s", failedChecks(r))
	}
}

func TestAnAttemptUnderAnotherKeyIsFlagged(t *testing.T) {
	t.Parallel()
	o := outcome(everyMinute)
	again := o.Calls[0]
	again.Key, again.At = "0123456789abcdef0123456789abcdef", again.At.Add(time.Second)
	o.Calls = append(o.Calls, again)
	r := Analyze(o)
	if len(r.Unexpected) != 1 || !strings.Contains(failedChecks(r), "only with the same Idempotency-Key") {
		t.Errorf("unexpected %v; failed: %s", r.Unexpected, failedChecks(r))
	}
	if !strings.Contains(failedChecks(r), "one EXEC message per attempt") {
		t.Errorf("the EXEC count should disagree with %d distinct keys", r.Distinct)
	}
}

// The same attempt delivered again with its key is a duplicate, not a
// failure; one made by a paused worker after it resumed is stale.
func TestARepeatedDeliveryIsADuplicate(t *testing.T) {
	t.Parallel()
	o := outcome(everyMinute)
	again := o.Calls[0]
	again.At, again.Worker = again.At.Add(12*time.Second), "worker-2"
	o.Calls = append(o.Calls, again)
	o.Faults = []Fault{{Kind: PauseWorker, Target: "worker-2", Start: t0.Add(-time.Second), End: t0.Add(11 * time.Second), Healthy: t0.Add(12 * time.Second)}}
	r := Analyze(o)
	if r.Duplicates != 1 || r.Stale != 1 {
		t.Errorf("%d duplicates, %d stale", r.Duplicates, r.Stale)
	}
	if failed := failedChecks(r); failed != "no stale work after a worker pause (1 attempts performed by a resumed worker after another worker had performed them)" {
		t.Errorf("failed: %s", failed)
	}
}

func TestEarlyCallsAreFlagged(t *testing.T) {
	t.Parallel()
	o := outcome(doomed)
	o.Calls[0].At = t0.Add(-time.Second)
	o.Calls[1].At = o.Calls[0].Answered.Add(5 * time.Second) // the retry, 10 s before its interval ran out
	r := Analyze(o)
	if len(r.Early) != 2 {
		t.Errorf("early: %v", r.Early)
	}
}

func TestCountersThatDisagreeWithTheSinkAreFlagged(t *testing.T) {
	t.Parallel()
	o := outcome(flaky)
	def := o.Status["flaky"]
	def.Properties.Status.ExecutionCount++
	def.Properties.State = contracts.JobStateEnabled
	o.Status["flaky"] = def
	o.History["flaky"] = o.History["flaky"][1:]
	r := Analyze(o)
	if len(r.Mismatches) != 1 || !strings.Contains(r.Mismatches[0], "state Enabled") ||
		!strings.Contains(r.Mismatches[0], "executionCount 3") || !strings.Contains(r.Mismatches[0], "1 history entries for 2 attempts") {
		t.Errorf("mismatches %v", r.Mismatches)
	}
}

// The thresholds: an occurrence due while a NATS node was down must be
// dispatched within NATSResumeBound (15 s) of the loss; the p99 lateness of those due while
// a planner was down must stay under its lease + 2 s.
func TestTheFaultThresholds(t *testing.T) {
	t.Parallel()
	var jobs []JobSpec
	for i := range 20 {
		jobs = append(jobs, JobSpec{Name: "tick-" + string(rune('a'+i)), Target: Slow, Start: t0.Add(time.Duration(i) * time.Second)})
	}
	o := outcome(jobs...)
	o.Faults = []Fault{
		{Kind: KillExecLeader, Target: "nats n1", Start: t0.Add(2500 * time.Millisecond), End: t0.Add(7 * time.Second)},
		{Kind: KillPlanner, Target: "planner-1", Start: t0.Add(9500 * time.Millisecond), End: t0.Add(15 * time.Second)},
	}
	late := func(i int, d time.Duration) { o.Calls[i].At = o.Calls[i].Expected.Add(d) }
	late(3, 16*time.Second) // due 3 s, 0.5 s after the kill, and dispatched 16 s late
	late(12, 8*time.Second) // above lease + 2 s
	r := Analyze(o)
	if len(r.Faults) != 2 || r.Faults[0].Delay != 16*time.Second || r.Faults[0].Passed ||
		r.Faults[1].P99 != 8*time.Second || r.Faults[1].Passed {
		t.Fatalf("rows %+v", r.Faults)
	}
	failed := failedChecks(r)
	if !strings.Contains(failed, "dispatch resumes within 15s") || !strings.Contains(failed, "under lease + 2 s") {
		t.Errorf("failed: %s", failed)
	}
	late(3, 100*time.Millisecond)
	late(12, 6*time.Second)
	if failed := failedChecks(Analyze(o)); failed != "" {
		t.Errorf("failed: %s", failed)
	}
}

func TestServerErrorsFailTheAPICheckAndA503WithRetryAfterDoesNot(t *testing.T) {
	t.Parallel()
	o := outcome(everyMinute)
	answers := &Answers{}
	answers.add(Answer{Method: "GET", Route: "{collection}/jobs", Status: 200})
	answers.add(Answer{Method: "GET", Route: "{collection}/jobs", Status: 503, RetryAfter: "1"})
	o.API = answers.Figures()
	if failed := failedChecks(Analyze(o)); failed != "" {
		t.Errorf("failed: %s", failed)
	}
	answers.add(Answer{Method: "GET", Route: "{collection}/jobs/{job}/history", Status: 500, Body: "no responders\\n"})
	answers.add(Answer{Method: "GET", Route: "{collection}/jobs/{job}/history", Status: 500, Body: "no responders"})
	answers.add(Answer{Method: "GET", Route: "{collection}/jobs", Status: 503})
	o.API = answers.Figures()
	failed := failedChecks(Analyze(o))
	if !strings.Contains(failed, "2 × GET {collection}/jobs/{job}/history 500") || !strings.Contains(failed, "1 × GET {collection}/jobs 503 without Retry-After") {
		t.Errorf("failed: %s", failed)
	}
}

func TestReadyAgain(t *testing.T) {
	t.Parallel()
	events := []Transition{
		{At: t0, Who: "planner-1", Ready: true},
		{At: t0.Add(2 * time.Second), Who: "planner-1", Ready: false},
		{At: t0.Add(3 * time.Second), Who: "planner-2", Ready: false},
		{At: t0.Add(5 * time.Second), Who: "planner-2", Ready: true},
		{At: t0.Add(7 * time.Second), Who: "planner-1", Ready: true},
		{At: t0.Add(8 * time.Second), Who: "worker-1", Ready: false},
	}
	for _, tc := range []struct {
		prefix   string
		from, to time.Duration
		want     time.Duration
	}{
		{"planner", time.Second, 10 * time.Second, 6 * time.Second},
		{"planner-2", time.Second, 10 * time.Second, 4 * time.Second},
		{"planner", 8 * time.Second, 10 * time.Second, 0},
		{"worker", time.Second, 10 * time.Second, infinite},
	} {
		if got := readyAgain(events, tc.prefix, t0.Add(tc.from), t0.Add(tc.to)); got != tc.want {
			t.Errorf("%s from %s: %s, want %s", tc.prefix, tc.from, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := range 100 {
		ds = append(ds, time.Duration(100-i)*time.Millisecond)
	}
	if p := percentile(ds, 50); p != 50*time.Millisecond {
		t.Errorf("p50 %s", p)
	}
	if p := percentile(ds, 99); p != 99*time.Millisecond {
		t.Errorf("p99 %s", p)
	}
	if p := percentile(ds, 100); p != 100*time.Millisecond {
		t.Errorf("max %s", p)
	}
	if p := percentile(nil, 99); p != 0 {
		t.Errorf("p99 of nothing %s", p)
	}
}
