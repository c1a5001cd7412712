package planner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
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

func TestValidatePoliciesRejects(t *testing.T) {
	t.Parallel()
	xmas := mustCalendar(t, "xmas", contracts.CalendarProperties{Yearly: []contracts.YearlyDate{{Name: "Christmas Day", Month: 12, Day: intp(25)}}})
	daily := func(members string) string {
		return `{` + httpAction + `, "startTime": "2026-02-01T09:00Z", "recurrence": {"frequency": "day"` + members + `}}`
	}
	rec := func(members string) string {
		return `{` + httpAction + `, "startTime": "2026-02-01T09:00Z", "recurrence": {` + members + `}}`
	}
	once := func(members string) string { return `{` + httpAction + members + `}` }
	var eleven []string
	for i := range 11 {
		eleven = append(eleven, fmt.Sprintf(`"cal%d"`, i))
	}
	tests := []struct {
		name string
		job  string
		path string
		says string
	}{
		{"a window of zero", daily(`, "flexibleWindow": "PT0S"`), "recurrence.flexibleWindow", "must be longer than zero"},
		{"a negative window", daily(`, "flexibleWindow": "-PT5M"`), "recurrence.flexibleWindow", "must be longer than zero"},
		{"a window with a fraction of a second", daily(`, "flexibleWindow": "PT1.5S"`), "recurrence.flexibleWindow", "whole number of seconds"},
		{"a window that is not a duration", daily(`, "flexibleWindow": "soon"`), "recurrence.flexibleWindow", "is not a duration"},
		{"a window longer than a day", daily(`, "flexibleWindow": "P1DT1S"`), "recurrence.flexibleWindow", "longer than the recurrence's period of 1 day (every 1 day)"},
		{"a window longer than 3 hours", rec(`"frequency": "hour", "interval": 3, "flexibleWindow": "PT3H1M"`), "recurrence.flexibleWindow", "period of 3 hours"},
		{"a window longer than the shortest month", rec(`"frequency": "month", "flexibleWindow": "P29D"`), "recurrence.flexibleWindow", "period of 28 days"},
		{"a window longer than the shortest year", rec(`"frequency": "year", "flexibleWindow": "P366D"`), "recurrence.flexibleWindow", "period of 365 days"},
		{"onExcludedDay without calendars", daily(`, "onExcludedDay": "skip"`), "recurrence.onExcludedDay", "only with excludedCalendars"},
		{"a move with frequency minute", rec(`"frequency": "minute", "interval": 30, "excludedCalendars": ["h"], "onExcludedDay": "nextBusinessDay"`),
			"recurrence.onExcludedDay", "NextBusinessDay moves an occurrence to another day, which needs frequency Day, Week, Month or Year (this recurrence has frequency Minute)"},
		{"a move with frequency hour", rec(`"frequency": "hour", "excludedCalendars": ["h"], "onExcludedDay": "previousBusinessDay"`),
			"recurrence.onExcludedDay", "needs frequency Day, Week, Month or Year"},
		{"an unknown onExcludedDay", daily(`, "excludedCalendars": ["h"], "onExcludedDay": "tomorrow"`), "recurrence.onExcludedDay", "Skip"},
		{"a calendar name with a space", daily(`, "excludedCalendars": ["my holidays"]`), "recurrence.excludedCalendars[0]", "calendar name \"my holidays\" is not valid"},
		{"eleven calendars", daily(`, "excludedCalendars": [` + strings.Join(eleven, ", ") + `]`), "recurrence.excludedCalendars", "names 11 calendars; at most 10"},
		{"catchUp on a job that runs once", once(`, "catchUp": "All"`), "catchUp", "only for a job with a recurrence"},
		{"catchUpWindow on a job that runs once", once(`, "catchUpWindow": "PT1H"`), "catchUpWindow", "only for a job with a recurrence"},
		{"overlap on a job that runs once", once(`, "overlap": "Skip"`), "overlap", "only for a job with a recurrence"},
		{"pauseAfterFaults on a job that runs once", once(`, "pauseAfterFaults": 3`), "pauseAfterFaults", "only for a job with a recurrence"},
		{"an unknown catchUp", daily(`}, "catchUp": "sometimes", "x": {`), "catchUp", "Earliest"},
		{"catchUpWindow without catchUp All", daily(`}, "catchUp": "Latest", "catchUpWindow": "PT1H", "x": {`), "catchUpWindow", "only with catchUp All (it bounds how far back that policy reaches); this job's catchUp is Latest"},
		{"catchUpWindow without catchUp", daily(`}, "catchUpWindow": "PT1H", "x": {`), "catchUpWindow", "this job's catchUp is Earliest"},
		{"a catchUpWindow under a second", daily(`}, "catchUp": "all", "catchUpWindow": "PT0.5S", "x": {`), "catchUpWindow", "shorter than the minimum of 1 second"},
		{"a catchUpWindow over 366 days", daily(`}, "catchUp": "all", "catchUpWindow": "P367D", "x": {`), "catchUpWindow", "longer than the maximum of 366 days"},
		{"pauseAfterFaults 0", daily(`}, "pauseAfterFaults": 0, "x": {`), "pauseAfterFaults", "must be between 1 and 1000 consecutive faulted occurrences, not 0"},
		{"pauseAfterFaults 1001", daily(`}, "pauseAfterFaults": 1001, "x": {`), "pauseAfterFaults", "not 1001"},
		{"business days with frequency week", rec(`"frequency": "week", "schedule": {"monthlyBusinessDays": [1]}`), "recurrence.schedule.monthlyBusinessDays", "only allowed with frequency Month"},
		{"business days out of range", rec(`"frequency": "month", "schedule": {"monthlyBusinessDays": [1, 24, 0, -24]}`), "recurrence.schedule.monthlyBusinessDays", "out of range; allowed: business days 1–23, or -23…-1"},
		{"empty business days", rec(`"frequency": "month", "schedule": {"monthlyBusinessDays": []}`), "recurrence.schedule.monthlyBusinessDays", "must not be empty"},
		{"business days and month days", rec(`"frequency": "month", "schedule": {"monthlyBusinessDays": [1], "monthDays": [1]}`), "recurrence.schedule.monthlyBusinessDays", "cannot be combined with monthDays"},
		{"business days and occurrences", rec(`"frequency": "month", "schedule": {"monthlyBusinessDays": [1], "monthlyOccurrences": [{"day": "monday"}]}`), "recurrence.schedule.monthlyBusinessDays", "cannot be combined with monthlyOccurrences"},
		{"a yearly run on a held date", `{` + httpAction + `, "startTime": "2026-12-25T09:00Z", "recurrence": {"frequency": "year", "excludedCalendars": ["xmas"]}}`,
			"recurrence", `schedule never fires: the excluded calendar "xmas" holds the date of every occurrence`},
		{"a yearly run on a held date that cannot move past the end", `{` + httpAction + `, "startTime": "2026-12-25T09:00Z", "recurrence": {"frequency": "year", "endTime": "2026-12-26T00:00Z", "excludedCalendars": ["xmas"], "onExcludedDay": "nextBusinessDay"}}`,
			"recurrence", "and none can move to a business day between its start and its end"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is rejected", func(t *testing.T) {
			t.Parallel()
			job := strings.ReplaceAll(tt.job, `, "x": {}`, "")
			_, errs := ParseJobWithCalendars([]byte(job), validateNow, xmas)
			for _, e := range errs {
				if e.Path == tt.path && strings.Contains(e.Message, tt.says) {
					return
				}
			}
			t.Fatalf("want %s: …%s…; got %v", tt.path, tt.says, errs)
		})
	}
}

func TestValidatePoliciesAccepts(t *testing.T) {
	t.Parallel()
	xmas := mustCalendar(t, "xmas", contracts.CalendarProperties{Yearly: []contracts.YearlyDate{{Month: 12, Day: intp(25)}}})
	for name, job := range map[string]string{
		"every policy together": `{` + httpAction + `, "startTime": "2026-02-01T09:00Z", "catchUp": "all", "catchUpWindow": "P366D", "overlap": "bufferOne", "pauseAfterFaults": 1000,
			"recurrence": {"frequency": "month", "flexibleWindow": "P28D", "excludedCalendars": ["xmas"], "onExcludedDay": "previousBusinessDay", "schedule": {"monthlyBusinessDays": [1, -1, 23, -23], "hours": 9, "minutes": 0}}}`,
		"a window of a whole hour, hourly":         `{` + httpAction + `, "recurrence": {"frequency": "hour", "flexibleWindow": "01:00:00"}}`,
		"a window of two weeks, every second week": `{` + httpAction + `, "recurrence": {"frequency": "week", "interval": 2, "flexibleWindow": "P14D"}}`,
		"calendars not given to validation":        `{` + httpAction + `, "recurrence": {"frequency": "day", "excludedCalendars": ["elsewhere"], "onExcludedDay": "skip"}}`,
		"a yearly run whose held date moves":       `{` + httpAction + `, "startTime": "2026-12-25T09:00Z", "recurrence": {"frequency": "year", "excludedCalendars": ["xmas"], "onExcludedDay": "nextBusinessDay"}}`,
		"catchUp Skip with overlap Skip":           `{` + httpAction + `, "catchUp": "skip", "overlap": "skip", "recurrence": {"frequency": "minute"}}`,
	} {
		t.Run(name+" is accepted", func(t *testing.T) {
			t.Parallel()
			if _, errs := ParseJobWithCalendars([]byte(job), validateNow, xmas); len(errs) > 0 {
				t.Fatalf("rejected: %v", errs)
			}
		})
	}
}
