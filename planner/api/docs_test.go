package api

import (
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docRoute finds the method and path of each route row of docs/api.md.
var docRoute = regexp.MustCompile("(?m)^\\| `(GET|PUT|PATCH|DELETE|POST) ([^`]+)` \\|")

// docs/api.md lists every route the API serves, and each route it lists
// is one the API knows.
func TestTheAPIReferenceListsEveryRoute(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range docRoute.FindAllStringSubmatch(string(data), -1) {
		path := strings.ReplaceAll(m[2], "{collections}", routePrefix)
		// A request for the documented path, with names filled in, must
		// route to the same pattern.
		concrete := strings.NewReplacer("{subscription}", "s", "{resourceGroup}", "rg", "{collection}", "c", "{job}", "j", "{calendar}", "h").Replace(path)
		if got := RouteOf(httptest.NewRequest(m[1], concrete, nil)); got != path {
			t.Errorf("docs/api.md lists %s %s, which the API routes to %q", m[1], m[2], got)
		}
		documented[path] = true
	}
	for _, path := range []string{
		routeAllCollections, "/subscriptions/{subscription}/providers/Microsoft.Scheduler/jobCollections",
		routePrefix, routePrefix + "/{collection}", routePrefix + "/{collection}/enable", routePrefix + "/{collection}/disable",
		routePrefix + "/{collection}/jobs", routePrefix + "/{collection}/jobs/{job}",
		routePrefix + "/{collection}/jobs/{job}/run", routePrefix + "/{collection}/jobs/{job}/backfill", routePrefix + "/{collection}/jobs/{job}/history",
		routePrefix + "/{collection}/jobs/{job}/preview",
		routePrefix + "/{collection}/calendars", routePrefix + "/{collection}/calendars/{calendar}",
		routeSubscriptionUpcoming, routeUpcoming, routeCollectionUpcoming, routeJobUpcoming,
		routeSubscriptionExecutions, routeExecutions, routeCollectionExecutions,
	} {
		if !documented[path] {
			t.Errorf("docs/api.md does not list %s", path)
		}
	}
}

// docs/api.md explains every error code the API answers with.
func TestTheAPIReferenceListsEveryErrorCode(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	codes := regexp.MustCompile(`(?m)^\s+code\w+\s+= "(\w+)"`).FindAllStringSubmatch(string(src), -1)
	if len(codes) < 10 {
		t.Fatalf("found %d error codes in errors.go", len(codes))
	}
	for _, c := range codes {
		if !strings.Contains(string(doc), "`"+c[1]+"`") {
			t.Errorf("docs/api.md does not explain the error code %s", c[1])
		}
	}
}
