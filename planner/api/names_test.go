package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// Regression: one request with a 4,050-character job name closed the
// planner's NATS connection for good (the server refuses a protocol line
// over 4,096 bytes): names were checked on PUT only. Every name of every
// route is checked before anything reaches NATS, and the API keeps
// working.
func TestOverlongNamesAnswer400OnEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)

	long := strings.Repeat("x", 4050)
	// Each route with a placeholder for the name that is too long.
	routes := []struct{ method, path string }{
		{"GET", "/subscriptions/{sub}/providers/Microsoft.Scheduler/jobCollections"},
		{"GET", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections"},
		{"GET", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}"},
		{"PUT", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}"},
		{"PATCH", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}"},
		{"DELETE", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}"},
		{"POST", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/enable"},
		{"POST", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/disable"},
		{"GET", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/jobs"},
		{"GET", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/jobs/{job}"},
		{"PUT", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/jobs/{job}"},
		{"PATCH", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/jobs/{job}"},
		{"DELETE", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/jobs/{job}"},
		{"POST", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/jobs/{job}/run"},
		{"GET", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/jobs/{job}/preview"},
		{"GET", "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.Scheduler/jobCollections/{coll}/jobs/{job}/history"},
	}
	parts := []struct{ placeholder, name, says string }{
		{"{sub}", "subscription id", "use 1 to 64 letters, digits and hyphens"},
		{"{rg}", "resource group name", "use 1 to 90 letters"},
		{"{coll}", "job collection name", "use 1 to 64 letters"},
		{"{job}", "job name", "use 1 to 64 letters"},
	}
	names := strings.NewReplacer("{sub}", "sub1", "{rg}", "rg1", "{coll}", "jc", "{job}", "j")
	for _, route := range routes {
		for _, part := range parts {
			if !strings.Contains(route.path, part.placeholder) {
				continue
			}
			path := names.Replace(strings.Replace(route.path, part.placeholder, long, 1))
			r := b.do(t, route.method, path, weeklyJob)
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidName {
				t.Errorf("%s %s with a long %s: %d, want 400 %s: %.300s", route.method, route.path, part.name, r.status, codeInvalidName, r.body)
				continue
			}
			msg := r.json(t)["error"].(map[string]any)["message"].(string)
			if !strings.Contains(msg, part.name) || !strings.Contains(msg, part.says) || !strings.Contains(msg, "(4050 bytes)") || len(msg) > 400 {
				t.Errorf("%s %s with a long %s: message %q does not name the part and its rule in brief", route.method, route.path, part.name, msg)
			}
		}
	}
	t.Run("a name just over its limit is refused, and one at it accepted", func(t *testing.T) {
		b.mustDo(t, http.StatusBadRequest, "GET", base+"/jc/jobs/"+strings.Repeat("j", 65), "")
		b.mustDo(t, http.StatusBadRequest, "GET", "/subscriptions/sub1/resourceGroups/"+strings.Repeat("r", 91)+"/providers/Microsoft.Scheduler/jobCollections", "")
		b.mustDo(t, http.StatusNotFound, "GET", base+"/jc/jobs/"+strings.Repeat("j", 64), "")
		b.mustDo(t, http.StatusOK, "GET", "/subscriptions/sub1/resourceGroups/"+strings.Repeat("r", 90)+"/providers/Microsoft.Scheduler/jobCollections", "")
	})
	t.Run("afterwards the API's connection is up and the API works", func(t *testing.T) {
		if err := b.nc.Flush(); err != nil || b.nc.Status() != nats.CONNECTED {
			t.Fatalf("the connection is %v: %v", b.nc.Status(), b.nc.LastError())
		}
		b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/after", weeklyJob)
		b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/after", "")
		b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/j/history", "")
	})
}
