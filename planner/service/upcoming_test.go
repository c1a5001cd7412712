package service

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
)

// The upcoming runs through the real planner: the timer's scheduled
// occurrence and the ones its recurrence computes after it, up to the
// job's count.
func TestUpcomingRunsThroughThePlanner(t *testing.T) {
	t.Parallel()
	svc, _, _ := startAgainstRealServers(t)
	base := "http://" + svc.Addr()
	do := func(method, path, body string) (int, string) {
		return testkit.Call(t, method, base+path, body, "Authorization", "Bearer "+secretToken)
	}
	const rg = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler"
	if code, body := do("PUT", rg+"/jobCollections/c", `{"properties": {}}`); code != http.StatusCreated {
		t.Fatalf("collection: %d %s", code, body)
	}
	start := time.Now().UTC().Truncate(time.Minute).Add(10 * time.Minute)
	job := fmt.Sprintf(`{"properties": {"startTime": %q, "action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "Minute", "interval": 15, "count": 3}}}`, start.Format(time.RFC3339))
	if code, body := do("PUT", rg+"/jobCollections/c/jobs/j", job); code != http.StatusCreated {
		t.Fatalf("job: %d %s", code, body)
	}
	code, body := do("GET", rg+"/upcoming?api-version=2016-03-01&hours=2", "")
	var got api.UpcomingResult
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
		t.Fatalf("%d %s (%v)", code, body, err)
	}
	if len(got.Value) != 3 {
		t.Fatalf("runs %+v, want the job's 3", got.Value)
	}
	for i, r := range got.Value {
		if want := start.Add(time.Duration(15*i) * time.Minute); !r.Due.Equal(want) || r.Kind != api.RunScheduled || r.Job != "j" {
			t.Errorf("run %d: %+v, want j Scheduled at %v", i, r, want)
		}
	}
}
