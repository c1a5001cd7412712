package planner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

var policyNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// policyJob returns a job with an HTTP action, a start time and the
// recurrence given as JSON members.
func policyJob(start, recurrence string) string {
	return `{` + httpAction + `, "startTime": "` + start + `", "recurrence": {` + recurrence + `}}`
}

func policySchedule(t testing.TB, job string, cals ...*Calendar) *Schedule {
	t.Helper()
	p, errs := ParseJobWithCalendars([]byte(job), policyNow, cals...)
	if len(errs) > 0 {
		t.Fatalf("invalid job: %v", errs)
	}
	s, err := NewSchedule(&p, policyNow, cals...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dates returns a calendar that holds the dates given.
func dates(t testing.TB, name string, ds ...string) *Calendar {
	var p contracts.CalendarProperties
	for _, d := range ds {
		p.Dates = append(p.Dates, contracts.CalendarDate{Date: d, Name: "holiday " + d})
	}
	return mustCalendar(t, name, p)
}

func TestExcludedDays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		job  string
		cals []*Calendar
		want []string
	}{
		{"skip drops the held date",
			policyJob("2026-12-23T09:00Z", `"frequency": "day", "excludedCalendars": ["h"]`),
			[]*Calendar{dates(t, "h", "2026-12-25")},
			[]string{"2026-12-23T09:00:00Z", "2026-12-24T09:00:00Z", "2026-12-26T09:00:00Z", "2026-12-27T09:00:00Z"}},
		{"a skipped occurrence does not count",
			policyJob("2026-12-23T09:00Z", `"frequency": "day", "count": 3, "excludedCalendars": ["h"], "onExcludedDay": "skip"`),
			[]*Calendar{dates(t, "h", "2026-12-25")},
			[]string{"2026-12-23T09:00:00Z", "2026-12-24T09:00:00Z", "2026-12-26T09:00:00Z"}},
		{"a range is skipped at once",
			policyJob("2026-12-23T09:00Z", `"frequency": "day", "schedule": {"hours": [9, 21], "minutes": [0]}, "excludedCalendars": ["h"]`),
			[]*Calendar{mustCalendar(t, "h", contracts.CalendarProperties{Ranges: []contracts.DateRange{{Start: "2026-12-24", End: "2026-12-26"}}})},
			[]string{"2026-12-23T09:00:00Z", "2026-12-23T21:00:00Z", "2026-12-27T09:00:00Z", "2026-12-27T21:00:00Z"}},
		{"the local date decides, not the UTC one",
			policyJob("2026-12-24T00:30", `"frequency": "day", "timeZone": "Europe/Berlin", "excludedCalendars": ["h"]`),
			[]*Calendar{dates(t, "h", "2026-12-25")},
			[]string{"2026-12-23T23:30:00Z", "2026-12-25T23:30:00Z", "2026-12-26T23:30:00Z"}},
		{"any of several calendars excludes",
			policyJob("2026-12-23T09:00Z", `"frequency": "day", "excludedCalendars": ["a", "b"]`),
			[]*Calendar{dates(t, "a", "2026-12-24"), dates(t, "b", "2026-12-26"), dates(t, "c", "2026-12-27")},
			[]string{"2026-12-23T09:00:00Z", "2026-12-25T09:00:00Z", "2026-12-27T09:00:00Z"}},
		{"a yearly rule skips every year",
			policyJob("2026-11-19T12:00Z", `"frequency": "week", "excludedCalendars": ["us"]`),
			[]*Calendar{mustCalendar(t, "us", usHolidays())},
			[]string{"2026-11-19T12:00:00Z", "2026-12-03T12:00:00Z", "2026-12-10T12:00:00Z"}},
		{"next business day joins the occurrence already there",
			policyJob("2026-12-21T09:00Z", `"frequency": "week", "schedule": {"weekDays": ["monday", "tuesday", "wednesday", "thursday", "friday"]}, "excludedCalendars": ["h"], "onExcludedDay": "nextBusinessDay"`),
			[]*Calendar{dates(t, "h", "2026-12-25")},
			[]string{"2026-12-21T09:00:00Z", "2026-12-22T09:00:00Z", "2026-12-23T09:00:00Z", "2026-12-24T09:00:00Z", "2026-12-28T09:00:00Z", "2026-12-29T09:00:00Z"}},
		{"next business day passes weekends that are not held, which keep their runs",
			policyJob("2026-12-24T09:00Z", `"frequency": "day", "excludedCalendars": ["h"], "onExcludedDay": "NextBusinessDay"`),
			[]*Calendar{dates(t, "h", "2026-12-25", "2026-12-28")},
			[]string{"2026-12-24T09:00:00Z", "2026-12-26T09:00:00Z", "2026-12-27T09:00:00Z", "2026-12-29T09:00:00Z", "2026-12-30T09:00:00Z"}},
		{"a weekly Friday moves to Monday, past the next held Friday too",
			policyJob("2026-12-18T09:00Z", `"frequency": "week", "excludedCalendars": ["h"], "onExcludedDay": "NextBusinessDay"`),
			[]*Calendar{dates(t, "h", "2026-12-25", "2027-01-01")},
			[]string{"2026-12-18T09:00:00Z", "2026-12-28T09:00:00Z", "2027-01-04T09:00:00Z", "2027-01-08T09:00:00Z"}},
		{"a move later than the end time is dropped",
			policyJob("2026-12-23T09:00Z", `"frequency": "day", "endTime": "2026-12-25T12:00Z", "excludedCalendars": ["h"], "onExcludedDay": "NextBusinessDay"`),
			[]*Calendar{dates(t, "h", "2026-12-25")},
			[]string{"2026-12-23T09:00:00Z", "2026-12-24T09:00:00Z"}},
		{"previous business day moves the 1st back into the month before",
			policyJob("2026-12-01T09:00Z", `"frequency": "month", "excludedCalendars": ["h"], "onExcludedDay": "PreviousBusinessDay"`),
			[]*Calendar{dates(t, "h", "2027-01-01")},
			[]string{"2026-12-01T09:00:00Z", "2026-12-31T09:00:00Z", "2027-02-01T09:00:00Z"}},
		{"a move before the start time is dropped",
			policyJob("2027-01-01T09:00Z", `"frequency": "month", "excludedCalendars": ["h"], "onExcludedDay": "PreviousBusinessDay"`),
			[]*Calendar{dates(t, "h", "2027-01-01")},
			[]string{"2027-02-01T09:00:00Z", "2027-03-01T09:00:00Z"}},
		{"business days of the month without calendars are weekdays",
			policyJob("2026-03-01T00:00Z", `"frequency": "month", "schedule": {"monthlyBusinessDays": [1, 3, -1], "hours": [9], "minutes": [0]}`),
			nil,
			[]string{"2026-03-02T09:00:00Z", "2026-03-04T09:00:00Z", "2026-03-31T09:00:00Z", "2026-04-01T09:00:00Z", "2026-04-03T09:00:00Z", "2026-04-30T09:00:00Z"}},
		{"business days of the month leave out held days",
			policyJob("2026-03-01T00:00Z", `"frequency": "month", "schedule": {"monthlyBusinessDays": [1, 3, -1], "hours": [9], "minutes": [0]}, "excludedCalendars": ["h", "us"]`),
			[]*Calendar{dates(t, "h", "2026-03-02", "2026-03-31"), mustCalendar(t, "us", usHolidays())},
			[]string{"2026-03-03T09:00:00Z", "2026-03-05T09:00:00Z", "2026-03-30T09:00:00Z", "2026-04-01T09:00:00Z", "2026-04-06T09:00:00Z", "2026-04-30T09:00:00Z"}},
		{"the 23rd business day exists only in months with 23",
			policyJob("2026-01-01T00:00Z", `"frequency": "month", "schedule": {"monthlyBusinessDays": 23, "hours": 9, "minutes": 0}`),
			nil,
			[]string{"2026-07-31T09:00:00Z", "2026-12-31T09:00:00Z", "2027-03-31T09:00:00Z"}},

		// Daylight saving, in the three zones of the examples.
		{"New York: the last business day keeps 09:00 across the spring change",
			policyJob("2026-02-01T00:00", `"frequency": "month", "timeZone": "America/New_York", "schedule": {"monthlyBusinessDays": -1, "hours": 9, "minutes": 0}`),
			nil,
			[]string{"2026-02-27T14:00:00Z", "2026-03-31T13:00:00Z", "2026-04-30T13:00:00Z"}},
		{"Berlin: the first business day keeps 09:00 across the autumn change",
			policyJob("2026-10-01T00:00", `"frequency": "month", "timeZone": "Europe/Berlin", "schedule": {"monthlyBusinessDays": 1, "hours": 9, "minutes": 0}`),
			nil,
			[]string{"2026-10-01T07:00:00Z", "2026-11-02T08:00:00Z", "2026-12-01T08:00:00Z"}},
		{"Sydney: the first business day keeps 09:00 across the April change",
			policyJob("2026-03-01T00:00", `"frequency": "month", "timeZone": "Australia/Sydney", "schedule": {"monthlyBusinessDays": 1, "hours": 9, "minutes": 0}`),
			nil,
			[]string{"2026-03-01T22:00:00Z", "2026-03-31T22:00:00Z", "2026-04-30T23:00:00Z"}},
		{"New York: 02:30 on the held day that skips it moves to 02:30 the next business day",
			policyJob("2026-03-06T02:30", `"frequency": "day", "timeZone": "America/New_York", "excludedCalendars": ["h"], "onExcludedDay": "NextBusinessDay"`),
			[]*Calendar{dates(t, "h", "2026-03-08")},
			[]string{"2026-03-06T07:30:00Z", "2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		{"Berlin: 02:30 on the held day that skips it moves to 02:30 the business day before",
			policyJob("2026-03-27T02:30", `"frequency": "day", "timeZone": "Europe/Berlin", "excludedCalendars": ["h"], "onExcludedDay": "PreviousBusinessDay"`),
			[]*Calendar{dates(t, "h", "2026-03-29")},
			[]string{"2026-03-27T01:30:00Z", "2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}},
		{"Sydney: 02:30 on the held day that has it twice moves once",
			policyJob("2026-04-03T02:30", `"frequency": "day", "timeZone": "Australia/Sydney", "excludedCalendars": ["h"], "onExcludedDay": "NextBusinessDay"`),
			[]*Calendar{dates(t, "h", "2026-04-05")},
			[]string{"2026-04-02T15:30:00Z", "2026-04-03T15:30:00Z", "2026-04-05T16:30:00Z", "2026-04-06T16:30:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := policySchedule(t, tt.job, tt.cals...)
			got := formatAll(s.Upcoming(len(tt.want) + 1))
			if len(got) > len(tt.want) && s.Count() == 0 && !strings.Contains(tt.job, "endTime") {
				got = got[:len(tt.want)]
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("instants\n got %q\nwant %q", got, tt.want)
			}
			// Next from just before each occurrence finds it.
			for i := 1; i < len(tt.want); i++ {
				at, _ := time.Parse(time.RFC3339, tt.want[i])
				if next, ok := s.Next(at.Add(-time.Second)); !ok || !next.Equal(at) {
					t.Fatalf("Next(%s - 1s) = %s, %v", at, next, ok)
				}
			}
		})
	}
}

func TestNewScheduleNeedsTheExcludedCalendars(t *testing.T) {
	t.Parallel()
	p, errs := ParseJob([]byte(policyJob("2026-12-23T09:00Z", `"frequency": "day", "excludedCalendars": ["holidays", "other"]`)), policyNow)
	if len(errs) > 0 {
		t.Fatalf("validation without calendars must not fail on them: %v", errs)
	}
	_, err := NewSchedule(&p, policyNow, dates(t, "holidays", "2026-12-25"))
	if !errors.Is(err, ErrCalendarMissing) || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("err = %v; want ErrCalendarMissing naming \"other\"", err)
	}
	if _, err := NewSchedule(&p, policyNow, dates(t, "Holidays", "2026-12-25"), dates(t, "OTHER")); err != nil {
		t.Fatalf("calendar names are matched ignoring case: %v", err)
	}
}

// The immediate run of a job without a start time is skipped on a held
// date, and not moved.
func TestTheImmediateRunOnAHeldDate(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"Skip", "NextBusinessDay", "PreviousBusinessDay"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			job := `{` + httpAction + `, "recurrence": {"frequency": "day", "schedule": {"hours": [9], "minutes": [0]}, "excludedCalendars": ["h"], "onExcludedDay": "` + action + `"}}`
			s := policySchedule(t, job, dates(t, "h", "2026-01-01"))
			// Not at creation (00:00 on the held 1 January); 1 January 09:00
			// is skipped, moved to Friday 2 January (where the job runs
			// anyway) or moved before the job was created (dropped).
			want := []string{"2026-01-02T09:00:00Z", "2026-01-03T09:00:00Z"}
			if got := formatAll(s.Upcoming(2)); !slices.Equal(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

func TestDueIsWithinTheWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		job  string
		at   string // an occurrence at a daylight-saving change
	}{
		{"New York, the autumn change", policyJob("2026-10-30T01:30", `"frequency": "day", "timeZone": "America/New_York", "flexibleWindow": "PT2H"`), "2026-11-01T05:30:00Z"},
		{"Berlin, the spring change", policyJob("2026-03-27T02:30", `"frequency": "day", "timeZone": "Europe/Berlin", "flexibleWindow": "01:00:00"`), "2026-03-29T01:30:00Z"},
		{"Sydney, the October change", policyJob("2026-10-01T02:30", `"frequency": "day", "timeZone": "Australia/Sydney", "flexibleWindow": "PT90M"`), "2026-10-03T16:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := policySchedule(t, tt.job)
			at, _ := time.Parse(time.RFC3339, tt.at)
			if next, ok := s.Next(at.Add(-time.Second)); !ok || !next.Equal(at) {
				t.Fatalf("the schedule has no occurrence at %s (next %s)", at, next)
			}
			w := s.Window()
			lo, hi := w, time.Duration(0)
			for i := range 5000 {
				key := fmt.Sprintf("sub.rg.coll.job-%d", i)
				due := s.Due(key, at)
				if due.Before(at) || !due.Before(at.Add(w)) {
					t.Fatalf("Due(%s) = %s, outside [%s, %s)", key, due, at, at.Add(w))
				}
				if due.Sub(due.Truncate(time.Second)) != 0 {
					t.Fatalf("Due(%s) = %s is not whole seconds", key, due)
				}
				if !s.Due(key, at).Equal(due) {
					t.Fatalf("Due(%s) is not stable", key)
				}
				lo, hi = min(lo, due.Sub(at)), max(hi, due.Sub(at))
			}
			if lo > w/100 || hi < w-w/100 {
				t.Fatalf("offsets span only [%s, %s] of %s", lo, hi, w)
			}
		})
	}
}

// Offsets spread evenly over many jobs: each of 60 equal parts of the
// window gets its share, within 30 %.
func TestDueSpreadsJobsEvenly(t *testing.T) {
	t.Parallel()
	s := policySchedule(t, policyJob("2026-01-01T00:00Z", `"frequency": "hour", "flexibleWindow": "PT1H"`))
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	const jobs, buckets = 30000, 60
	var count [buckets]int
	for i := range jobs {
		off := s.Due(fmt.Sprintf("job%d", i), at).Sub(at)
		count[int(off/time.Minute)]++
	}
	for b, n := range count {
		if n < jobs/buckets*7/10 || n > jobs/buckets*13/10 {
			t.Fatalf("minute %d of the window has %d jobs; want about %d", b, n, jobs/buckets)
		}
	}
	// The same job's offset changes from one occurrence to the next.
	if s.Due("job1", at).Sub(at) == s.Due("job1", at.Add(time.Hour)).Sub(at.Add(time.Hour)) &&
		s.Due("job1", at.Add(2*time.Hour)).Sub(at.Add(2*time.Hour)) == s.Due("job1", at).Sub(at) {
		t.Fatal("a job's offset is the same at every occurrence")
	}
}

func TestDueWithoutAWindowIsTheInstant(t *testing.T) {
	t.Parallel()
	s := policySchedule(t, policyJob("2026-01-01T00:00Z", `"frequency": "hour"`))
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	if due := s.Due("job", at); !due.Equal(at) || s.Window() != 0 {
		t.Fatalf("Due = %s, Window = %s; want the instant and 0", due, s.Window())
	}
}

func TestUpcomingDetail(t *testing.T) {
	t.Parallel()
	us := mustCalendar(t, "us", usHolidays())
	t.Run("skipped occurrences are listed with their holiday", func(t *testing.T) {
		t.Parallel()
		s := policySchedule(t, policyJob("2026-12-23T09:00Z", `"frequency": "day", "excludedCalendars": ["us"], "flexibleWindow": "PT10M"`), us)
		got := s.UpcomingDetail("job", 3)
		want := []Occurrence{
			{At: at("2026-12-23T09:00:00Z")},
			{At: at("2026-12-24T09:00:00Z"), Skipped: true, Calendar: "us", Holiday: "Winter break"},
			{At: at("2026-12-25T09:00:00Z"), Skipped: true, Calendar: "us", Holiday: "Winter break"},
			{At: at("2026-12-26T09:00:00Z"), Skipped: true, Calendar: "us", Holiday: "Winter break"},
			{At: at("2026-12-27T09:00:00Z")},
			{At: at("2026-12-28T09:00:00Z")},
		}
		checkDetail(t, s, got, want)
	})
	t.Run("moved occurrences say where from", func(t *testing.T) {
		t.Parallel()
		s := policySchedule(t, policyJob("2026-11-24T17:00Z", `"frequency": "day", "schedule": {"hours": 17, "minutes": 0}, "excludedCalendars": ["us"], "onExcludedDay": "nextBusinessDay"`), us)
		got := s.UpcomingDetail("job", 4)
		want := []Occurrence{
			{At: at("2026-11-24T17:00:00Z")},
			{At: at("2026-11-25T17:00:00Z")},
			{At: at("2026-11-27T17:00:00Z"), MovedFrom: at("2026-11-26T17:00:00Z"), Calendar: "us", Holiday: "Thanksgiving"},
			{At: at("2026-11-28T17:00:00Z")},
		}
		checkDetail(t, s, got, want)
	})
	t.Run("a move past the end time is listed as skipped", func(t *testing.T) {
		t.Parallel()
		s := policySchedule(t, policyJob("2026-12-30T09:00Z", `"frequency": "day", "endTime": "2027-01-01T23:00Z", "excludedCalendars": ["us"], "onExcludedDay": "nextBusinessDay"`), us)
		got := s.UpcomingDetail("job", 5)
		want := []Occurrence{
			{At: at("2026-12-30T09:00:00Z")},
			{At: at("2026-12-31T09:00:00Z"), Skipped: true, Calendar: "us", Holiday: "New Year's Eve"},
			{At: at("2027-01-01T09:00:00Z"), Skipped: true, Calendar: "us", Holiday: "New Year's Day"},
		}
		checkDetail(t, s, got, want)
	})
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// checkDetail compares occurrences, filling in each wanted run's due time.
func checkDetail(t *testing.T, s *Schedule, got, want []Occurrence) {
	t.Helper()
	for i := range want {
		if !want[i].Skipped {
			want[i].Due = s.Due("job", want[i].At)
		}
	}
	if !slices.EqualFunc(got, want, func(a, b Occurrence) bool {
		return a.At.Equal(b.At) && a.Due.Equal(b.Due) && a.Skipped == b.Skipped && a.MovedFrom.Equal(b.MovedFrom) && a.Calendar == b.Calendar && a.Holiday == b.Holiday
	}) {
		t.Fatalf("occurrences\n got %+v\nwant %+v", got, want)
	}
}

func TestPreviewDetailed(t *testing.T) {
	t.Parallel()
	job := []byte(policyJob("2026-12-24T09:00Z", `"frequency": "day", "excludedCalendars": ["us"]`))
	if _, err := PreviewDetailed(job, policyNow, 3, "job"); err == nil || !strings.Contains(err.Error(), `"us"`) {
		t.Fatalf("err = %v; want one naming the missing calendar", err)
	}
	got, err := PreviewDetailed(job, policyNow, 1, "job", mustCalendar(t, "us", usHolidays()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || !got[0].Skipped || got[3].Skipped || !got[3].At.Equal(at("2026-12-27T09:00:00Z")) {
		t.Fatalf("got %+v", got)
	}
}
