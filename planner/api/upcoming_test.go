package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// plainCollection is an enabled collection with the default quota.
const plainCollection = `{"properties": {"sku": {"name": "Standard"}}}`

// upcomingJob returns a job that calls example.com on the recurrence,
// from startTime.
func upcomingJob(startTime, recurrence string) string {
	return `{"properties": {"startTime": "` + startTime + `",
		"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"},
			"errorAction": {"type": "Https", "request": {"uri": "https://errors.example.com", "method": "POST"}}},
		"recurrence": ` + recurrence + `}}`
}

// upcomingJobs creates, at the bundle's now (2016-03-30T20:00:00Z), under
// prefix (a resource group's collections):
//
//	c1/every15  every 15 minutes from 20:00
//	c1/counted  every 20 minutes from 20:10, 3 times
//	c1/off      Disabled
//	c2/ending   every 30 minutes from 20:05 until 21:10
//	c2/paris    every hour from 22:20 in Europe/Paris (20:20Z)
//	c3/hidden   in the Disabled collection c3
func upcomingJobs(t *testing.T, put func(path, body string)) {
	t.Helper()
	for _, c := range []string{"c1", "c2", "c3"} {
		put("/"+c, plainCollection)
	}
	put("/c1/jobs/every15", upcomingJob("2016-03-30T20:00:00Z", `{"frequency": "Minute", "interval": 15}`))
	put("/c1/jobs/counted", upcomingJob("2016-03-30T20:10:00Z", `{"frequency": "Minute", "interval": 20, "count": 3}`))
	put("/c1/jobs/off", strings.Replace(upcomingJob("2016-03-30T20:00:00Z", `{"frequency": "Minute", "interval": 1}`),
		`"startTime"`, `"state": "Disabled", "startTime"`, 1))
	put("/c2/jobs/ending", upcomingJob("2016-03-30T20:05:00Z", `{"frequency": "Minute", "interval": 30, "endTime": "2016-03-30T21:10:00Z"}`))
	put("/c2/jobs/paris", upcomingJob("2016-03-30T22:20:00", `{"frequency": "Hour", "interval": 1, "timeZone": "Europe/Paris"}`))
	put("/c3/jobs/hidden", upcomingJob("2016-03-30T20:00:00Z", `{"frequency": "Minute", "interval": 1}`))
}

// readUpcoming decodes an answer of GET …/upcoming.
func readUpcoming(t *testing.T, r response) UpcomingResult {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var out UpcomingResult
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// runLines writes runs as "HH:MM:SS collection/job kind" for comparison.
func runLines(runs []UpcomingRun) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.Due.UTC().Format("15:04:05") + " " + r.JobCollection + "/" + r.Job + " " + string(r.Kind)
	}
	return out
}

func TestUpcoming(t *testing.T) {
	t.Parallel()
	b := setup(t)
	upcomingJobs(t, func(path, body string) { b.mustDo(t, http.StatusCreated, "PUT", base+path, body) })
	// c3 is disabled in the store alone, its job left enabled: the
	// collection's state alone must keep it out.
	ctx := context.Background()
	c3, err := b.store.GetCollection(ctx, contracts.CollectionRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "c3"})
	if err != nil {
		t.Fatal(err)
	}
	c3.Properties.State = contracts.JobCollectionStateDisabled
	if _, err := b.store.PutCollection(ctx, c3, c3.Revision); err != nil {
		t.Fatal(err)
	}
	const rgUpcoming = "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/upcoming"
	const subUpcoming = "/subscriptions/sub1/providers/Microsoft.Scheduler/upcoming"
	get := func(path string) UpcomingResult { t.Helper(); return readUpcoming(t, b.do(t, "GET", path, "")) }

	t.Run("every run of the enabled jobs in the window, earliest first", func(t *testing.T) {
		want := []string{
			"20:00:00 c1/every15 Scheduled", "20:05:00 c2/ending Scheduled", "20:10:00 c1/counted Scheduled",
			"20:15:00 c1/every15 Scheduled", "20:20:00 c2/paris Scheduled", "20:30:00 c1/counted Scheduled",
			"20:30:00 c1/every15 Scheduled", "20:35:00 c2/ending Scheduled", "20:45:00 c1/every15 Scheduled",
			"20:50:00 c1/counted Scheduled",
		}
		for _, path := range []string{rgUpcoming + "?hours=1", subUpcoming + "?hours=1"} {
			got := get(path)
			if lines := runLines(got.Value); !slices.Equal(lines, want) {
				t.Errorf("%s:\n%s\nwant\n%s", path, strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
			if !got.From.Equal(b.now) || !got.To.Equal(b.now.Add(time.Hour)) || got.NextLink != nil {
				t.Errorf("%s: window %v to %v, nextLink %v", path, got.From, got.To, got.NextLink)
			}
		}
	})
	t.Run("one job's runs, without the rest of its collection", func(t *testing.T) {
		got := get(base + "/c1/jobs/counted/upcoming?hours=6")
		want := []string{"20:10:00 c1/counted Scheduled", "20:30:00 c1/counted Scheduled", "20:50:00 c1/counted Scheduled"}
		if lines := runLines(got.Value); !slices.Equal(lines, want) {
			t.Errorf("one job:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if got := get(base + "/c1/jobs/off/upcoming"); len(got.Value) != 0 {
			t.Errorf("a Disabled job has runs: %v", runLines(got.Value))
		}
		if got := get(base + "/c3/jobs/hidden/upcoming"); len(got.Value) != 0 {
			t.Errorf("a job of a Disabled collection has runs: %v", runLines(got.Value))
		}
		if r := b.do(t, "GET", base+"/c1/jobs/nope/upcoming", ""); r.status != http.StatusNotFound {
			t.Errorf("a job that does not exist: %d %s", r.status, r.body)
		}
	})
	t.Run("the count and the end time bound a job's runs; the default window is 6 hours", func(t *testing.T) {
		got := get(rgUpcoming)
		count := map[string]int{}
		for _, r := range got.Value {
			count[r.Job]++
		}
		// every15: 24 in 6 hours; counted: 3 of its count; ending: 20:05,
		// 20:35, 21:05 before its end; paris: 20:20 to 01:20.
		if want := map[string]int{"every15": 24, "counted": 3, "ending": 3, "paris": 6}; !maps.Equal(count, want) {
			t.Errorf("runs per job %v, want %v", count, want)
		}
		if !got.To.Equal(b.now.Add(6 * time.Hour)) {
			t.Errorf("window ends %v, want 6 hours on", got.To)
		}
	})
	t.Run("a run shows its job, its action and the local time of its time zone", func(t *testing.T) {
		got := get(base + "/c2/upcoming?hours=1")
		i := slices.IndexFunc(got.Value, func(r UpcomingRun) bool { return r.Job == "paris" })
		if i < 0 {
			t.Fatalf("no run of paris in %+v", got.Value)
		}
		want := UpcomingRun{ID: base + "/c2/jobs/paris", JobCollection: "c2", Job: "paris", Due: time.Date(2016, 3, 30, 20, 20, 0, 0, time.UTC),
			TimeZone: "Europe/Paris", LocalTime: "2016-03-30T22:20:00+02:00", ActionType: "Http", Kind: RunScheduled}
		if got.Value[i] != want {
			t.Errorf("run %+v, want %+v", got.Value[i], want)
		}
		if r := b.do(t, "GET", base+"/c2/upcoming?hours=1", ""); strings.Contains(string(r.body), `"localTime"`) != true ||
			strings.Count(string(r.body), `"timeZone"`) != 1 {
			t.Errorf("only the run of the zoned job has a time zone: %s", r.body)
		}
	})
	t.Run("the timer's follow-ups are listed and marked, and its scheduled occurrence and count are used", func(t *testing.T) {
		at := func(hhmm string) time.Time { v, _ := time.Parse(time.RFC3339, "2016-03-30T"+hhmm+":00Z"); return v }
		b.sched.mu.Lock()
		b.sched.followUps = map[string][]TimerEntry{
			"every15": {{Kind: RunRetry, Due: at("20:07")}},
			"counted": {{Kind: RunErrorAction, Due: at("20:12")}},
			"ending":  {{Kind: RunNow, Due: at("20:01")}, {Kind: RunRetry, Due: at("21:30")}},
		}
		b.sched.mu.Unlock()
		// The timer holds counted's second occurrence, one more to follow.
		b.sched.set("counted", &plannedEntry{at: at("20:30"), remaining: 1}, b.sched.tallies["counted"])
		t.Cleanup(func() {
			b.sched.mu.Lock()
			b.sched.followUps = nil
			b.sched.mu.Unlock()
			b.sched.set("counted", nil, b.sched.tallies["counted"])
		})
		got := get(base + "/c1/upcoming?hours=1")
		want := []string{
			"20:00:00 c1/every15 Scheduled", "20:07:00 c1/every15 Retry", "20:12:00 c1/counted ErrorAction",
			"20:15:00 c1/every15 Scheduled", "20:30:00 c1/counted Scheduled", "20:30:00 c1/every15 Scheduled",
			"20:45:00 c1/every15 Scheduled", "20:50:00 c1/counted Scheduled",
		}
		if lines := runLines(got.Value); !slices.Equal(lines, want) {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if i := slices.IndexFunc(got.Value, func(r UpcomingRun) bool { return r.Kind == RunErrorAction }); got.Value[i].ActionType != "Https" {
			t.Errorf("the error action runs %q, want its own type Https", got.Value[i].ActionType)
		}
		got = get(base + "/c2/upcoming?hours=1")
		if lines := runLines(got.Value); !slices.Contains(lines, "20:01:00 c2/ending RunNow") || slices.Contains(lines, "21:30:00 c2/ending Retry") {
			t.Errorf("a run now inside the window and no retry after it: %v", lines)
		}
	})
	t.Run("disabled jobs and the jobs of disabled collections are left out", func(t *testing.T) {
		for _, r := range get(rgUpcoming + "?hours=168").Value {
			if r.Job == "off" || r.JobCollection == "c3" {
				t.Fatalf("run of a disabled job or collection: %+v", r)
			}
		}
		if got := get(base + "/c3/upcoming"); len(got.Value) != 0 {
			t.Errorf("the disabled collection lists %v", runLines(got.Value))
		}
	})
	t.Run("pages follow nextLink and together make the whole list", func(t *testing.T) {
		whole := runLines(get(rgUpcoming + "?hours=6").Value)
		var paged []string
		path := rgUpcoming + "?hours=6&$top=7"
		for pages := 0; path != ""; pages++ {
			if pages > 10 {
				t.Fatal("nextLink never ends")
			}
			got := get(path)
			if len(got.Value) > 7 {
				t.Fatalf("a page of %d runs, over $top", len(got.Value))
			}
			paged = append(paged, runLines(got.Value)...)
			path = ""
			if got.NextLink != nil {
				u, err := url.Parse(*got.NextLink)
				if err != nil || u.Host != strings.TrimPrefix(b.srv.URL, "http://") {
					t.Fatalf("nextLink %s is not on the API's address", *got.NextLink)
				}
				path = u.RequestURI()
			}
		}
		if !slices.Equal(paged, whole) {
			t.Errorf("pages\n%v\nwhole\n%v", paged, whole)
		}
	})
	t.Run("the histogram counts the runs of every page per minute", func(t *testing.T) {
		got := get(rgUpcoming + "?hours=1&$top=2&$histogram=true")
		if len(got.Value) != 2 || got.NextLink == nil {
			t.Fatalf("page of %d runs, nextLink %v", len(got.Value), got.NextLink)
		}
		total := 0
		for i, m := range got.PerMinute {
			total += m.Count
			if i > 0 && !got.PerMinute[i-1].Minute.Before(m.Minute) {
				t.Errorf("minutes out of order: %+v", got.PerMinute)
			}
		}
		if total != 10 || len(got.PerMinute) != 9 || got.PerMinute[5].Count != 2 {
			t.Errorf("histogram %+v, want 10 runs in 9 minutes, 2 at 20:30", got.PerMinute)
		}
		if r := b.do(t, "GET", rgUpcoming+"?hours=1", ""); strings.Contains(string(r.body), "perMinute") {
			t.Errorf("a histogram without $histogram: %s", r.body)
		}
	})
	t.Run("bad parameters are refused naming the parameter and its rule", func(t *testing.T) {
		for query, want := range map[string]string{
			"hours=0": "hours must be an integer from 1 to 168", "hours=169": "hours must be an integer from 1 to 168",
			"hours=two": "hours must be", "$top=10001": "$top must be an integer from 1 to 10000", "$top=0": "$top must be",
			"$skip=-1": "$skip must be", "$histogram=maybe": "$histogram must be true or false",
		} {
			r := b.do(t, "GET", rgUpcoming+"?"+query, "")
			if r.status != http.StatusBadRequest || r.errorCode(t) != codeInvalidQuery || !strings.Contains(string(r.body), want) {
				t.Errorf("%s: %d %s, want 400 saying %q", query, r.status, r.body, want)
			}
		}
		if r := b.do(t, "POST", rgUpcoming, ""); r.status != http.StatusMethodNotAllowed {
			t.Errorf("POST: %d, want 405", r.status)
		}
		if r := b.do(t, "GET", base+"/nope/upcoming", ""); r.status != http.StatusNotFound {
			t.Errorf("a collection that does not exist: %d, want 404", r.status)
		}
	})
}

func TestUpcomingScopes(t *testing.T) {
	t.Parallel()
	readerC1 := fileToken{"reader-c1", "reader", []string{"/subscriptions/subA/resourceGroups/rg/jobCollections/c1"}}
	readerB := fileToken{"reader-b", "reader", []string{"/subscriptions/subB"}}
	b := setupAccess(t, Config{}, operator, readerA, readerC1, readerB)
	const rg = "/subscriptions/subA/resourceGroups/rg/providers/Microsoft.Scheduler"
	upcomingJobs(t, func(path, body string) {
		if r := b.as(t, operator, "PUT", rg+"/jobCollections"+path, body); r.status != http.StatusCreated {
			t.Fatalf("PUT %s: %d %s", path, r.status, r.body)
		}
	})
	collections := func(f fileToken, path string) []string {
		t.Helper()
		var out []string
		for _, r := range readUpcoming(t, b.as(t, f, "GET", path+"?hours=1", "")).Value {
			if !slices.Contains(out, r.JobCollection) {
				out = append(out, r.JobCollection)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		name  string
		token fileToken
		path  string
		want  []string
	}{
		{"a reader of the subscription sees every collection", readerA, "/subscriptions/subA/providers/Microsoft.Scheduler/upcoming", []string{"c1", "c2", "c3"}},
		{"a reader of one collection sees only it in the subscription", readerC1, "/subscriptions/subA/providers/Microsoft.Scheduler/upcoming", []string{"c1"}},
		{"a reader of one collection sees only it in the resource group", readerC1, rg + "/upcoming", []string{"c1"}},
		{"a reader of one collection sees it", readerC1, rg + "/jobCollections/c1/upcoming", []string{"c1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := collections(tt.token, tt.path); !slices.Equal(got, tt.want) {
				t.Errorf("collections %v, want %v", got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name  string
		token fileToken
		path  string
	}{
		{"another collection is forbidden", readerC1, rg + "/jobCollections/c2/upcoming"},
		{"another subscription is forbidden", readerB, "/subscriptions/subA/providers/Microsoft.Scheduler/upcoming"},
		{"another subscription's resource group is forbidden", readerB, rg + "/upcoming"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := b.as(t, tt.token, "GET", tt.path, ""); r.status != http.StatusForbidden || r.errorCode(t) != codeAuthorizationFailed {
				t.Errorf("%d %s, want 403", r.status, r.body)
			}
		})
	}
}
