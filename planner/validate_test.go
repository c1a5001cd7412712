package planner

import (
	"strings"
	"testing"
	"time"
)

var validateNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const httpAction = `"action": {"type": "Http", "request": {"uri": "https://example.com/hook", "method": "POST"}}`

func TestValidateJobRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		job  string
		path string // the path of the error
		says string // a fragment of its message
	}{
		{"a recurrence without a frequency", `{` + httpAction + `, "recurrence": {"interval": 2}}`,
			"recurrence.frequency", "required when recurrence is given"},
		{"an interval of zero", `{` + httpAction + `, "recurrence": {"frequency": "day", "interval": 0}}`,
			"recurrence.interval", "must be at least 1"},
		{"a minute interval above 1000", `{` + httpAction + `, "recurrence": {"frequency": "minute", "interval": 1200}}`,
			"recurrence.interval", "1200 is above the limit of 1000 for frequency Minute"},
		{"a day interval above 548", `{` + httpAction + `, "recurrence": {"frequency": "day", "interval": 549}}`,
			"recurrence.interval", "above the limit of 548"},
		{"a week interval above 78", `{` + httpAction + `, "recurrence": {"frequency": "week", "interval": 79}}`,
			"recurrence.interval", "above the limit of 78"},
		{"a month interval above 18", `{` + httpAction + `, "recurrence": {"frequency": "month", "interval": 19}}`,
			"recurrence.interval", "above the limit of 18"},
		{"a year interval above 1", `{` + httpAction + `, "recurrence": {"frequency": "year", "interval": 2}}`,
			"recurrence.interval", "above the limit of 1"},
		{"a count of zero", `{` + httpAction + `, "recurrence": {"frequency": "day", "count": 0}}`,
			"recurrence.count", "must be at least 1"},
		{"minutes out of range", `{` + httpAction + `, "recurrence": {"frequency": "day", "schedule": {"minutes": [5, 60, 75]}}}`,
			"recurrence.schedule.minutes", "60, 75 out of range; allowed: minutes 0–59"},
		{"hours out of range", `{` + httpAction + `, "recurrence": {"frequency": "day", "schedule": {"hours": 24}}}`,
			"recurrence.schedule.hours", "24 out of range; allowed: hours 0–23"},
		{"empty hours", `{` + httpAction + `, "recurrence": {"frequency": "day", "schedule": {"hours": []}}}`,
			"recurrence.schedule.hours", "must not be empty"},
		{"empty weekDays", `{` + httpAction + `, "recurrence": {"frequency": "week", "schedule": {"weekDays": []}}}`,
			"recurrence.schedule.weekDays", "must not be empty"},
		{"weekDays with a daily frequency", `{` + httpAction + `, "recurrence": {"frequency": "day", "schedule": {"weekDays": ["monday"]}}}`,
			"recurrence.schedule.weekDays", "only allowed with frequency Week (this recurrence has frequency Day)"},
		{"monthDays with a weekly frequency", `{` + httpAction + `, "recurrence": {"frequency": "week", "schedule": {"monthDays": [1]}}}`,
			"recurrence.schedule.monthDays", "only allowed with frequency Month"},
		{"monthlyOccurrences with a yearly frequency", `{` + httpAction + `, "recurrence": {"frequency": "year", "schedule": {"monthlyOccurrences": [{"day": "friday", "occurrence": 1}]}}}`,
			"recurrence.schedule.monthlyOccurrences", "only allowed with frequency Month"},
		{"a month day of zero", `{` + httpAction + `, "recurrence": {"frequency": "month", "schedule": {"monthDays": [0, -32]}}}`,
			"recurrence.schedule.monthDays", "-32, 0 out of range"},
		{"a sixth Friday", `{` + httpAction + `, "recurrence": {"frequency": "month", "schedule": {"monthlyOccurrences": [{"day": "friday", "occurrence": 6}]}}}`,
			"recurrence.schedule.monthlyOccurrences[0].occurrence", "6 is out of range; allowed: 1–5"},
		{"an endTime in the past", `{` + httpAction + `, "recurrence": {"frequency": "day", "endTime": "2025-12-31T23:59:59Z"}}`,
			"recurrence.endTime", "2025-12-31T23:59:59Z is in the past"},
		{"an endTime before the first occurrence", `{` + httpAction + `, "startTime": "2026-02-01T00:00Z", "recurrence": {"frequency": "day", "endTime": "2026-01-15"}}`,
			"recurrence", "schedule never fires: its first occurrence would be 2026-02-01T00:00:00Z, after endTime 2026-01-15T00:00:00Z"},
		{"the 30th every 12 months from February", `{` + httpAction + `, "startTime": "2026-02-01T00:00Z", "recurrence": {"frequency": "month", "interval": 12, "schedule": {"monthDays": [30]}}}`,
			"recurrence", "schedule never fires"},
		{"the 31st every 12 months from February", `{` + httpAction + `, "startTime": "2027-02-01T00:00Z", "recurrence": {"frequency": "month", "interval": 12, "schedule": {"monthDays": [31]}}}`,
			"recurrence", "schedule never fires"},
		{"every 30 minutes from minute 3, filtered to minute 0", `{` + httpAction + `, "startTime": "2026-02-01T00:03Z", "recurrence": {"frequency": "minute", "interval": 30, "schedule": {"minutes": [0]}}}`,
			"recurrence", "schedule never fires"},
		{"an unknown time zone", `{` + httpAction + `, "recurrence": {"frequency": "day", "timeZone": "Mars/Base"}}`,
			"recurrence.timeZone", `unknown time zone "Mars/Base"`},
		{"a state of Completed", `{` + httpAction + `, "state": "completed"}`,
			"state", "Completed cannot be set; a job's state can be set to Enabled or Disabled"},
		{"a missing action", `{"recurrence": {"frequency": "day"}}`,
			"action", "required"},
		{"a schedule whose first run falls after the year 9999", `{` + httpAction + `, "startTime": "9999-12-31T23:59:00Z", "recurrence": {"frequency": "week", "schedule": {"weekDays": ["monday"]}}}`,
			"startTime", "the job would first run at 10000-01-03T23:59:00Z, after 9999-12-31T23:59:59Z, the last date-time the API can represent"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is rejected", func(t *testing.T) {
			t.Parallel()
			_, errs := ParseJob([]byte(tt.job), validateNow)
			for _, e := range errs {
				if e.Path == tt.path && strings.Contains(e.Message, tt.says) {
					return
				}
			}
			t.Fatalf("want %s: …%s…; got %v", tt.path, tt.says, errs)
		})
	}
}

func TestValidateJobReportsEveryViolationTogether(t *testing.T) {
	t.Parallel()
	job := `{"properties": {
		"action": {"type": "Http", "request": {"uri": "ftp://example.com", "method": "POST"}},
		"recurrence": {"frequency": "day", "interval": 600, "count": -1, "schedule": {"hours": [25], "weekDays": ["monday"]}}}}`
	_, errs := ParseJob([]byte(job), validateNow)
	want := []string{
		"properties.action.request.uri",
		"properties.recurrence.interval",
		"properties.recurrence.count",
		"properties.recurrence.schedule.hours",
		"properties.recurrence.schedule.weekDays",
	}
	for _, path := range want {
		if !errs.Has(path) {
			t.Errorf("no error at %s; got:\n%v", path, errs)
		}
	}
	if errs.Has("properties.recurrence") {
		t.Errorf("a recurrence with field errors must not also be called one that never fires: %v", errs)
	}
}

func TestValidateJobAccepts(t *testing.T) {
	t.Parallel()
	for name, job := range map[string]string{
		"a one-time job":                           `{` + httpAction + `}`,
		"an endTime exactly now":                   `{` + httpAction + `, "recurrence": {"frequency": "hour", "endTime": "2026-01-01T00:00:00Z"}}`,
		"frequency and enum values in any case":    `{` + httpAction + `, "recurrence": {"frequency": "WEEK", "schedule": {"weekDays": "Friday"}}, "state": "DISABLED"}`,
		"monthDays [31] every month from February": `{` + httpAction + `, "startTime": "2026-02-01", "recurrence": {"frequency": "month", "schedule": {"monthDays": [31]}}}`,
		"the ARM envelope":                         `{"properties": {` + httpAction + `, "recurrence": {"frequency": "minute", "interval": 15, "count": 10}}}`,
	} {
		t.Run(name+" is accepted", func(t *testing.T) {
			t.Parallel()
			if _, errs := ParseJob([]byte(job), validateNow); len(errs) > 0 {
				t.Fatalf("rejected: %v", errs)
			}
		})
	}
}
