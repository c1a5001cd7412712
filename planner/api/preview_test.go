package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
)

func TestPreview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/weekly", weeklyJob)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/thrice", `{"properties": {"startTime": "2016-04-01T00:00:00Z",
		"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "Hour", "interval": 6, "count": 3}}}`)
	read := func(path string) PreviewResult {
		t.Helper()
		var p PreviewResult
		if err := json.Unmarshal(b.mustDo(t, http.StatusOK, "GET", path, "").body, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }

	t.Run("the next instants of a stored job, from its next execution", func(t *testing.T) {
		p := read(base + "/jc/jobs/weekly/preview?count=3")
		want := []time.Time{at("2016-04-04T05:00:00Z"), at("2016-04-04T05:10:00Z"), at("2016-04-04T05:20:00Z")}
		if p.State != "Enabled" || len(p.Value) != 3 || !p.Value[0].Equal(want[0]) || !p.Value[1].Equal(want[1]) || !p.Value[2].Equal(want[2]) {
			t.Errorf("preview %+v, want %v", p, want)
		}
	})
	t.Run("the count of the job bounds the preview", func(t *testing.T) {
		if p := read(base + "/jc/jobs/thrice/preview?count=10"); len(p.Value) != 3 || !p.Value[2].Equal(at("2016-04-01T12:00:00Z")) {
			t.Errorf("preview %+v, want the 3 runs 6 hours apart", p)
		}
	})
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/counted", `{"properties": {"startTime": "2016-04-01T00:00:00Z",
		"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "Hour", "interval": 6, "count": 3}}}`)
	values := func(p PreviewResult) []string {
		out := make([]string, len(p.Value))
		for i, v := range p.Value {
			out[i] = v.UTC().Format(time.RFC3339)
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		planned *plannedEntry
		tally   contracts.Tally
		want    []string
	}{
		{"the timer's count left bounds the preview, not the tally, while an occurrence is in flight",
			&plannedEntry{at: at("2016-04-01T12:00:00Z"), remaining: 0},
			contracts.Tally{Occurrence: 1, OccurrenceTime: at("2016-04-01T00:00:00Z")},
			[]string{"2016-04-01T12:00:00Z"}},
		{"a job the timer does not hold goes on after the occurrence its tally reached", nil,
			contracts.Tally{Occurrence: 1, OccurrenceTime: at("2016-04-01T00:00:00Z")},
			[]string{"2016-04-01T06:00:00Z", "2016-04-01T12:00:00Z"}},
		{"a schedule started again counts its occurrences from the first", nil,
			contracts.Tally{Occurrence: 2, OccurrenceTime: at("2016-03-01T00:00:00Z")}, // before the job was created
			[]string{"2016-04-01T00:00:00Z", "2016-04-01T06:00:00Z", "2016-04-01T12:00:00Z"}},
		{"a job whose count is used up has no instants", nil,
			contracts.Tally{Occurrence: 3, OccurrenceTime: at("2016-04-01T12:00:00Z")},
			[]string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b.sched.set("counted", tt.planned, tt.tally)
			defer b.sched.set("counted", nil, contracts.Tally{})
			if got := values(read(base + "/jc/jobs/counted/preview?count=10")); !slices.Equal(got, tt.want) {
				t.Errorf("preview %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("a disabled job has no instants", func(t *testing.T) {
		b.mustDo(t, http.StatusOK, "PATCH", base+"/jc/jobs/thrice", `{"properties": {"state": "Disabled"}}`)
		if p := read(base + "/jc/jobs/thrice/preview"); p.State != "Disabled" || len(p.Value) != 0 {
			t.Errorf("preview %+v", p)
		}
	})
	t.Run("a count out of range is refused, naming the parameter", func(t *testing.T) {
		for _, c := range []string{"0", "1001", "x"} {
			r := b.do(t, "GET", base+"/jc/jobs/weekly/preview?count="+c, "")
			msg, _ := r.json(t)["error"].(map[string]any)["message"].(string)
			if r.status != http.StatusBadRequest || r.errorCode(t) != "InvalidQueryParameterValue" || !strings.HasPrefix(msg, "count must be") {
				t.Errorf("count=%s: %d %s", c, r.status, r.body)
			}
		}
	})
	t.Run("a missing job is 404", func(t *testing.T) {
		if r := b.do(t, "GET", base+"/jc/jobs/nope/preview", ""); r.status != http.StatusNotFound {
			t.Errorf("%d %s", r.status, r.body)
		}
	})
}

// Regression: a job whose next run fell after the year 9999 was stored,
// and its preview answered 200 with an empty body: the API's date-times
// cannot represent such an instant.
func TestRunsAfterTheYear9999(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", `{"properties": {"sku": {"name": "P20Premium"}}}`)
	job := func(start, frequency string) string {
		return `{"properties": {"startTime": "` + start + `", "action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
			"recurrence": {"frequency": "` + frequency + `", "schedule": {"weekDays": ["Monday"]}}}}`
	}

	t.Run("a job whose every run falls after 9999-12-31 is refused naming startTime", func(t *testing.T) {
		r := b.mustDo(t, http.StatusBadRequest, "PUT", base+"/jc/jobs/late", job("9999-12-31T23:59:00Z", "Week"))
		if !strings.Contains(string(r.body), "properties.startTime: the job would first run at 10000-01-03T23:59:00Z, after 9999-12-31T23:59:59Z") {
			t.Errorf("body: %s", r.body)
		}
		b.mustDo(t, http.StatusNotFound, "GET", base+"/jc/jobs/late", "")
	})
	t.Run("a job whose later runs fall after it previews the runs up to it", func(t *testing.T) {
		hourly := `{"properties": {"startTime": "9999-12-31T00:00:00Z", "action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
			"recurrence": {"frequency": "Hour"}}}`
		r := b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/last-day", hourly)
		if !strings.Contains(string(r.body), `"nextExecutionTime":"9999-12-31T00:00:00Z"`) {
			t.Errorf("created: %s", r.body)
		}
		var p PreviewResult
		if err := json.Unmarshal(b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/last-day/preview?count=100", "").body, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Value) != 24 || p.Value[23].UTC().Format(time.RFC3339) != "9999-12-31T23:00:00Z" {
			t.Errorf("preview: %d instants, %v", len(p.Value), p.Value)
		}
	})
	t.Run("a stored job that runs after it answers why, never an empty 200", func(t *testing.T) {
		props, errs := planner.ParseJob([]byte(job("9999-12-31T23:59:00Z", "Week")), b.now)
		if len(errs) != 1 { // only the rule this test is about
			t.Fatalf("errors: %v", errs)
		}
		props.State = contracts.JobStateEnabled
		ref := contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc", Job: "stored-late"}
		if _, err := b.store.CreateJob(context.Background(), store.Job{Ref: ref, Properties: props, Created: b.now}, 0); err != nil {
			t.Fatal(err)
		}
		r := b.mustDo(t, http.StatusConflict, "GET", base+"/jc/jobs/stored-late/preview", "")
		if !strings.Contains(string(r.body), "runs next at 10000-01-03T23:59:00Z, after 9999-12-31T23:59:59Z") {
			t.Errorf("preview: %s", r.body)
		}
		r = b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/stored-late", "")
		if !strings.Contains(string(r.body), `"name":"jc/stored-late"`) || strings.Contains(string(r.body), "nextExecutionTime") {
			t.Errorf("GET: %s", r.body)
		}
	})
}

// thriceJob runs every hours hours from 2016-04-01T00:00:00Z, 3 times.
func thriceJob(hours string) string {
	return `{"properties": {"startTime": "2016-04-01T00:00:00Z",
		"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "Hour", "interval": ` + hours + `, "count": 3}}}`
}

func TestDraftPreview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", plainCollection)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/free", `{"properties": {"sku": {"name": "Free"}}}`)
	instants := func(t *testing.T, r response) []string {
		t.Helper()
		var p PreviewResult
		if err := json.Unmarshal(r.body, &p); err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(p.Value))
		for i, v := range p.Value {
			out[i] = v.UTC().Format(time.RFC3339)
		}
		return out
	}

	t.Run("a new job's next instants, and nothing is stored", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "POST", base+"/jc/jobs/draft/preview?count=2", thriceJob("6"))
		if got, want := instants(t, r), []string{"2016-04-01T00:00:00Z", "2016-04-01T06:00:00Z"}; !slices.Equal(got, want) {
			t.Errorf("preview %q, want %q", got, want)
		}
		if r.json(t)["state"] != "Enabled" {
			t.Errorf("state: %s", r.body)
		}
		b.mustDo(t, http.StatusNotFound, "GET", base+"/jc/jobs/draft", "")
		if v := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs", "").json(t)["value"].([]any); len(v) != 0 {
			t.Errorf("the collection lists %d jobs after a draft preview", len(v))
		}
	})
	t.Run("the job's count bounds it, as for a stored job", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "POST", base+"/jc/jobs/draft/preview?count=10", thriceJob("6"))
		if got := instants(t, r); len(got) != 3 {
			t.Errorf("preview %q, want the 3 runs", got)
		}
	})
	t.Run("an invalid definition is 400 with each field in details' target", func(t *testing.T) {
		r := b.mustDo(t, http.StatusBadRequest, "POST", base+"/jc/jobs/draft/preview",
			`{"properties": {"action": {"type": "Http", "request": {"uri": "not a uri"}}, "recurrence": {"frequency": "Minute", "interval": 5000}}}`)
		if code := r.errorCode(t); code != codeBadRequest {
			t.Errorf("code %q", code)
		}
		var targets []string
		for _, d := range r.json(t)["error"].(map[string]any)["details"].([]any) {
			targets = append(targets, d.(map[string]any)["target"].(string))
		}
		for _, want := range []string{"properties.action.request.uri", "properties.action.request.method", "properties.recurrence.interval"} {
			if !slices.Contains(targets, want) {
				t.Errorf("no detail targets %s: %q", want, targets)
			}
		}
		b.mustDo(t, http.StatusNotFound, "GET", base+"/jc/jobs/draft", "")
	})
	t.Run("the collection must exist and its quota applies", func(t *testing.T) {
		b.mustDo(t, http.StatusNotFound, "POST", base+"/missing/jobs/draft/preview", thriceJob("6"))
		every30min := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
			"recurrence": {"frequency": "Minute", "interval": 30}}}`
		if code := b.mustDo(t, http.StatusConflict, "POST", base+"/free/jobs/often/preview", every30min).errorCode(t); code != codeQuotaExceeded {
			t.Errorf("code %q", code)
		}
	})
	t.Run("count has the bounds of GET preview", func(t *testing.T) {
		for _, q := range []string{"0", "1001", "x"} {
			r := b.mustDo(t, http.StatusBadRequest, "POST", base+"/jc/jobs/draft/preview?count="+q, thriceJob("6"))
			if r.errorCode(t) != codeInvalidQuery || !strings.Contains(string(r.body), "count") {
				t.Errorf("count=%s: %s", q, r.body)
			}
		}
	})
	t.Run("a stored job's schedule kept goes on from the timer's occurrence; a new one starts afresh", func(t *testing.T) {
		b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/stored", thriceJob("6"))
		b.sched.set("stored", &plannedEntry{at: time.Date(2016, 4, 1, 6, 0, 0, 0, time.UTC), remaining: 1}, contracts.Tally{})
		same := instants(t, b.mustDo(t, http.StatusOK, "POST", base+"/jc/jobs/stored/preview", thriceJob("6")))
		if want := []string{"2016-04-01T06:00:00Z", "2016-04-01T12:00:00Z"}; !slices.Equal(same, want) {
			t.Errorf("same schedule: %q, want %q", same, want)
		}
		changed := instants(t, b.mustDo(t, http.StatusOK, "POST", base+"/jc/jobs/stored/preview", thriceJob("12")))
		if want := []string{"2016-04-01T00:00:00Z", "2016-04-01T12:00:00Z", "2016-04-02T00:00:00Z"}; !slices.Equal(changed, want) {
			t.Errorf("new schedule: %q, want %q", changed, want)
		}
		if s := string(b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/stored", "").body); !strings.Contains(s, `"interval":6`) {
			t.Errorf("the stored job changed: %s", s)
		}
	})
	t.Run("other methods are 405", func(t *testing.T) {
		b.mustDo(t, http.StatusMethodNotAllowed, "PUT", base+"/jc/jobs/stored/preview", thriceJob("6"))
	})
}

func TestDraftPreviewNeedsTheWriterRole(t *testing.T) {
	t.Parallel()
	b := setupAccess(t, Config{}, operator, readerA, writerA)
	coll := collections("subA", "rg") + "/c1"
	b.mustAs(t, operator, http.StatusCreated, "PUT", coll, `{"properties": {}}`)
	if code := b.mustAs(t, readerA, http.StatusForbidden, "POST", coll+"/jobs/j/preview", dailyJob).errorCode(t); code != codeAuthorizationFailed {
		t.Fatalf("code %q", code)
	}
	b.mustAs(t, writerA, http.StatusOK, "POST", coll+"/jobs/j/preview", dailyJob)
	b.mustAs(t, operator, http.StatusNotFound, "GET", coll+"/jobs/j", "")
}
