package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// listedJob is a daily job of the action type (Http or Https) from
// startTime, in state ("" for the default).
func listedJob(actionType, state, startTime string) string {
	st := ""
	if state != "" {
		st = `"state": "` + state + `", `
	}
	return `{"properties": {` + st + `"startTime": "` + startTime + `",
		"action": {"type": "` + actionType + `", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "Day"}}}`
}

// setupJobList creates, at the bundle's now (2016-03-30T20:00:00Z), in
// collection jc:
//
//	alpha           Http   Enabled    next 2016-04-01, last ran 2016-03-29
//	Beta-report     Https  Disabled
//	delta           Http   Enabled    next 2016-03-31, last ran 2016-03-30 10:00
//	epsilon-REPORT  Https  Enabled    next 2016-04-02
//	zeta            Http   Completed                   last ran 2016-03-28
func setupJobList(t *testing.T) *bundle {
	t.Helper()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", plainCollection)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/alpha", listedJob("Http", "", "2016-04-01T00:00:00Z"))
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/Beta-report", listedJob("Https", "Disabled", "2016-04-01T00:00:00Z"))
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/delta", listedJob("Http", "", "2016-03-31T00:00:00Z"))
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/epsilon-REPORT", listedJob("Https", "Enabled", "2016-04-02T00:00:00Z"))
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/zeta", listedJob("Http", "", "2016-04-01T00:00:00Z"))
	ctx := context.Background()
	ref := contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc", Job: "zeta"}
	j, err := b.store.GetJob(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	j.Properties.State = contracts.JobStateCompleted
	if _, err := b.store.UpdateJob(ctx, j, j.Revision); err != nil {
		t.Fatal(err)
	}
	for job, last := range map[string]time.Time{
		"alpha": time.Date(2016, 3, 29, 0, 0, 0, 0, time.UTC),
		"delta": time.Date(2016, 3, 30, 10, 0, 0, 0, time.UTC),
		"zeta":  time.Date(2016, 3, 28, 0, 0, 0, 0, time.UTC),
	} {
		b.sched.set(job, nil, contracts.Tally{Executions: 1, LastExecution: last})
	}
	return b
}

// listNames returns the job names of a page of GET …/jobs, and its count
// and nextLink when it has them.
func listNames(t *testing.T, r response) (names []string, count *int, nextLink string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var out contracts.JobListResult
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	for _, j := range out.Value {
		names = append(names, strings.TrimPrefix(j.Name, "jc/"))
	}
	if out.NextLink != nil {
		nextLink = *out.NextLink
	}
	return names, out.Count, nextLink
}

func TestListJobsFiltersSearchesAndOrders(t *testing.T) {
	t.Parallel()
	b := setupJobList(t)
	list := func(t *testing.T, query string) []string {
		t.Helper()
		names, _, _ := listNames(t, b.do(t, "GET", base+"/jc/jobs?"+query, ""))
		return names
	}
	for _, tt := range []struct {
		name, query string
		want        []string
	}{
		{"without a query the jobs come by name", "", []string{"alpha", "Beta-report", "delta", "epsilon-REPORT", "zeta"}},
		{"a filter on the state keeps that state", "$filter=state eq Enabled", []string{"alpha", "delta", "epsilon-REPORT"}},
		{"a filter on the action type keeps that type", "$filter=actionType eq 'Https'", []string{"Beta-report", "epsilon-REPORT"}},
		{"both filters joined by and keep what both keep", "$filter=state eq enabled and actiontype eq \"https\"", []string{"epsilon-REPORT"}},
		{"the filters may come in any order and case", "$filter=ActionType EQ Http AND State eq Enabled", []string{"alpha", "delta"}},
		{"a search keeps the names holding the text in any case", "$search=REPORT", []string{"Beta-report", "epsilon-REPORT"}},
		{"a search and a filter both apply", "$search=report&$filter=state eq Disabled", []string{"Beta-report"}},
		{"a quoted search is read without its quotes", `$search="eta"`, []string{"Beta-report", "zeta"}},
		{"name desc reverses the names", "$orderby=name desc", []string{"zeta", "epsilon-REPORT", "delta", "Beta-report", "alpha"}},
		{"by state, ties broken by name", "$orderby=state", []string{"zeta", "Beta-report", "alpha", "delta", "epsilon-REPORT"}},
		{"by state desc, ties still by name", "$orderby=STATE DESC", []string{"alpha", "delta", "epsilon-REPORT", "Beta-report", "zeta"}},
		{"by action type, ties broken by name", "$orderby=actionType asc", []string{"alpha", "delta", "zeta", "Beta-report", "epsilon-REPORT"}},
		{"by next execution, jobs without one last", "$orderby=nextExecutionTime", []string{"delta", "alpha", "epsilon-REPORT", "Beta-report", "zeta"}},
		{"by next execution desc, the reverse, jobs without one still last", "$orderby=nextExecutionTime desc", []string{"epsilon-REPORT", "alpha", "delta", "Beta-report", "zeta"}},
		{"by last execution, from the timer's tallies", "$orderby=lastExecutionTime", []string{"zeta", "alpha", "delta", "Beta-report", "epsilon-REPORT"}},
		{"a time order pages after sorting", "$orderby=lastExecutionTime desc&$top=2&$skip=1", []string{"alpha", "zeta"}},
		{"the filter applies before the order and the page", "$filter=actionType eq Http&$orderby=nextExecutionTime&$top=2", []string{"delta", "alpha"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := list(t, url.PathEscape(tt.query)); !slices.Equal(got, tt.want) {
				t.Errorf("GET …/jobs?%s: %q, want %q", tt.query, got, tt.want)
			}
		})
	}
}

func TestListJobsAsksTheTimerOnceForAllTheJobs(t *testing.T) {
	t.Parallel()
	b := setupJobList(t)
	b.sched.takeRuntimesCalls()

	t.Run("by name, only the page's jobs", func(t *testing.T) {
		b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$top=2&$skip=1", "")
		if calls := b.sched.takeRuntimesCalls(); len(calls) != 1 || !slices.Equal(calls[0], []string{"Beta-report", "delta"}) {
			t.Errorf("Runtimes calls %q, want one for the page's two jobs", calls)
		}
	})
	t.Run("by a time, every job kept in one call, then the page's", func(t *testing.T) {
		b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$top=1&$orderby=nextExecutionTime&"+url.PathEscape("$filter=actionType eq Http"), "")
		if calls := b.sched.takeRuntimesCalls(); len(calls) != 2 || !slices.Equal(calls[0], []string{"alpha", "delta", "zeta"}) || len(calls[1]) != 1 {
			t.Errorf("Runtimes calls %q, want one for the three Http jobs, then one for the page's job", calls)
		}
	})
}

func TestListJobsCounts(t *testing.T) {
	t.Parallel()
	b := setupJobList(t)

	t.Run("the count is of every job kept, and nextLink keeps every parameter", func(t *testing.T) {
		names, count, next := listNames(t, b.do(t, "GET", base+"/jc/jobs?$count=true&$search=report&$orderby=name%20desc&$top=1", ""))
		if !slices.Equal(names, []string{"epsilon-REPORT"}) || count == nil || *count != 2 {
			t.Fatalf("page %q, count %v", names, count)
		}
		u, err := url.Parse(next)
		if err != nil {
			t.Fatalf("nextLink %q: %v", next, err)
		}
		q := u.Query()
		if q.Get("$skip") != "1" || q.Get("$top") != "1" || q.Get("$count") != "true" || q.Get("$search") != "report" || q.Get("$orderby") != "name desc" {
			t.Fatalf("nextLink %q loses a parameter", next)
		}
		names, count, next = listNames(t, b.do(t, "GET", u.RequestURI(), ""))
		if !slices.Equal(names, []string{"Beta-report"}) || count == nil || *count != 2 || next != "" {
			t.Fatalf("second page %q, count %v, nextLink %q", names, count, next)
		}
	})
	t.Run("a count of none is 0", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$count=TRUE&$search=nothing", "")
		if !strings.Contains(string(r.body), `"count":0`) {
			t.Fatalf("body %s", r.body)
		}
	})
	t.Run("without $count there is no count", func(t *testing.T) {
		for _, q := range []string{"", "?$count=false"} {
			if r := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs"+q, ""); strings.Contains(string(r.body), `"count"`) {
				t.Fatalf("GET …/jobs%s: %s", q, r.body)
			}
		}
	})
}

func TestListJobsRefusesBadQueriesNamingTheParameter(t *testing.T) {
	t.Parallel()
	b := setupJobList(t)
	b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$search="+url.QueryEscape(strings.Repeat("é", maxSearchLength)), "")
	for _, tt := range []struct {
		query, code string
		says        []string
	}{
		{"$filter=state eq Enabled or actionType eq Http", codeInvalidFilter, []string{"$filter", "both joined by and"}},
		{"$filter=actionType eq Ftp", codeInvalidFilter, []string{"actionType", `"Ftp"`, "Http, Https, StorageQueue"}},
		{"$filter=state eq Enabled and state eq Disabled", codeInvalidFilter, []string{"names state twice"}},
		{"$filter=name eq alpha", codeInvalidFilter, []string{`"name"`, "state or actionType"}},
		{"$filter=state ne Enabled", codeInvalidFilter, []string{`"ne"`, "use eq"}},
		{"$search=" + strings.Repeat("x", maxSearchLength+1), codeInvalidQuery, []string{"$search", "at most 200 characters"}},
		{"$orderby=created", codeInvalidQuery, []string{"$orderby", "name, state, actionType, nextExecutionTime or lastExecutionTime"}},
		{"$orderby=name sideways", codeInvalidQuery, []string{"$orderby", "asc or desc"}},
		{"$orderby=name asc extra", codeInvalidQuery, []string{"$orderby"}},
		{"$count=maybe", codeInvalidQuery, []string{"$count", "true or false"}},
		{"$top=0", codeInvalidQuery, []string{"$top"}},
	} {
		t.Run(tt.query[:min(len(tt.query), 40)], func(t *testing.T) {
			r := b.mustDo(t, http.StatusBadRequest, "GET", base+"/jc/jobs?"+url.PathEscape(tt.query), "")
			if code := r.errorCode(t); code != tt.code {
				t.Errorf("code %q, want %q", code, tt.code)
			}
			msg, _ := r.json(t)["error"].(map[string]any)["message"].(string)
			for _, s := range tt.says {
				if !strings.Contains(msg, s) {
					t.Errorf("the error does not say %q: %s", s, msg)
				}
			}
		})
	}
}
