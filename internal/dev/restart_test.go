package dev

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// Regression: a retry pending when `scheduler dev` stopped was lost (its
// embedded Redis starts empty), so the job never retried, never ran its
// error action and stayed Enabled with no next run. After a restart the
// retry runs at its time, then the error action, and the job is Faulted
// with its counters right.
func TestAPendingRetryRunsAfterARestart(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		calls = map[string]int{}
	)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/main" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer target.Close()
	called := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[path]
	}
	start := restartable(t)
	env := start()
	base := "http://" + env.APIAddr() + "/subscriptions/dev/resourceGroups/dev/providers/Microsoft.Scheduler/jobCollections/demo"
	testkit.Call(t, "PUT", base, `{"properties": {}}`)
	job := fmt.Sprintf(`{"properties": {"action": {"type": "Http", "request": {"uri": %q, "method": "POST"},
		"retryPolicy": {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 1},
		"errorAction": {"type": "Http", "request": {"uri": %q, "method": "POST"}}}}}`, target.URL+"/main", target.URL+"/error")
	if code, body := testkit.Call(t, "PUT", base+"/jobs/flaky", job); code != http.StatusCreated {
		t.Fatalf("job: %d %s", code, body)
	}
	getJob := func() contracts.JobDefinition {
		var j contracts.JobDefinition
		_, body := testkit.Call(t, "GET", base+"/jobs/flaky", "")
		_ = json.Unmarshal([]byte(body), &j)
		return j
	}
	testkit.Eventually(t, 20*time.Second, func() bool {
		st := getJob().Properties.Status
		return st != nil && st.FailureCount == 1 && st.NextExecutionTime != nil
	}, "the first attempt did not fail with a retry pending: %+v", getJob().Properties.Status)
	retryAt := *getJob().Properties.Status.NextExecutionTime
	env.Stop(context.Background())

	env = start()
	defer env.Stop(context.Background())
	if st := getJob().Properties.Status; st == nil || st.NextExecutionTime == nil || !st.NextExecutionTime.Equal(retryAt) {
		t.Fatalf("after the restart the job runs next at %+v, want its retry at %v", st, retryAt)
	}
	testkit.Eventually(t, 40*time.Second, func() bool { return getJob().Properties.State == contracts.JobStateFaulted },
		"the job did not become Faulted after its retry and error action: %+v", getJob().Properties)
	st := getJob().Properties.Status
	if called("/main") != 2 || called("/error") != 1 || st.ExecutionCount != 2 || st.FailureCount != 2 || st.FaultedCount != 1 {
		t.Fatalf("%d main calls, %d error calls, status %+v: want 2, 1 and two failed executions, one faulted", called("/main"), called("/error"), st)
	}
}
