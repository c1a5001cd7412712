package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/planner/api"
)

// `scheduler upcoming` asks the resource group's or the collection's
// upcoming runs for its window and prints them as a table or JSON; bad
// flags exit 2 before any request.
func TestUpcomingCommand(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		requests []*url.URL
	)
	due := time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)
	more := "http://example.invalid/next"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.URL)
		mu.Unlock()
		out := api.UpcomingResult{From: due.Add(-time.Hour), To: due.Add(5 * time.Hour), Value: []api.UpcomingRun{
			{ID: "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/ops/jobs/ping",
				JobCollection: "ops", Job: "ping", Due: due, ActionType: "Http", Kind: api.RunScheduled},
			{ID: "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/eu/jobs/nightly",
				JobCollection: "eu", Job: "nightly", Due: due.Add(time.Minute), TimeZone: "Europe/Paris",
				LocalTime: "2030-01-07T10:01:00+01:00", ActionType: "Https", Kind: api.RunRetry},
		}}
		if r.URL.Query().Get("$top") == "2" {
			out.NextLink = &more
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
	last := func() *url.URL {
		mu.Lock()
		defer mu.Unlock()
		return requests[len(requests)-1]
	}

	t.Run("the resource group's runs as a table", func(t *testing.T) {
		out := must(t, srv.URL, "", "upcoming", "--collection=", "--hours", "12")
		u := last()
		if u.Path != "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/upcoming" ||
			u.Query().Get("hours") != "12" || u.Query().Get("$top") != "1000" {
			t.Errorf("asked %s", u)
		}
		lines := rows(out)
		if len(lines) != 2 || !strings.HasPrefix(out, "DUE") ||
			strings.Join(strings.Fields(lines[0]), " ") != "2030-01-07T09:00:00Z - ops ping Http Scheduled" ||
			strings.Join(strings.Fields(lines[1]), " ") != "2030-01-07T09:01:00Z 2030-01-07T10:01:00+01:00 Europe/Paris eu nightly Https Retry" {
			t.Errorf("table:\n%s", out)
		}
	})
	t.Run("one collection's runs, as JSON, with a note when more follow", func(t *testing.T) {
		out, errOut, code := cli(t, srv.URL, "", "upcoming", "-c", "ops", "--top", "2", "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if u := last(); u.Path != "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/ops/upcoming" ||
			u.Query().Get("hours") != "6" {
			t.Errorf("asked %s", u)
		}
		var runs []api.UpcomingRun
		if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 2 || runs[1].Kind != api.RunRetry {
			t.Errorf("JSON %v: %s", err, out)
		}
		if !strings.Contains(errOut, "raise --top") {
			t.Errorf("no note of the runs after the page: %q", errOut)
		}
	})
	t.Run("bad flags exit 2 naming the flag", func(t *testing.T) {
		mu.Lock()
		before := len(requests)
		mu.Unlock()
		for _, args := range [][]string{{"--hours", "0"}, {"--hours", "169"}, {"--top", "10001"}} {
			_, errOut, code := cli(t, srv.URL, "", append([]string{"upcoming"}, args...)...)
			if code != exitUsage || !strings.Contains(errOut, args[0]) {
				t.Errorf("%v: exit %d %q", args, code, errOut)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(requests) != before {
			t.Errorf("bad flags sent %d requests", len(requests)-before)
		}
	})
}
