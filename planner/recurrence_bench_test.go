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
