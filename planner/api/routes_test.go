package api

import (
	"net/http/httptest"
	"testing"
)

func TestRouteOf(t *testing.T) {
	t.Parallel()
	const base = "/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections"
	for path, want := range map[string]string{
		"/providers/Microsoft.Scheduler/jobCollections":                  "/providers/Microsoft.Scheduler/jobCollections",
		"/PROVIDERS/microsoft.scheduler/JobCollections":                  "/providers/Microsoft.Scheduler/jobCollections",
		"/providers/Microsoft.Scheduler/jobCollections/c1":               "other",
		"/subscriptions/s1/providers/Microsoft.Scheduler/jobCollections": "/subscriptions/{subscription}/providers/Microsoft.Scheduler/jobCollections",
		base:                          routePrefix,
		base + "/c1":                  routePrefix + "/{collection}",
		base + "/c1/ENABLE":           routePrefix + "/{collection}/enable",
		base + "/c1/jobs":             routePrefix + "/{collection}/jobs",
		base + "/c1/jobs/j1":          routePrefix + "/{collection}/jobs/{job}",
		base + "/c1/jobs/j1/run":      routePrefix + "/{collection}/jobs/{job}/run",
		base + "/c1/jobs/j1/BACKFILL": routePrefix + "/{collection}/jobs/{job}/backfill",
		base + "/c1/jobs/j1/history":  routePrefix + "/{collection}/jobs/{job}/history",
		base + "/c1/jobs/j1/preview":  routePrefix + "/{collection}/jobs/{job}/preview",
		base + "/c1/upcoming":         routePrefix + "/{collection}/upcoming",
		base + "/c1/Calendars":        routePrefix + "/{collection}/calendars",
		base + "/c1/calendars/h":      routePrefix + "/{collection}/calendars/{calendar}",
		base + "/c1/calendars/h/x":    "other",
		"/subscriptions/s1/providers/Microsoft.Scheduler/upcoming":                           "/subscriptions/{subscription}/providers/Microsoft.Scheduler/upcoming",
		"/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Scheduler/upcoming":        "/subscriptions/{subscription}/resourceGroups/{resourceGroup}/providers/Microsoft.Scheduler/upcoming",
		base + "/c1/executionCounts":                                                         routePrefix + "/{collection}/executionCounts",
		"/subscriptions/s1/providers/Microsoft.Scheduler/executionCounts":                    "/subscriptions/{subscription}/providers/Microsoft.Scheduler/executionCounts",
		"/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Scheduler/executionCounts": "/subscriptions/{subscription}/resourceGroups/{resourceGroup}/providers/Microsoft.Scheduler/executionCounts",
		base + "/c1/jobs/j1/unknown":                                                         "other",
		"/":                                                                                  "other",
		"/metrics":                                                                           "other",
		"/subscriptions/s1/elsewhere/x":                                                      "other",
	} {
		if got := RouteOf(httptest.NewRequest("GET", path+"?api-version=2016-03-01", nil)); got != want {
			t.Errorf("RouteOf(%s) = %q, want %q", path, got, want)
		}
	}
}
