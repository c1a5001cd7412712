package api

import (
	"net/http"
	"strings"
)

// routePrefix is the part of every route pattern above a collection.
const routePrefix = "/subscriptions/{subscription}/resourceGroups/{resourceGroup}/providers/Microsoft.Scheduler/jobCollections"

// RouteOf returns the pattern of the API route r asks for, with every name
// replaced by its placeholder ("…/jobCollections/{collection}/jobs/{job}"),
// or "other" for a path that names no route. Metrics label requests with
// it: it never holds a name.
func RouteOf(r *http.Request) string {
	seg, err := segments(r.URL)
	if err != nil || len(seg) < 2 || !strings.EqualFold(seg[0], "subscriptions") {
		return "other"
	}
	lit := func(i int, want string) bool { return i < len(seg) && strings.EqualFold(seg[i], want) }
	if len(seg) == 5 && lit(2, "providers") && lit(3, "Microsoft.Scheduler") && lit(4, "jobCollections") {
		return "/subscriptions/{subscription}/providers/Microsoft.Scheduler/jobCollections"
	}
	if len(seg) < 7 || !lit(2, "resourceGroups") || !lit(4, "providers") || !lit(5, "Microsoft.Scheduler") || !lit(6, "jobCollections") {
		return "other"
	}
	switch {
	case len(seg) == 7:
		return routePrefix
	case len(seg) == 8:
		return routePrefix + "/{collection}"
	case len(seg) == 9 && (lit(8, "enable") || lit(8, "disable") || lit(8, "jobs")):
		return routePrefix + "/{collection}/" + strings.ToLower(seg[8])
	case len(seg) == 10 && lit(8, "jobs"):
		return routePrefix + "/{collection}/jobs/{job}"
	case len(seg) == 11 && lit(8, "jobs") && (lit(10, "run") || lit(10, "history") || lit(10, "preview")):
		return routePrefix + "/{collection}/jobs/{job}/" + strings.ToLower(seg[10])
	}
	return "other"
}
