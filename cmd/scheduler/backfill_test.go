package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// jobs backfill posts the range to the job's backfill route and says what
// the server scheduled; without --start or --end it is a usage error.
func TestJobsBackfill(t *testing.T) {
	t.Parallel()
	var path, body string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		path, body = r.Method+" "+r.URL.Path, string(data)
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"count": 3, "first": "2026-03-02T00:00:00Z", "last": "2026-03-04T00:00:00Z", "pace": "PT1S", "duration": "PT2S"}`)
	}))
	defer server.Close()
	flags := []string{"--server", server.URL, "--subscription", "s", "--resource-group", "rg", "-c", "jc"}
	out, errOut, code := runCLI(t, "", append([]string{"jobs", "backfill", "daily", "--start", "2026-03-02T00:00:00Z", "--end", "2026-03-04"}, flags...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "POST /subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/jc/jobs/daily/backfill"; path != want {
		t.Errorf("request %q, want %q", path, want)
	}
	var sent map[string]string
	if err := json.Unmarshal([]byte(body), &sent); err != nil || sent["start"] != "2026-03-02T00:00:00Z" || sent["end"] != "2026-03-04" {
		t.Errorf("body %s (%v)", body, err)
	}
	if want := "job daily is backfilling 3 runs from 2026-03-02T00:00:00Z to 2026-03-04T00:00:00Z, one per PT1S: about PT2S\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	if _, _, code := runCLI(t, "", append([]string{"jobs", "backfill", "daily", "--start", "2026-03-02"}, flags...)...); code != exitUsage {
		t.Errorf("without --end: exit %d, want %d", code, exitUsage)
	}
}
