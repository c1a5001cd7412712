package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// Against a Redis Cluster of three primaries, the planner schedules,
// dispatches, retries and counts as against one server: every script
// touches the keys of one partition, which share a hash slot.
func TestARedisCluster(t *testing.T) {
	t.Parallel()
	s := start(t, options{redisCluster: testkit.RedisCluster(t)})
	tg := newTarget(t, s.clock, func(path string, n int) int {
		if path == "/flaky" && n == 0 { // the first call fails
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	for i := range 8 { // jobs spread over the partitions, so over the nodes
		s.put(fmt.Sprintf("every-minute-%d", i), httpJob(tg.URL+fmt.Sprintf("/m%d", i), "", `, "startTime": "2026-06-01T08:01:00Z", "recurrence": {"frequency": "Minute", "count": 2}`))
	}
	s.put("flaky", httpJob(tg.URL+"/flaky", `, "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 1}`, `, "startTime": "2026-06-01T08:01:00Z"`))

	s.tick(time.Minute)
	for i := range 8 {
		tg.waitCalls(t, fmt.Sprintf("/m%d", i), 1)
		s.waitJob(fmt.Sprintf("every-minute-%d", i), func(j contracts.JobDefinition) bool { return executions(j) == 1 }, "the first run is not counted")
	}
	tg.waitCalls(t, "/flaky", 1)
	s.waitJob("flaky", func(j contracts.JobDefinition) bool { return executions(j) == 1 }, "the failed attempt is not counted")
	s.tick(time.Minute)
	for i := range 8 {
		tg.waitCalls(t, fmt.Sprintf("/m%d", i), 2)
		j := s.waitJob(fmt.Sprintf("every-minute-%d", i), func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
		if st := j.Properties.Status; st.ExecutionCount != 2 {
			t.Errorf("every-minute-%d: %d executions, want 2", i, st.ExecutionCount)
		}
	}
	tg.waitCalls(t, "/flaky", 2) // the retry, 15 s after the failure, a minute ago
	j := s.waitJob("flaky", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "the retry did not complete the job")
	if st := j.Properties.Status; st.ExecutionCount != 2 || st.FailureCount != 1 || st.FaultedCount != 0 {
		t.Errorf("flaky: status %+v, want 2 executions, 1 failure", st)
	}
}
