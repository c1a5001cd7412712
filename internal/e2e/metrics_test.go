package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	historyservice "github.com/jobscheduler/scheduler/history/service"
	"github.com/jobscheduler/scheduler/internal/testkit"
	workerservice "github.com/jobscheduler/scheduler/worker/service"
)

// scrape reads /metrics of the planner, which serves every role's metrics
// in these tests as `scheduler dev` does, into a map from each series, as
// exposed ("name{label="value",...}", labels in name order), to its value.
func (s *system) scrape(t *testing.T) (map[string]float64, string) {
	t.Helper()
	resp, err := http.Get(s.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	series := map[string]float64{}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		text.WriteString(line + "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		series[line[:i]] = v
	}
	return series, text.String()
}

// The metrics move with what the system does: dispatch, attempts by type
// and outcome, retries, the error action, faulted occurrences, ended jobs,
// history entries, API requests by route; and no job or collection name
// becomes a label.
func TestMetricsMoveWithExecutions(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, func(path string, _ int) int {
		if path == "/main" {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	before, _ := s.scrape(t)
	for _, name := range []string{
		`scheduler_executions_total{action="main",action_type="Http",outcome="Failed"}`,
		`scheduler_occurrences_faulted_total`,
		`scheduler_dispatch_lateness_seconds_count{action="main"}`,
	} {
		if before[name] != 0 {
			t.Errorf("%s is %v before any execution", name, before[name])
		}
	}
	for _, name := range []string{"scheduler_occurrences_due", "scheduler_occurrences_claimed", "scheduler_executions_in_flight",
		`scheduler_consumer_pending_messages{consumer="workers",stream="EXEC"}`,
		`scheduler_consumer_pending_messages{consumer="planner",stream="RESULTS"}`,
		`scheduler_consumer_pending_messages{consumer="history",stream="RESULTS"}`} {
		if _, ok := before[name]; !ok {
			t.Errorf("/metrics has no %s", name)
		}
	}

	s.put("metered-job", httpJob(tg.URL+"/main",
		fmt.Sprintf(`, "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 2},
			"errorAction": {"type": "Http", "request": {"uri": %q, "method": "POST"}, "retryPolicy": {"retryType": "None"}}`, tg.URL+"/alert"),
		`, "startTime": "2026-06-01T08:01:00Z"`))
	s.tick(time.Minute)
	for attempt := 1; attempt <= 3; attempt++ {
		tg.waitCalls(t, "/main", attempt)
		s.waitJob("metered-job", func(j contracts.JobDefinition) bool { return executions(j) == attempt }, "the attempt is not counted")
		if attempt < 3 {
			s.tick(15 * time.Second)
		}
	}
	tg.waitCalls(t, "/alert", 1)
	s.waitJob("metered-job", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateFaulted }, "not Faulted")

	want := map[string]float64{
		`scheduler_dispatch_lateness_seconds_count{action="main"}`:                          3,
		`scheduler_dispatch_lateness_seconds_count{action="error"}`:                         1,
		`scheduler_executions_dispatched_total{action="main",attempt="first"}`:              1,
		`scheduler_executions_dispatched_total{action="main",attempt="retry"}`:              2,
		`scheduler_executions_total{action="main",action_type="Http",outcome="Failed"}`:     3,
		`scheduler_executions_total{action="error",action_type="Http",outcome="Succeeded"}`: 1,
		`scheduler_action_duration_seconds_count{action_type="Http",outcome="Failed"}`:      3,
		`scheduler_results_counted_total{action="main",outcome="Failed"}`:                   3,
		`scheduler_follow_ups_scheduled_total{kind="retry"}`:                                2,
		`scheduler_follow_ups_scheduled_total{kind="error_action"}`:                         1,
		`scheduler_occurrences_faulted_total`:                                               1,
		`scheduler_jobs_ended_total{state="Faulted"}`:                                       1,
		`scheduler_history_entries_stored_total{status="Failed"}`:                           3,
		`scheduler_history_entries_stored_total{status="Completed"}`:                        1,
		`scheduler_executions_in_flight`:                                                    0,
		`scheduler_executions_held`:                                                         0,
		`scheduler_consumer_pending_messages{consumer="history",stream="RESULTS"}`:          0,
	}
	var got map[string]float64
	var text string
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, text = s.scrape(t)
		var wrong []string
		for name, v := range want {
			if got[name] != v {
				wrong = append(wrong, fmt.Sprintf("%s = %v, want %v", name, got[name], v))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the job faulted:\n%s", strings.Join(wrong, "\n"))
		}
		time.Sleep(20 * time.Millisecond) // poll the scrape until the deadline
	}
	const jobRoute = `/subscriptions/{subscription}/resourceGroups/{resourceGroup}/providers/Microsoft.Scheduler/jobCollections/{collection}/jobs/{job}`
	if n := got[`scheduler_api_requests_total{code="201",method="PUT",route="`+jobRoute+`"}`]; n != 1 {
		t.Errorf("API requests creating a job: %v, want 1", n)
	}
	if n := got[`scheduler_api_requests_total{code="200",method="GET",route="`+jobRoute+`"}`]; n < 1 {
		t.Errorf("API requests reading a job: %v, want at least 1", n)
	}
	for _, name := range []string{"metered-job", "sub1", "rg1", `"jc"`} {
		if strings.Contains(text, name) {
			t.Errorf("/metrics names %s", name)
		}
	}
	// Every metric of the scheduler's own is in the operations guide.
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE scheduler_"); ok {
			name = "scheduler_" + strings.Fields(name)[0]
			if !strings.Contains(string(doc), "`"+name) {
				t.Errorf("docs/operations.md does not describe %s", name)
			}
		}
	}
}

// Each role serves /healthz, /readyz and /metrics on its own address, the
// metrics its own.
func TestEveryRoleServesHealthAndMetrics(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	w, err := workerservice.Start(context.Background(), workerservice.Config{
		NATSURL: s.ns.ClientURL(), EncryptionKey: s.key, Listen: "127.0.0.1:0", Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	h, err := historyservice.Start(context.Background(), historyservice.Config{NATSURL: s.ns.ClientURL(), Listen: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop(context.Background()) })

	for role, c := range map[string]struct {
		addr string
		want []string
	}{
		"planner": {s.planner.Addr(), []string{"scheduler_dispatch_lateness_seconds", "scheduler_occurrences_due", `consumer="planner"`}},
		"worker":  {w.Addr(), []string{"scheduler_executions_in_flight", `scheduler_consumer_pending_messages{consumer="workers",stream="EXEC"}`}},
		"history": {h.Addr(), []string{"scheduler_history_entries_stored_total", `scheduler_consumer_pending_messages{consumer="history",stream="RESULTS"}`}},
	} {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body := testkit.Call(t, "GET", "http://"+c.addr+path, ""); code != http.StatusOK {
				t.Errorf("%s %s: %d %s", role, path, code, body)
			}
		}
		code, body := testkit.Call(t, "GET", "http://"+c.addr+"/metrics", "")
		if code != http.StatusOK {
			t.Fatalf("%s /metrics: %d", role, code)
		}
		for _, name := range c.want {
			if !strings.Contains(body, name) {
				t.Errorf("%s /metrics has no %s", role, name)
			}
		}
	}
}
