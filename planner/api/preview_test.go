package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
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
