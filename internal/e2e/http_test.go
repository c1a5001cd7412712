package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestAnHTTPJobRunsOnTimeAndCompletes(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, nil)
	j := s.put("once", httpJob(tg.URL+"/hook", "", `, "startTime": "2026-06-01T08:01:00Z"`))
	if next := j.Properties.Status.NextExecutionTime; next == nil || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("nextExecutionTime %v, want 08:01", next)
	}

	s.tick(time.Minute)
	c := tg.waitCalls(t, "/hook", 1)[0]
	if !c.at.Equal(t0.Add(time.Minute)) || c.body != "hello" {
		t.Errorf("called at %v with %q, want at 08:01 with the body", c.at, c.body)
	}
	for name, want := range map[string]string{
		"x-ms-scheduler-jobid": "once", "x-ms-scheduler-jobcollectionid": "jc",
		"x-ms-scheduler-expected-execution-time": "2026-06-01T08:01:00",
	} {
		if got := c.header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if key := c.header.Get("Idempotency-Key"); !hex32.MatchString(key) || c.header.Get("x-ms-scheduler-execution-tag") != key {
		t.Errorf("Idempotency-Key %q, execution tag %q", key, c.header.Get("x-ms-scheduler-execution-tag"))
	}
	if tp := c.header.Get("traceparent"); !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`).MatchString(tp) {
		t.Errorf("traceparent %q", tp)
	}

	j = s.waitJob("once", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	st := j.Properties.Status
	if st.ExecutionCount != 1 || st.FailureCount != 0 || st.FaultedCount != 0 || st.NextExecutionTime != nil ||
		st.LastExecutionTime == nil || !st.LastExecutionTime.Equal(t0.Add(time.Minute)) {
		t.Errorf("status %+v", st)
	}

	h := s.waitHistory("once", 1)[0]
	wantMessage := fmt.Sprintf("Http Action - Response from host '%s': 'OK' Response Headers: ", tg.host())
	if h.Status != "" || h.ActionName != contracts.MainAction || h.RetryCount != 0 || h.RepeatCount != 1 ||
		!h.ExpectedExecutionTime.Equal(t0.Add(time.Minute)) || !h.StartTime.Equal(t0.Add(time.Minute)) || h.EndTime == nil ||
		!strings.HasPrefix(h.Message, wantMessage) || !strings.HasSuffix(h.Message, " Body: answer 0 to /hook") {
		t.Errorf("history entry %+v", h)
	}
	if n := len(s.history("once", "$filter=status eq Completed").Value); n != 1 {
		t.Errorf("status eq Completed: %d entries, want 1", n)
	}
	if n := len(s.history("once", "$filter=status eq Failed").Value); n != 0 {
		t.Errorf("status eq Failed: %d entries, want 0", n)
	}
	code, body := testkit.Call(t, "GET", s.base+"/jobs/once/history?$filter=result%20eq%20Failed", "")
	if code != http.StatusBadRequest || !strings.Contains(body, "status eq Completed") {
		t.Errorf("an unknown filter: %d %s", code, body)
	}
	if code, _ := testkit.Call(t, "GET", s.base+"/jobs/none/history", ""); code != http.StatusNotFound {
		t.Errorf("the history of a missing job: %d, want 404", code)
	}
}

// The main action fails; it is retried as its policy says, then the error
// action runs once, the occurrence is faulted and the one-time job ends
// Faulted. History lists every attempt, newest first, and filters and pages.
func TestRetriesThenTheErrorAction(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, func(path string, _ int) int {
		if path == "/main" {
			return http.StatusInternalServerError
		}
		return http.StatusAccepted
	})
	s.put("flaky", httpJob(tg.URL+"/main",
		fmt.Sprintf(`, "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 2},
			"errorAction": {"type": "Http", "request": {"uri": %q, "method": "POST", "body": "it failed"}, "retryPolicy": {"retryType": "None"}}`, tg.URL+"/alert"),
		`, "startTime": "2026-06-01T08:01:00Z"`))

	s.tick(time.Minute)
	for attempt := 1; attempt <= 3; attempt++ {
		tg.waitCalls(t, "/main", attempt)
		s.waitJob("flaky", func(j contracts.JobDefinition) bool { return executions(j) == attempt }, "the attempt is not counted")
		if attempt < 3 {
			s.tick(15 * time.Second)
		}
	}
	alert := tg.waitCalls(t, "/alert", 1)[0]
	main := tg.callsTo("/main")
	keys := map[string]bool{alert.header.Get("Idempotency-Key"): true}
	for i, c := range main {
		if want := t0.Add(time.Minute + time.Duration(i)*15*time.Second); !c.at.Equal(want) {
			t.Errorf("attempt %d at %v, want %v", i, c.at, want)
		}
		keys[c.header.Get("Idempotency-Key")] = true
	}
	if len(main) != 3 || len(keys) != 4 || !alert.at.Equal(t0.Add(90*time.Second)) || alert.body != "it failed" {
		t.Fatalf("%d main attempts, %d distinct keys, alert at %v with %q", len(main), len(keys), alert.at, alert.body)
	}

	j := s.waitJob("flaky", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateFaulted }, "not Faulted")
	if st := j.Properties.Status; st.ExecutionCount != 3 || st.FailureCount != 3 || st.FaultedCount != 1 {
		t.Errorf("status %+v", st)
	}
	entries := s.waitHistory("flaky", 4)
	want := []struct {
		action contracts.ActionName
		status contracts.ExecutionStatus
		retry  int
	}{
		{contracts.ErrorAction, "", 0},
		{contracts.MainAction, contracts.StatusFailed, 2},
		{contracts.MainAction, contracts.StatusFailed, 1},
		{contracts.MainAction, contracts.StatusFailed, 0},
	}
	for i, w := range want {
		h := entries[i]
		if h.ActionName != w.action || h.Status != w.status || h.RetryCount != w.retry || h.RepeatCount != 1 ||
			!h.ExpectedExecutionTime.Equal(t0.Add(time.Minute)) {
			t.Errorf("entry %d: %+v, want %+v", i, h, w)
		}
	}
	if !strings.Contains(entries[1].Message, "'Internal Server Error'") {
		t.Errorf("a failed entry's message: %q", entries[1].Message)
	}
	if got := s.history("flaky", "$filter=status%20eq%20failed"); len(got.Value) != 3 {
		t.Errorf("status eq failed: %d entries, want 3", len(got.Value))
	}
	if got := s.history("flaky", "$filter=status eq Completed"); len(got.Value) != 1 || got.Value[0].Properties.ActionName != contracts.ErrorAction {
		t.Errorf("status eq Completed: %+v", got.Value)
	}
	first := s.history("flaky", "$top=2")
	if len(first.Value) != 2 || first.NextLink == nil || !strings.Contains(*first.NextLink, "%24skip=2") {
		t.Fatalf("$top=2: %d entries, nextLink %v", len(first.Value), first.NextLink)
	}
	_, body := testkit.Call(t, "GET", *first.NextLink, "")
	second := s.history("flaky", "$top=2&$skip=2")
	if len(second.Value) != 2 || second.NextLink != nil || second.Value[0].Properties.RetryCount != 1 || !strings.Contains(body, `"retryCount":1`) {
		t.Errorf("the second page: %+v (via nextLink: %s)", second, body)
	}
	if first.Value[0].ID == first.Value[1].ID || !strings.HasPrefix(first.Value[0].ID, s.base[len(s.api):]+"/jobs/flaky/history/") ||
		first.Value[0].Type != contracts.JobHistoryResourceType || !strings.HasPrefix(first.Value[0].Name, "jc/flaky/") {
		t.Errorf("entry names: %+v", first.Value)
	}
}

// Without a retry policy the documented default applies: four retries 30
// seconds apart. With no error action the job ends Faulted.
func TestTheDefaultRetryPolicy(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, func(string, int) int { return http.StatusServiceUnavailable })
	s.put("default", httpJob(tg.URL+"/x", "", `, "startTime": "2026-06-01T08:01:00Z"`))
	s.tick(time.Minute)
	for attempt := 1; attempt <= 5; attempt++ {
		tg.waitCalls(t, "/x", attempt)
		s.waitJob("default", func(j contracts.JobDefinition) bool { return executions(j) == attempt }, "the attempt is not counted")
		if attempt < 5 {
			s.tick(30 * time.Second)
		}
	}
	j := s.waitJob("default", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateFaulted }, "not Faulted")
	if st := j.Properties.Status; st.ExecutionCount != 5 || st.FailureCount != 5 || st.FaultedCount != 1 {
		t.Errorf("status %+v, want 5 executions, 5 failures, 1 faulted (the documented 5, 5, 1)", st)
	}
	if j.Properties.Action.RetryPolicy != nil {
		t.Errorf("the default policy is echoed: %+v", j.Properties.Action.RetryPolicy)
	}
}

// A recurring job with a count runs that many occurrences, numbered in
// history, and then completes.
func TestARecurringJobRunsItsCountAndCompletes(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, nil)
	s.put("thrice", httpJob(tg.URL+"/tick", "", `, "startTime": "2026-06-01T08:01:00Z", "recurrence": {"frequency": "Minute", "count": 3}`))
	for n := 1; n <= 3; n++ {
		s.tick(time.Minute)
		tg.waitCalls(t, "/tick", n)
		s.waitJob("thrice", func(j contracts.JobDefinition) bool { return executions(j) == n }, "the occurrence is not counted")
	}
	j := s.waitJob("thrice", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	if j.Properties.Status.NextExecutionTime != nil {
		t.Errorf("a completed job shows a next execution: %v", j.Properties.Status.NextExecutionTime)
	}
	for i, h := range s.waitHistory("thrice", 3) {
		if want := 3 - i; h.RepeatCount != want || !h.ExpectedExecutionTime.Equal(t0.Add(time.Duration(want)*time.Minute)) {
			t.Errorf("entry %d: repeatCount %d expected %v, want occurrence %d", i, h.RepeatCount, h.ExpectedExecutionTime, want)
		}
	}
	code, body := testkit.Call(t, "PATCH", s.base+"/jobs/thrice", `{"properties": {"state": "Disabled"}}`)
	if code != http.StatusConflict {
		t.Errorf("changing a Completed job: %d %s", code, body)
	}
}

// freePort returns a loopback address nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// The target is down (nothing listens) for the first two attempts and back
// for the third: the job is retried, succeeds and completes, and no error
// action runs.
func TestATargetDownForAWhileIsRetried(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	alerts := newTarget(t, s.clock, nil)
	addr := freePort(t)
	s.put("patient", httpJob("http://"+addr+"/work",
		fmt.Sprintf(`, "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT1M", "retryCount": 3},
			"errorAction": {"type": "Http", "request": {"uri": %q, "method": "POST"}}`, alerts.URL+"/alert"),
		`, "startTime": "2026-06-01T08:01:00Z"`))
	s.tick(time.Minute)
	s.waitJob("patient", func(j contracts.JobDefinition) bool { return executions(j) == 1 }, "the first attempt is not counted")
	s.tick(time.Minute)
	s.waitJob("patient", func(j contracts.JobDefinition) bool { return executions(j) == 2 }, "the second attempt is not counted")

	back := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the target's port was taken meanwhile: %v", err)
	}
	back.Listener = l
	back.Start()
	defer back.Close()
	s.tick(time.Minute)

	j := s.waitJob("patient", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	if st := j.Properties.Status; st.ExecutionCount != 3 || st.FailureCount != 2 || st.FaultedCount != 0 {
		t.Errorf("status %+v", st)
	}
	entries := s.waitHistory("patient", 3)
	if entries[0].Status != "" || entries[1].Status != contracts.StatusFailed ||
		!strings.HasPrefix(entries[1].Message, "Http Action - Request to host '127.0.0.1' failed: ") {
		t.Errorf("entries %+v", entries)
	}
	if n := len(alerts.callsTo("/alert")); n != 0 {
		t.Errorf("the error action ran %d times for an occurrence that succeeded", n)
	}
}

// The target is down throughout: every retry fails, then the error action
// fires, on its own retry policy.
func TestATargetDownThroughoutFiresTheErrorAction(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	alerts := newTarget(t, s.clock, func(_ string, n int) int {
		if n == 0 {
			return http.StatusBadGateway // the error action itself is retried once
		}
		return http.StatusOK
	})
	s.put("doomed", httpJob("http://"+freePort(t)+"/work",
		fmt.Sprintf(`, "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT20S", "retryCount": 1},
			"errorAction": {"type": "Http", "request": {"uri": %q, "method": "POST"},
				"retryPolicy": {"retryType": "Fixed", "retryInterval": "PT45S", "retryCount": 1}}`, alerts.URL+"/alert"),
		`, "startTime": "2026-06-01T08:01:00Z"`))
	s.tick(time.Minute)
	s.waitJob("doomed", func(j contracts.JobDefinition) bool { return executions(j) == 1 }, "the first attempt is not counted")
	s.tick(20 * time.Second)
	first := alerts.waitCalls(t, "/alert", 1)[0]
	s.waitHistory("doomed", 3)
	s.waitUpcoming("doomed", t0.Add(125*time.Second))
	s.tick(45 * time.Second)
	second := alerts.waitCalls(t, "/alert", 2)[1]
	if !first.at.Equal(t0.Add(80*time.Second)) || !second.at.Equal(t0.Add(125*time.Second)) {
		t.Errorf("error action at %v and %v, want 08:01:20 and 08:02:05", first.at, second.at)
	}
	j := s.waitJob("doomed", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateFaulted }, "not Faulted")
	if st := j.Properties.Status; st.ExecutionCount != 2 || st.FailureCount != 2 || st.FaultedCount != 1 {
		t.Errorf("status %+v (error action attempts are not counted as executions)", st)
	}
	entries := s.waitHistory("doomed", 4)
	if entries[0].ActionName != contracts.ErrorAction || entries[0].RetryCount != 1 || entries[0].Status != "" ||
		entries[1].ActionName != contracts.ErrorAction || entries[1].Status != contracts.StatusFailed {
		t.Errorf("entries %+v", entries)
	}
}

// POST …/run runs the main action now, outside the schedule: it has no
// occurrence number, counts as an execution, and the job keeps its schedule.
func TestRunNow(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, nil)
	s.put("daily", httpJob(tg.URL+"/run", "", `, "startTime": "2026-06-02T06:00:00Z", "recurrence": {"frequency": "Day"}`))
	if code, body := testkit.Call(t, "POST", s.base+"/jobs/daily/run?api-version=2016-03-01", ""); code != http.StatusOK {
		t.Fatalf("run: %d %s", code, body)
	}
	c := tg.waitCalls(t, "/run", 1)[0]
	h := s.waitHistory("daily", 1)[0]
	j := s.waitJob("daily", func(j contracts.JobDefinition) bool { return executions(j) == 1 }, "the run is not counted")
	if h.RepeatCount != 0 || !h.ExpectedExecutionTime.Equal(t0) || !c.at.Equal(t0) {
		t.Errorf("entry %+v, called at %v", h, c.at)
	}
	if j.Properties.State != contracts.JobStateEnabled || j.Properties.Status.NextExecutionTime == nil ||
		!j.Properties.Status.NextExecutionTime.Equal(time.Date(2026, 6, 2, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("after a run: %+v", j.Properties)
	}
}
