package api

import (
	"net/http"
	"strings"
)

// routePrefix is the part of every route pattern above a collection.
const routePrefix = "/subscriptions/{subscription}/resourceGroups/{resourceGroup}/providers/Microsoft.Scheduler/jobCollections"

// The route patterns: each name is replaced by its placeholder.
const (
	routeAllCollections          = "/providers/Microsoft.Scheduler/jobCollections"
	routeSubscriptionCollections = "/subscriptions/{subscription}/providers/Microsoft.Scheduler/jobCollections"
	routeCollections             = routePrefix
	routeCollection              = routePrefix + "/{collection}"
	routeCollectionEnable        = routePrefix + "/{collection}/enable"
	routeCollectionDisable       = routePrefix + "/{collection}/disable"
	routeJobs                    = routePrefix + "/{collection}/jobs"
	routeJob                     = routePrefix + "/{collection}/jobs/{job}"
	routeJobRun                  = routePrefix + "/{collection}/jobs/{job}/run"
	routeJobBackfill             = routePrefix + "/{collection}/jobs/{job}/backfill"
	routeJobHistory              = routePrefix + "/{collection}/jobs/{job}/history"
	routeJobPreview              = routePrefix + "/{collection}/jobs/{job}/preview"
	routeCalendars               = routePrefix + "/{collection}/calendars"
	routeCalendar                = routePrefix + "/{collection}/calendars/{calendar}"
	routeSubscriptionUpcoming    = "/subscriptions/{subscription}/providers/Microsoft.Scheduler/upcoming"
	routeUpcoming                = "/subscriptions/{subscription}/resourceGroups/{resourceGroup}/providers/Microsoft.Scheduler/upcoming"
	routeCollectionUpcoming      = routePrefix + "/{collection}/upcoming"
	routeJobUpcoming             = routePrefix + "/{collection}/jobs/{job}/upcoming"
	routeSubscriptionExecutions  = "/subscriptions/{subscription}/providers/Microsoft.Scheduler/executionCounts"
	routeExecutions              = "/subscriptions/{subscription}/resourceGroups/{resourceGroup}/providers/Microsoft.Scheduler/executionCounts"
	routeCollectionExecutions    = routePrefix + "/{collection}/executionCounts"
	// routeOther is a path that names no route.
	routeOther = "other"
)

// RouteOf returns the pattern of the API route r asks for, with every name
// replaced by its placeholder ("…/jobCollections/{collection}/jobs/{job}"),
// or "other" for a path that names no route. Metrics label requests with
// it: it never holds a name.
func RouteOf(r *http.Request) string {
	seg, err := segments(r.URL)
	if err != nil {
		return routeOther
	}
	return match(seg)
}

// match returns the pattern of the route the path's unescaped segments
// name. Literal segments match case-insensitively, as ARM's do; the
// segments in the place of a placeholder are names.
func match(seg []string) string {
	lit := func(i int, want string) bool { return i < len(seg) && strings.EqualFold(seg[i], want) }
	if len(seg) == 3 && lit(0, "providers") && lit(1, "Microsoft.Scheduler") && lit(2, "jobCollections") {
		return routeAllCollections
	}
	if len(seg) < 2 || !lit(0, "subscriptions") {
		return routeOther
	}
	if len(seg) == 5 && lit(2, "providers") && lit(3, "Microsoft.Scheduler") && lit(4, "jobCollections") {
		return routeSubscriptionCollections
	}
	if len(seg) == 5 && lit(2, "providers") && lit(3, "Microsoft.Scheduler") && lit(4, "upcoming") {
		return routeSubscriptionUpcoming
	}
	if len(seg) == 5 && lit(2, "providers") && lit(3, "Microsoft.Scheduler") && lit(4, "executionCounts") {
		return routeSubscriptionExecutions
	}
	if len(seg) == 7 && lit(2, "resourceGroups") && lit(4, "providers") && lit(5, "Microsoft.Scheduler") && lit(6, "upcoming") {
		return routeUpcoming
	}
	if len(seg) == 7 && lit(2, "resourceGroups") && lit(4, "providers") && lit(5, "Microsoft.Scheduler") && lit(6, "executionCounts") {
		return routeExecutions
	}
	if len(seg) < 7 || !lit(2, "resourceGroups") || !lit(4, "providers") || !lit(5, "Microsoft.Scheduler") || !lit(6, "jobCollections") {
		return routeOther
	}
	switch {
	case len(seg) == 7:
		return routeCollections
	case len(seg) == 8:
		return routeCollection
	case len(seg) == 9 && lit(8, "enable"):
		return routeCollectionEnable
	case len(seg) == 9 && lit(8, "disable"):
		return routeCollectionDisable
	case len(seg) == 9 && lit(8, "upcoming"):
		return routeCollectionUpcoming
	case len(seg) == 9 && lit(8, "executionCounts"):
		return routeCollectionExecutions
	case len(seg) == 9 && lit(8, "jobs"):
		return routeJobs
	case len(seg) == 10 && lit(8, "jobs"):
		return routeJob
	case len(seg) == 9 && lit(8, "calendars"):
		return routeCalendars
	case len(seg) == 10 && lit(8, "calendars"):
		return routeCalendar
	case len(seg) == 11 && lit(8, "jobs") && lit(10, "run"):
		return routeJobRun
	case len(seg) == 11 && lit(8, "jobs") && lit(10, "backfill"):
		return routeJobBackfill
	case len(seg) == 11 && lit(8, "jobs") && lit(10, "history"):
		return routeJobHistory
	case len(seg) == 11 && lit(8, "jobs") && lit(10, "preview"):
		return routeJobPreview
	case len(seg) == 11 && lit(8, "jobs") && lit(10, "upcoming"):
		return routeJobUpcoming
	}
	return routeOther
}
