package planner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/teambition/rrule-go"

	"github.com/jobscheduler/scheduler/contracts"
)

// The benchmarks measure the cost of one next-occurrence computation for each
// schedule of the seeds' example table, for a job that started a day ago and
// one that started ten years ago: the engine jumps to the right period, so the
// two must cost the same. The same rules through rrule-go (which iterates from
// its start) give the comparison. Run:
//
//	go test ./planner -run '^$' -bench 'BenchmarkNext' -benchtime 200000x

var benchNow = time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC)

type benchCase struct {
	name string
	job  contracts.JobProperties
}

// seedBenchCases returns the seeds' example schedules with their start time
// moved to age before benchNow.
func seedBenchCases(b *testing.B, age time.Duration) []benchCase {
	var out []benchCase
	for _, ex := range loadExamples(b) {
		if !strings.HasPrefix(ex.Source, "seeds/scheduler-advanced-complexity examples") {
			continue
		}
		job, errs := contracts.DecodeJob(ex.Job)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		p := job.Properties
		start := benchNow.Add(-age).Add(25 * time.Minute)
		p.StartTime = &start
		_, desc, _ := strings.Cut(ex.Name, ": ")
		out = append(out, benchCase{name: benchName(desc), job: p})
	}
	return out
}

// benchName turns "5:15 and 5:45 PM on Monday, Wednesday and Friday" into
// "5.15_and_5.45_PM_on_Monday_Wednesday_and_Friday".
func benchName(desc string) string {
	desc, _, _ = strings.Cut(desc, " (")
	return strings.NewReplacer(":", ".", ", ", "_", " ", "_", "'", "").Replace(desc)
}

// queries are instants spread over a week from benchNow, so a run mixes
// searches that end in the same period with ones that cross periods.
func queries() []time.Time {
	q := make([]time.Time, 64)
	for i := range q {
		q[i] = benchNow.Add(time.Duration(i) * 157 * time.Minute)
	}
	return q
}

func BenchmarkNext(b *testing.B) {
	ages := []struct {
		name string
		age  time.Duration
	}{{"started=1d", 24 * time.Hour}, {"started=10y", 10 * 365 * 24 * time.Hour}}
	q := queries()
	for _, age := range ages {
		for _, c := range seedBenchCases(b, age.age) {
			s, err := NewSchedule(&c.job, benchNow)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("engine/%s/%s", age.name, c.name), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, ok := s.Next(q[i%len(q)]); !ok {
						b.Fatal("no next occurrence")
					}
				}
			})
			r, err := rrule.NewRRule(rruleOption(&c.job))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("rrule-go/%s/%s", age.name, c.name), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if r.After(q[i%len(q)], false).IsZero() {
						b.Fatal("no next occurrence")
					}
				}
			})
		}
	}
}

// BenchmarkNextInZone is the weekday-at-09:00 Berlin schedule: the cost of
// wall-clock resolution in a zone with daylight saving.
func BenchmarkNextInZone(b *testing.B) {
	job := []byte(`{"startTime": "2016-01-04T09:00", "action": {"type": "http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "week", "timeZone": "Europe/Berlin",
		"schedule": {"weekDays": ["monday", "tuesday", "wednesday", "thursday", "friday"], "hours": [9], "minutes": [0]}}}`)
	s := mustSchedule(b, job, benchNow)
	q := queries()
	for i := 0; b.Loop(); i++ {
		if _, ok := s.Next(q[i%len(q)]); !ok {
			b.Fatal("no next occurrence")
		}
	}
}

// rruleOption expresses a job's recurrence as an RFC 5545 rule for rrule-go,
// with the same defaults for hours, minutes and seconds.
func rruleOption(p *contracts.JobProperties) rrule.ROption {
	r := p.Recurrence
	start := p.StartTime.UTC()
	opt := rrule.ROption{
		Freq: map[contracts.Frequency]rrule.Frequency{
			contracts.FrequencyMinute: rrule.MINUTELY, contracts.FrequencyHour: rrule.HOURLY,
			contracts.FrequencyDay: rrule.DAILY, contracts.FrequencyWeek: rrule.WEEKLY,
			contracts.FrequencyMonth: rrule.MONTHLY, contracts.FrequencyYear: rrule.YEARLY,
		}[r.Frequency],
		Interval: r.IntervalOrDefault(),
		Dtstart:  start,
		Wkst:     rrule.MO,
	}
	sc := r.Schedule
	if sc == nil {
		return opt
	}
	opt.Byhour, opt.Byminute, opt.Bysecond = sc.Hours, sc.Minutes, []int{0}
	if len(sc.Minutes) == 0 {
		opt.Byminute, opt.Bysecond = []int{start.Minute()}, []int{start.Second()}
	}
	if len(sc.Hours) == 0 {
		opt.Byhour = []int{start.Hour()}
		if len(sc.Minutes) > 0 {
			opt.Byhour = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}
		}
	}
	days := []rrule.Weekday{rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA, rrule.SU}
	for _, d := range sc.WeekDays {
		opt.Byweekday = append(opt.Byweekday, days[isoWeekday(weekdayOf(d))])
	}
	for _, o := range sc.MonthlyOccurrences {
		wd := days[isoWeekday(weekdayOf(o.Day))]
		if o.Occurrence != nil {
			wd = wd.Nth(*o.Occurrence)
		}
		opt.Byweekday = append(opt.Byweekday, wd)
	}
	opt.Bymonthday = sc.MonthDays
	return opt
}

// publicHolidays is a year of public holidays as dates, with the yearly
// rules that repeat them.
func publicHolidays() contracts.CalendarProperties {
	p := contracts.CalendarProperties{}
	for _, d := range []string{"2026-01-01", "2026-01-19", "2026-02-16", "2026-05-25", "2026-06-19", "2026-07-03",
		"2026-09-07", "2026-10-12", "2026-11-11", "2026-11-26", "2026-11-27", "2026-12-24", "2026-12-25", "2026-12-31"} {
		p.Dates = append(p.Dates, contracts.CalendarDate{Date: d, Name: "holiday"})
	}
	p.Ranges = []contracts.DateRange{{Start: "2026-08-10", End: "2026-08-21", Name: "summer shutdown"}}
	p.Yearly = []contracts.YearlyDate{
		{Name: "New Year's Day", Month: 1, Day: intp(1)},
		{Name: "Memorial Day", Month: 5, WeekDay: contracts.Monday, Occurrence: intp(-1)},
		{Name: "Labor Day", Month: 9, WeekDay: contracts.Monday, Occurrence: intp(1)},
		{Name: "Thanksgiving", Month: 11, WeekDay: contracts.Thursday, Occurrence: intp(4)},
		{Name: "Christmas Day", Month: 12, Day: intp(25)},
	}
	return p
}

// BenchmarkNextWithPolicies is the cost of Next and Due for jobs that
// exclude a holiday calendar and run within a flexible window, started a
// day and ten years ago: the same, as the engine still jumps to the period
// asked about. The instants asked spread over 64 days, across holidays.
func BenchmarkNextWithPolicies(b *testing.B) {
	cal, err := CompileCalendar("holidays", func() *contracts.CalendarProperties { p := publicHolidays(); return &p }())
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct{ name, recurrence string }{
		{"weekdays-skip", `"frequency": "week", "timeZone": "America/New_York", "schedule": {"weekDays": ["monday", "tuesday", "wednesday", "thursday", "friday"], "hours": [9], "minutes": [0]}, "excludedCalendars": ["holidays"], "flexibleWindow": "PT30M"`},
		{"daily-next-business-day", `"frequency": "day", "timeZone": "Europe/Berlin", "schedule": {"hours": [9, 17], "minutes": [0]}, "excludedCalendars": ["holidays"], "onExcludedDay": "nextBusinessDay", "flexibleWindow": "PT1H"`},
		{"monthly-previous-business-day", `"frequency": "month", "schedule": {"monthDays": [1, 15]}, "excludedCalendars": ["holidays"], "onExcludedDay": "previousBusinessDay", "flexibleWindow": "P1D"`},
		{"business-days-1-and-last", `"frequency": "month", "timeZone": "Australia/Sydney", "schedule": {"monthlyBusinessDays": [1, -1], "hours": [6], "minutes": [30]}, "excludedCalendars": ["holidays"], "flexibleWindow": "PT2H"`},
	}
	q := make([]time.Time, 64)
	for i := range q {
		q[i] = benchNow.Add(time.Duration(i)*24*time.Hour + time.Duration(i)*157*time.Minute)
	}
	for _, age := range []struct {
		name string
		age  time.Duration
	}{{"started=1d", 24 * time.Hour}, {"started=10y", 10 * 365 * 24 * time.Hour}} {
		start := benchNow.Add(-age.age).Format(time.RFC3339)
		for _, c := range cases {
			job := `{"startTime": "` + start + `", "action": {"type": "http", "request": {"uri": "https://example.com", "method": "GET"}}, "recurrence": {` + c.recurrence + `}}`
			p, errs := ParseJobWithCalendars([]byte(job), benchNow, cal)
			if len(errs) > 0 {
				b.Fatal(errs)
			}
			s, err := NewSchedule(&p, benchNow, cal)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(age.name+"/"+c.name, func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					at, ok := s.Next(q[i%len(q)])
					if !ok {
						b.Fatal("no next occurrence")
					}
					_ = s.Due("sub.rg.collection.job", at)
				}
			})
		}
	}
}
