package planner

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

type describeCase struct {
	name  string
	start string // RFC 3339; "" for none
	rec   *contracts.Recurrence
	want  string
}

// describeCases are the schedules of the table test; the property test runs
// the engine on each and checks the instants against the words.
func describeCases() []describeCase {
	n := func(i int) *int { return &i }
	at := func(s string) *time.Time {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return &t
	}
	rec := func(f contracts.Frequency, sc *contracts.Schedule) *contracts.Recurrence {
		return &contracts.Recurrence{Frequency: f, Schedule: sc}
	}
	with := func(r *contracts.Recurrence, edit func(*contracts.Recurrence)) *contracts.Recurrence {
		edit(r)
		return r
	}
	occ := func(d contracts.DayOfWeek, nth *int) contracts.MonthlyOccurrence {
		return contracts.MonthlyOccurrence{Day: d, Occurrence: nth}
	}
	weekdays := []contracts.DayOfWeek{contracts.Monday, contracts.Tuesday, contracts.Wednesday, contracts.Thursday, contracts.Friday}
	tens := []int{0, 10, 20, 30, 40, 50}
	const start = "2026-05-01T09:00:00Z" // a Friday
	return []describeCase{
		{"no recurrence and a start time runs once then", start, nil, "once, at 2026-05-01 09:00 UTC"},
		{"no recurrence and no start time runs once when created", "", nil, "once, when created"},
		{"a minute grid with a count", "", with(rec(contracts.FrequencyMinute, nil), func(r *contracts.Recurrence) { r.Interval, r.Count = n(15), n(10) }),
			"every 15 minutes, 10 times"},
		{"an hour grid keeps the start's minute", "2026-05-01T09:20:00Z", rec(contracts.FrequencyHour, nil), "every hour at :20"},
		{"an hour grid with interval and end time", "2026-05-01T09:20:00Z",
			with(rec(contracts.FrequencyHour, nil), func(r *contracts.Recurrence) { r.Interval, r.EndTime = n(3), at("2026-05-03T00:00:00Z") }),
			"every 3 hours at :20, until 2026-05-03 00:00 UTC"},
		{"a day grid runs at the start's time", "2026-05-01T09:00:30Z", with(rec(contracts.FrequencyDay, nil), func(r *contracts.Recurrence) { r.Count = n(3) }),
			"every day at 09:00:30 UTC, 3 times"},
		{"a day grid without a start runs at the creation time", "", with(rec(contracts.FrequencyDay, nil), func(r *contracts.Recurrence) { r.Interval = n(2) }),
			"every 2 days at the time it was created"},
		{"a week grid runs on the start's weekday", start, rec(contracts.FrequencyWeek, nil), "every Friday at 09:00 UTC"},
		{"a week grid with interval", start, with(rec(contracts.FrequencyWeek, nil), func(r *contracts.Recurrence) { r.Interval = n(2) }),
			"every 2 weeks on Friday at 09:00 UTC"},
		{"a month grid from the 31st skips shorter months", "2026-01-31T06:00:00Z", rec(contracts.FrequencyMonth, nil),
			"on the 31st of each month at 06:00 UTC"},
		{"a year grid", "2028-02-29T12:00:00Z", rec(contracts.FrequencyYear, nil), "every year on 29 February at 12:00 UTC"},
		{"weekdays at nine in Berlin", start, with(rec(contracts.FrequencyWeek, &contracts.Schedule{WeekDays: weekdays, Hours: []int{9}, Minutes: []int{0}}),
			func(r *contracts.Recurrence) { r.TimeZone = "Europe/Berlin" }),
			"every weekday at 09:00 Europe/Berlin"},
		{"the last Friday of each month", start, rec(contracts.FrequencyMonth, &contracts.Schedule{Hours: []int{17}, Minutes: []int{0},
			MonthlyOccurrences: []contracts.MonthlyOccurrence{occ(contracts.Friday, n(-1))}}),
			"on the last Friday of each month at 17:00 UTC"},
		{"first and last Friday and the second Monday", "2026-01-01T12:25:00Z", rec(contracts.FrequencyMonth, &contracts.Schedule{Hours: []int{5}, Minutes: []int{15},
			MonthlyOccurrences: []contracts.MonthlyOccurrence{occ(contracts.Friday, n(1)), occ(contracts.Friday, n(-1)), occ(contracts.Monday, n(2))}}),
			"on the second Monday and the first and last Friday of each month at 05:15 UTC"},
		{"every Tuesday and the second-to-last Sunday", start, rec(contracts.FrequencyMonth, &contracts.Schedule{Hours: []int{8}, Minutes: []int{30},
			MonthlyOccurrences: []contracts.MonthlyOccurrence{occ(contracts.Sunday, n(-2)), occ(contracts.Tuesday, nil)}}),
			"on every Tuesday and the second-to-last Sunday of each month at 08:30 UTC"},
		{"many times on Mondays are written compactly", "2015-07-13T00:00:00Z",
			rec(contracts.FrequencyWeek, &contracts.Schedule{WeekDays: []contracts.DayOfWeek{contracts.Monday}, Hours: []int{5, 10, 15, 20}, Minutes: tens}),
			"every Monday, every 10 minutes in hours 05, 10, 15 and 20 UTC (24 times a day)"},
		{"month days from the start and the end", start, rec(contracts.FrequencyMonth, &contracts.Schedule{MonthDays: []int{15, -1, 1}, Hours: []int{6}, Minutes: []int{0}}),
			"on the 1st, 15th and last day of each month at 06:00 UTC"},
		{"month days and a weekday must both hold", start, rec(contracts.FrequencyMonth, &contracts.Schedule{MonthDays: []int{13}, Hours: []int{12}, Minutes: []int{0},
			MonthlyOccurrences: []contracts.MonthlyOccurrence{occ(contracts.Friday, nil)}}),
			"on the 13th of each month, when it is a Friday at 12:00 UTC"},
		{"every two weeks on two days, until an end", start, with(rec(contracts.FrequencyWeek, &contracts.Schedule{WeekDays: []contracts.DayOfWeek{contracts.Thursday, contracts.Monday}, Hours: []int{9}, Minutes: []int{0}}),
			func(r *contracts.Recurrence) { r.Interval, r.EndTime = n(2), at("2027-01-01T00:00:00Z") }),
			"every 2 weeks on Monday and Thursday at 09:00 UTC, until 2027-01-01 00:00 UTC"},
		{"a week schedule without weekDays runs on the start's weekday", start, rec(contracts.FrequencyWeek, &contracts.Schedule{Hours: []int{7, 19}, Minutes: []int{0}}),
			"every Friday at 07:00 and 19:00 UTC"},
		{"hours without minutes take the start's minute", "2026-05-01T09:45:00Z", rec(contracts.FrequencyDay, &contracts.Schedule{Hours: []int{8, 20}}),
			"every day at 08:45 and 20:45 UTC"},
		{"minutes alone mean every hour", start, rec(contracts.FrequencyDay, &contracts.Schedule{Minutes: []int{0, 15, 30, 45}}),
			"every 15 minutes"},
		{"minutes alone on a week day", start, rec(contracts.FrequencyWeek, &contracts.Schedule{WeekDays: []contracts.DayOfWeek{contracts.Saturday}, Minutes: []int{0, 30}}),
			"every Saturday, every hour at :00 and :30 UTC"},
		{"an hour schedule with minutes", start, rec(contracts.FrequencyHour, &contracts.Schedule{Minutes: []int{30, 0}}),
			"every hour at :00 and :30"},
		{"an hour schedule with interval filtered by hours", start, with(rec(contracts.FrequencyHour, &contracts.Schedule{Minutes: []int{0}, Hours: []int{8, 9, 10, 11, 12, 13, 14, 15, 16, 17}}),
			func(r *contracts.Recurrence) { r.Interval, r.TimeZone = n(2), "America/New_York" }),
			"every 2 hours at :00, only in hours 08–17 America/New_York"},
		{"a minute schedule during working hours", start, rec(contracts.FrequencyMinute, &contracts.Schedule{Minutes: []int{0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55}, Hours: []int{9, 10, 11, 12, 13, 14, 15, 16}}),
			"every day, every 5 minutes from 09:00 to 16:55 UTC"},
		{"a minute schedule with interval and minutes filter", start, with(rec(contracts.FrequencyMinute, &contracts.Schedule{Minutes: []int{0, 1, 2, 3, 4}}),
			func(r *contracts.Recurrence) { r.Interval = n(2) }),
			"every 2 minutes, only at :00, :01, :02, :03 and :04"},
		{"a day schedule every 3 days in Tokyo", start, with(rec(contracts.FrequencyDay, &contracts.Schedule{Hours: []int{0, 12}, Minutes: []int{0}}),
			func(r *contracts.Recurrence) { r.Interval, r.TimeZone, r.Count = n(3), "Asia/Tokyo", n(5) }),
			"every 3 days at 00:00 and 12:00 Asia/Tokyo, 5 times"},
		{"a month schedule every 2 months", start, with(rec(contracts.FrequencyMonth, &contracts.Schedule{MonthDays: []int{-3}, Hours: []int{23}, Minutes: []int{59}}),
			func(r *contracts.Recurrence) { r.Interval = n(2) }),
			"every 2 months on the 3rd-to-last day at 23:59 UTC"},
		{"a month schedule without days takes the start's day", "2026-05-07T09:00:00Z", rec(contracts.FrequencyMonth, &contracts.Schedule{Hours: []int{9, 18}, Minutes: []int{0}}),
			"on the 7th of each month at 09:00 and 18:00 UTC"},
		{"a year schedule takes the start's date", start, rec(contracts.FrequencyYear, &contracts.Schedule{Hours: []int{6}, Minutes: []int{0, 30}}),
			"every year on 1 May at 06:00 and 06:30 UTC"},
		{"a schedule without a start runs when created first", "", rec(contracts.FrequencyWeek, &contracts.Schedule{WeekDays: []contracts.DayOfWeek{contracts.Sunday}, Hours: []int{3}, Minutes: []int{0}}),
			"when created, then every Sunday at 03:00 UTC"},
		{"many listed times in hours that are not a run", start, rec(contracts.FrequencyDay, &contracts.Schedule{Hours: []int{6, 12, 18}, Minutes: []int{7, 37, 47}}),
			"every day at :07, :37 and :47 in hours 06, 12 and 18 UTC (9 times a day)"},
		{"weekDays with a day frequency are ignored", start, with(rec(contracts.FrequencyDay, &contracts.Schedule{WeekDays: weekdays, Hours: []int{9}, Minutes: []int{0}}),
			func(r *contracts.Recurrence) { r.TimeZone = "Europe/Berlin" }),
			"every day at 09:00 Europe/Berlin (weekDays ignored with frequency Day)"},
	}
}

func startOf(t *testing.T, s string) *time.Time {
	t.Helper()
	if s == "" {
		return nil
	}
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tt := range describeCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Describe(startOf(t, tt.start), tt.rec); got != tt.want {
				t.Errorf("Describe = %q\n          want %q", got, tt.want)
			}
		})
	}
}

// TestDescribeAgreesWithTheEngine runs the recurrence engine on each
// schedule of the table and checks its first instants against what the
// words claim: the weekdays, the days of the month, the times of day, the
// spacing of a grid, the count and the end time.
func TestDescribeAgreesWithTheEngine(t *testing.T) {
	t.Parallel()
	for _, tt := range describeCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			words := Describe(startOf(t, tt.start), tt.rec)
			p := contracts.JobProperties{StartTime: startOf(t, tt.start), Recurrence: tt.rec}
			created := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
			if tt.start == "" {
				created = time.Date(2026, 5, 1, 9, 7, 13, 0, time.UTC) // off every schedule of the table
			}
			s, err := NewSchedule(&p, created)
			if err != nil {
				t.Fatal(err)
			}
			const n = 60
			instants := s.Upcoming(n)
			if len(instants) == 0 {
				t.Fatal("the engine computes no instant")
			}
			if strings.HasPrefix(words, "once") {
				if len(instants) != 1 {
					t.Errorf("%q, but the engine runs %d times", words, len(instants))
				}
				return
			}
			c := parseClaims(t, words)
			if c.count > 0 && len(instants) != c.count {
				t.Errorf("%q, but the engine runs %d times", words, len(instants))
			}
			if strings.HasPrefix(words, "when created, then ") {
				if !instants[0].Equal(created) {
					t.Errorf("%q, but the first run is at %s", words, instants[0])
				}
				instants = instants[1:]
			}
			loc := s.Location()
			seen := map[string]bool{}
			for i, at := range instants {
				if c.end != nil && at.After(*c.end) {
					t.Errorf("%q, but the engine runs at %s", words, at)
				}
				if i > 0 && c.gap > 0 && at.Sub(instants[i-1]) != c.gap {
					t.Errorf("%q, but %s follows %s", words, at, instants[i-1])
				}
				if why := c.check(at.In(loc)); why != "" {
					t.Errorf("%q, but the engine runs at %s (%s): %s", words, at.In(loc).Format("Monday 2006-01-02 15:04:05"), loc, why)
				}
				seen[at.In(loc).Format("15:04:05")] = true
			}
			if len(instants) >= n-1 {
				for _, tod := range c.times {
					if !seen[tod] {
						t.Errorf("%q, but the first %d runs are never at %s", words, n, tod)
					}
				}
			}
		})
	}
}

// claims is what a description says about each instant, as read back from
// its words.
type claims struct {
	weekdays  []time.Weekday
	nths      map[time.Weekday][]int // the occurrences of a weekday in its month; nil: every
	monthDays []int                  // 1…31, or -k for the k-th day from the end
	times     []string               // listed times of day, "15:04:05"
	minutes   []int                  // listed minutes of the hour
	minStep   int                    // every minStep minutes from minFrom
	minFrom   int
	hours     []int
	from, to  string // a range of times of day
	gap       time.Duration
	count     int
	end       *time.Time
}

var (
	weekdayNames = `(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)`
	nthNames     = map[string]int{"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1, "second-to-last": -2}
	reOccurrence = regexp.MustCompile(`(every|the ((?:first|second|third|fourth|fifth|last|second-to-last)(?:, | and )?)+) ` + weekdayNames)
	reWeekday    = regexp.MustCompile(weekdayNames)
	reMonthDay   = regexp.MustCompile(`\b(\d+)(?:st|nd|rd|th)(-to-last)?\b`)
	reClock      = regexp.MustCompile(`\b(\d\d):(\d\d)(?::(\d\d))?\b`)
	reMark       = regexp.MustCompile(`(?:^|[^\d]):(\d\d)\b`)
	reStep       = regexp.MustCompile(`every (\d+) minutes(?: from :(\d\d))?`)
	reHours      = regexp.MustCompile(`in hours ([\d–, and]+)`)
	reRange      = regexp.MustCompile(`from (\d\d:\d\d) to (\d\d:\d\d)`)
	reGrid       = regexp.MustCompile(`^every (?:(\d+) )?(minute|hour)s?(?: at :\d\d)?(?:,|$)`)
)

func parseClaims(t *testing.T, words string) claims {
	t.Helper()
	var c claims
	words, until, _ := strings.Cut(words, ", until ")
	if until != "" {
		end, err := time.Parse("2006-01-02 15:04 MST", until)
		if err != nil {
			t.Fatalf("until %q: %v", until, err)
		}
		c.end = &end
	}
	if m := regexp.MustCompile(`, (\d+) times?$`).FindStringSubmatch(words); m != nil {
		c.count, _ = strconv.Atoi(m[1])
		words = strings.TrimSuffix(words, m[0])
	}
	words = strings.TrimPrefix(words, "when created, then ")
	if m := reGrid.FindStringSubmatch(words); m != nil && !strings.Contains(words, ", only") {
		unit := time.Minute
		if m[2] == "hour" {
			unit = time.Hour
		}
		c.gap = unit
		if m[1] != "" {
			k, _ := strconv.Atoi(m[1])
			c.gap = time.Duration(k) * unit
		}
	}
	if strings.Contains(words, "every weekday") {
		c.weekdays = []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}
	}
	if strings.Contains(words, "of each month") || strings.Contains(words, "months on") {
		c.nths = map[time.Weekday][]int{}
		for _, m := range reOccurrence.FindAllStringSubmatch(words, -1) {
			w := weekdayOf(contracts.DayOfWeek(m[3]))
			c.weekdays = append(c.weekdays, w)
			if m[1] == "every" {
				c.nths[w] = nil
				continue
			}
			for _, word := range regexp.MustCompile(`[a-z-]+`).FindAllString(strings.TrimPrefix(m[1], "the "), -1) {
				if k, ok := nthNames[word]; ok {
					c.nths[w] = append(c.nths[w], k)
				}
			}
		}
		for _, m := range reMonthDay.FindAllStringSubmatch(words, -1) {
			k, _ := strconv.Atoi(m[1])
			if m[2] != "" {
				k = -k
			}
			c.monthDays = append(c.monthDays, k)
		}
		if strings.Contains(words, "last day") && !strings.Contains(words, "-to-last day") || strings.Contains(words, "and last day") {
			c.monthDays = append(c.monthDays, -1)
		}
	} else {
		for _, m := range reWeekday.FindAllString(words, -1) {
			c.weekdays = append(c.weekdays, weekdayOf(contracts.DayOfWeek(m)))
		}
	}
	if m := reRange.FindStringSubmatch(words); m != nil {
		c.from, c.to = m[1]+":00", m[2]+":00"
		words = strings.Replace(words, m[0], "", 1)
	}
	for _, m := range reClock.FindAllStringSubmatch(words, -1) {
		c.times = append(c.times, m[1]+":"+m[2]+":"+cmpOr(m[3], "00"))
	}
	if m := reHours.FindStringSubmatch(words); m != nil {
		for _, part := range regexp.MustCompile(`\d\d(?:–\d\d)?`).FindAllString(m[1], -1) {
			lo, hi, _ := strings.Cut(part, "–")
			a, _ := strconv.Atoi(lo)
			b := a
			if hi != "" {
				b, _ = strconv.Atoi(hi)
			}
			for h := a; h <= b; h++ {
				c.hours = append(c.hours, h)
			}
		}
		words = strings.Replace(words, m[0], "", 1)
	}
	if m := reStep.FindStringSubmatch(words); m != nil && c.gap == 0 {
		c.minStep, _ = strconv.Atoi(m[1])
		c.minFrom, _ = strconv.Atoi(cmpOr(m[2], "00"))
	} else {
		for _, m := range reMark.FindAllStringSubmatch(reClock.ReplaceAllString(words, ""), -1) {
			k, _ := strconv.Atoi(m[1])
			c.minutes = append(c.minutes, k)
		}
	}
	return c
}

func cmpOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// check returns why the local instant at contradicts the claims, or "".
func (c claims) check(at time.Time) string {
	tod := at.Format("15:04:05")
	dim := daysIn(at.Year(), at.Month())
	switch {
	case len(c.weekdays) > 0 && !slices.Contains(c.weekdays, at.Weekday()):
		return "not on the weekdays named"
	case len(c.monthDays) > 0 && !slices.Contains(c.monthDays, at.Day()) && !slices.Contains(c.monthDays, at.Day()-dim-1):
		return "not on the days of the month named"
	case len(c.times) > 0 && c.from == "" && len(c.minutes) == 0 && !slices.Contains(c.times, tod):
		return "not at the times named"
	case len(c.minutes) > 0 && !slices.Contains(c.minutes, at.Minute()):
		return "not at the minutes named"
	case c.minStep > 0 && (at.Minute()-c.minFrom)%c.minStep != 0:
		return "not on the minute step named"
	case len(c.hours) > 0 && !slices.Contains(c.hours, at.Hour()):
		return "not in the hours named"
	case c.from != "" && (tod < c.from || tod > c.to):
		return "not within the range of times named"
	}
	if nths, ok := c.nths[at.Weekday()]; ok && nths != nil {
		first := (at.Day()-1)/7 + 1
		last := -((dim-at.Day())/7 + 1)
		if !slices.Contains(nths, first) && !slices.Contains(nths, last) {
			return "not the occurrence of the weekday named"
		}
	}
	return ""
}

func TestDescribePolicies(t *testing.T) {
	t.Parallel()
	start := "2026-05-01T09:00:00Z"
	weekdays := []contracts.DayOfWeek{contracts.Monday, contracts.Tuesday, contracts.Wednesday, contracts.Thursday, contracts.Friday}
	tests := []struct {
		name string
		rec  contracts.Recurrence
		want string
	}{
		{"business days of the month", contracts.Recurrence{Frequency: contracts.FrequencyMonth,
			Schedule: &contracts.Schedule{MonthlyBusinessDays: []int{-1, 1, 3}, Hours: []int{9}, Minutes: []int{0}}},
			"on the 1st, 3rd and last business day of each month at 09:00 UTC"},
		{"business days every quarter", contracts.Recurrence{Frequency: contracts.FrequencyMonth, Interval: intp(3),
			Schedule: &contracts.Schedule{MonthlyBusinessDays: []int{-2}}},
			"every 3 months on the 2nd-to-last business day at 09:00 UTC"},
		{"an excluded calendar skips", contracts.Recurrence{Frequency: contracts.FrequencyDay, ExcludedCalendars: []string{"us"}},
			`every day at 09:00 UTC, not on dates calendar "us" holds`},
		{"two excluded calendars move to the next business day", contracts.Recurrence{Frequency: contracts.FrequencyWeek, TimeZone: "Europe/Berlin",
			Schedule: &contracts.Schedule{WeekDays: weekdays, Hours: []int{9}, Minutes: []int{0}}, ExcludedCalendars: []string{"de", "company"},
			OnExcludedDay: contracts.ExcludedDayNextBusiness},
			`every weekday at 09:00 Europe/Berlin, moved to the same time on the next business day when calendars "de" and "company" hold the date`},
		{"an excluded calendar moves to the previous business day", contracts.Recurrence{Frequency: contracts.FrequencyMonth, ExcludedCalendars: []string{"us"},
			OnExcludedDay: contracts.ExcludedDayPrevBusiness, Count: intp(12)},
			`on the 1st of each month at 09:00 UTC, 12 times, moved to the same time on the previous business day when calendar "us" holds the date`},
		{"a flexible window", contracts.Recurrence{Frequency: contracts.FrequencyHour, FlexibleWindow: "PT15M"},
			"every hour at :00, each run starting within 15 minutes after its time"},
		{"a flexible window of hours with a calendar", contracts.Recurrence{Frequency: contracts.FrequencyDay, FlexibleWindow: "02:00:00", ExcludedCalendars: []string{"us"}},
			`every day at 09:00 UTC, not on dates calendar "us" holds, each run starting within 2 hours after its time`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Describe(startOf(t, start), &tt.rec); got != tt.want {
				t.Errorf("Describe = %q\n          want %q", got, tt.want)
			}
		})
	}
}
