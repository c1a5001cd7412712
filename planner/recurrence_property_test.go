package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// The property tests compare the engine, which jumps to periods arithmetically,
// with an oracle that walks every local day (or every elapsed step) of a
// window and tests each candidate against the rules of recurrence.md read
// literally. Random definitions cover every frequency, schedules that expand
// and limit, negative month days, nth weekdays, counts, end times and zones
// with daylight saving (including Lord Howe's 30-minute shift and Santiago's
// midnight changes).

var propertyZones = []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Sydney",
	"Asia/Kolkata", "Australia/Lord_Howe", "America/Santiago"}

// randomJob returns a random valid job and a creation time.
func randomJob(r *rand.Rand) (contracts.JobProperties, time.Time) {
	intp := func(i int) *int { return &i }
	zone := propertyZones[r.IntN(len(propertyZones))]
	loc, _ := time.LoadLocation(zone)
	start := time.Date(2000+r.IntN(40), time.Month(1+r.IntN(12)), 1+r.IntN(31), r.IntN(24), r.IntN(60), r.IntN(60), 0, loc)
	created := start.Add(time.Duration(r.Int64N(int64(3*365*24*time.Hour))) - 365*24*time.Hour).Truncate(time.Second)

	freq := contracts.Frequencies[r.IntN(len(contracts.Frequencies))]
	rec := &contracts.Recurrence{Frequency: freq, TimeZone: zone}
	if r.IntN(2) == 0 {
		limits := map[contracts.Frequency]int{"Minute": 90, "Hour": 30, "Day": 10, "Week": 5, "Month": 18, "Year": 1}
		rec.Interval = intp(1 + r.IntN(limits[freq]))
	}
	if r.IntN(3) == 0 {
		rec.Count = intp(1 + r.IntN(30))
	}
	if r.IntN(4) == 0 {
		end := created.Add(time.Duration(r.Int64N(int64(400 * 24 * time.Hour)))).Truncate(time.Second)
		rec.EndTime = &end
	}
	if r.IntN(4) != 0 {
		rec.Schedule = randomElements(r, freq)
	}
	p := contracts.JobProperties{Recurrence: rec}
	if r.IntN(5) != 0 {
		p.StartTime = &start
	}
	return p, created
}

func randomElements(r *rand.Rand, freq contracts.Frequency) *contracts.Schedule {
	sample := func(lo, hi, most int) []int {
		var out []int
		for range 1 + r.IntN(most) {
			out = append(out, lo+r.IntN(hi-lo+1))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	sc := &contracts.Schedule{}
	if r.IntN(2) == 0 {
		sc.Hours = sample(0, 23, 4)
	}
	if r.IntN(2) == 0 {
		sc.Minutes = sample(0, 59, 4)
	}
	switch freq {
	case contracts.FrequencyWeek:
		if r.IntN(3) != 0 {
			for _, i := range sample(0, 6, 4) {
				sc.WeekDays = append(sc.WeekDays, contracts.DaysOfWeek[i])
			}
		}
	case contracts.FrequencyMonth:
		if r.IntN(2) == 0 {
			for _, d := range sample(1, 62, 3) {
				if d > 31 {
					d = 31 - d // -1 … -31
				}
				sc.MonthDays = append(sc.MonthDays, d)
			}
		}
		if r.IntN(2) == 0 {
			for range 1 + r.IntN(2) {
				o := contracts.MonthlyOccurrence{Day: contracts.DaysOfWeek[r.IntN(7)]}
				if n := r.IntN(11) - 5; n != 0 {
					o.Occurrence = &n
				}
				sc.MonthlyOccurrences = append(sc.MonthlyOccurrences, o)
			}
		}
	}
	return sc
}

// oracle lists every occurrence of p in [from, until], created at created,
// by brute force. The immediate run of a job without a start time is not
// included (First covers it).
func oracle(p *contracts.JobProperties, created, from, until time.Time) []time.Time {
	var out []time.Time
	for _, o := range oracleBase(p, created, from, until, nil) {
		out = append(out, o.at)
	}
	return out
}

// oracleOcc is an occurrence of the oracle with the wall-clock time of day
// (seconds) it was scheduled at; -1 for elapsed schedules.
type oracleOcc struct {
	at  time.Time
	tod int
}

// oracleBase is oracle before excluded calendars apply, with the time of
// day of each occurrence; held says which local dates the excluded
// calendars hold (nil: none), for monthlyBusinessDays.
func oracleBase(p *contracts.JobProperties, created, from, until time.Time, held func(y int, m time.Month, d int) bool) []oracleOcc {
	rec := p.Recurrence
	loc, _ := time.LoadLocation(rec.TimeZone)
	a := created.Truncate(time.Second)
	if p.StartTime != nil {
		a = *p.StartTime
	}
	a = a.In(loc)
	interval := rec.IntervalOrDefault()
	var out []oracleOcc
	keepAt := func(t time.Time, tod int) {
		if !t.Before(a) && !t.Before(from) && !t.After(until) && (rec.EndTime == nil || !t.After(*rec.EndTime)) {
			out = append(out, oracleOcc{t.UTC(), tod})
		}
	}
	switch rec.Frequency {
	case contracts.FrequencyMinute, contracts.FrequencyHour:
		oracleElapsed(rec, a, loc, interval, from, until, func(t time.Time) { keepAt(t, -1) })
	default:
		oracleCalendar(rec, a, loc, interval, from, until, held, keepAt)
	}
	slices.SortStableFunc(out, func(x, y oracleOcc) int { return x.at.Compare(y.at) })
	return slices.CompactFunc(out, func(x, y oracleOcc) bool { return x.at.Equal(y.at) })
}

func oracleElapsed(rec *contracts.Recurrence, a time.Time, loc *time.Location, interval int, from, until time.Time, keep func(time.Time)) {
	unit := time.Minute
	if rec.Frequency == contracts.FrequencyHour {
		unit = time.Hour
	}
	step := time.Duration(interval) * unit
	sc := rec.Schedule
	if sc == nil {
		for t := a; !t.After(until); t = t.Add(step) {
			keep(t)
		}
		return
	}
	h, m, s := a.Clock()
	second := s
	if len(sc.Minutes) > 0 {
		second = 0
	}
	var periodStart time.Time
	if unit == time.Hour {
		periodStart = a.Add(-time.Duration(m)*time.Minute - time.Duration(s)*time.Second)
	} else {
		periodStart = a.Add(-time.Duration(s) * time.Second)
	}
	_ = h
	for p := periodStart; !p.After(until); p = p.Add(step) {
		var candidates []time.Time
		if unit == time.Hour {
			minutes := sc.Minutes
			if len(minutes) == 0 {
				minutes = []int{m}
			}
			for _, mm := range minutes {
				candidates = append(candidates, p.Add(time.Duration(mm)*time.Minute+time.Duration(second)*time.Second))
			}
		} else {
			candidates = append(candidates, p.Add(time.Duration(second)*time.Second))
		}
		for _, c := range candidates {
			lc := c.In(loc)
			if len(sc.Hours) > 0 && !slices.Contains(sc.Hours, lc.Hour()) {
				continue
			}
			if unit == time.Minute && len(sc.Minutes) > 0 && !slices.Contains(sc.Minutes, lc.Minute()) {
				continue
			}
			keep(c)
		}
	}
}

func oracleCalendar(rec *contracts.Recurrence, a time.Time, loc *time.Location, interval int, from, until time.Time,
	held func(int, time.Month, int) bool, keep func(time.Time, int)) {
	ay, am, ad := a.Date()
	ah, amin, as := a.Clock()
	aWeekday := a.Weekday()
	sc := rec.Schedule
	// Times of day.
	type hms struct{ h, m, s int }
	times := []hms{{ah, amin, as}}
	if sc != nil {
		hours, minutes, second := sc.Hours, sc.Minutes, as
		if len(minutes) > 0 {
			second = 0
			if len(hours) == 0 {
				hours = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}
			}
		}
		if len(hours) == 0 {
			hours = []int{ah}
		}
		if len(minutes) == 0 {
			minutes = []int{amin}
		}
		times = nil
		for _, h := range hours {
			for _, m := range minutes {
				times = append(times, hms{h, m, second})
			}
		}
	}
	aMonday := time.Date(ay, am, ad, 12, 0, 0, 0, time.UTC).AddDate(0, 0, -((int(aWeekday) + 6) % 7))
	// Walk every local date from two days before the window.
	fy, fm, fd := from.In(loc).AddDate(0, 0, -2).Date()
	day := time.Date(fy, fm, fd, 12, 0, 0, 0, time.UTC)
	if aDay := time.Date(ay, am, ad, 12, 0, 0, 0, time.UTC); day.Before(aDay) {
		day = aDay
	}
	for ; !day.After(until.AddDate(0, 0, 2)); day = day.AddDate(0, 0, 1) {
		y, mo, d := day.Date()
		dim := time.Date(y, mo+1, 0, 12, 0, 0, 0, time.UTC).Day()
		var unit int
		switch rec.Frequency {
		case contracts.FrequencyDay:
			unit = int(day.Sub(time.Date(ay, am, ad, 12, 0, 0, 0, time.UTC)).Hours() / 24)
		case contracts.FrequencyWeek:
			unit = int(day.Sub(aMonday).Hours()/24) / 7
		case contracts.FrequencyMonth:
			unit = (y-ay)*12 + int(mo-am)
		case contracts.FrequencyYear:
			unit = y - ay
		}
		if unit < 0 || unit%interval != 0 {
			continue
		}
		var onDay bool
		switch {
		case rec.Frequency == contracts.FrequencyDay:
			onDay = true
		case rec.Frequency == contracts.FrequencyYear:
			onDay = mo == am && d == ad
		case rec.Frequency == contracts.FrequencyWeek:
			onDay = day.Weekday() == aWeekday
			if sc != nil && len(sc.WeekDays) > 0 {
				onDay = slices.Contains(sc.WeekDays, contracts.DaysOfWeek[(int(day.Weekday())+6)%7])
			}
		default: // month
			onDay = d == ad
			if sc != nil && (len(sc.MonthDays) > 0 || len(sc.MonthlyOccurrences) > 0) {
				onDay = oracleMonthDay(sc, d, dim, day.Weekday())
			}
			if sc != nil && len(sc.MonthlyBusinessDays) > 0 {
				onDay = oracleBusinessDayOfMonth(sc.MonthlyBusinessDays, y, mo, d, held)
			}
		}
		if !onDay {
			continue
		}
		for _, tm := range times {
			keep(contracts.WallClock(loc, y, mo, d, tm.h, tm.m, tm.s), tm.h*3600+tm.m*60+tm.s)
		}
	}
}

// oracleMonthDay tests day d of a month with dim days against monthDays and
// monthlyOccurrences by their definitions.
func oracleMonthDay(sc *contracts.Schedule, d, dim int, wd time.Weekday) bool {
	byDay := false
	for _, md := range sc.MonthDays {
		if md == d || (md < 0 && dim+1+md == d) {
			byDay = true
		}
	}
	byOcc := false
	for _, o := range sc.MonthlyOccurrences {
		if contracts.DaysOfWeek[(int(wd)+6)%7] != o.Day {
			continue
		}
		nth, fromEnd := (d-1)/7+1, -((dim-d)/7 + 1)
		if o.Occurrence == nil || *o.Occurrence == nth || *o.Occurrence == fromEnd {
			byOcc = true
		}
	}
	switch {
	case len(sc.MonthDays) > 0 && len(sc.MonthlyOccurrences) > 0:
		return byDay && byOcc
	case len(sc.MonthDays) > 0:
		return byDay
	}
	return byOcc
}

func TestEngineMatchesTheOracle(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2016, 3))
	runs := 1500
	if testing.Short() {
		runs = 200
	}
	for i := range runs {
		p, created := randomJob(r)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkAgainstOracle(t, &p, created)
		})
	}
}

func checkAgainstOracle(t *testing.T, p *contracts.JobProperties, created time.Time) {
	t.Helper()
	describe := func() string {
		return fmt.Sprintf("start %v created %v recurrence %+v schedule %+v", p.StartTime, created, *p.Recurrence, p.Recurrence.Schedule)
	}
	s, err := NewSchedule(p, created)
	if err != nil {
		t.Fatalf("%s: %v", describe(), err)
	}
	window := oracleSpan(p.Recurrence.Frequency)
	from := created.Truncate(time.Second)
	if p.StartTime != nil && p.StartTime.After(from) {
		from = *p.StartTime
	}
	until := from.Add(window)
	want := oracle(p, created, from, until)
	if p.StartTime == nil { // the immediate run, then occurrences after it
		want = slices.DeleteFunc(want, func(x time.Time) bool { return !x.After(from) })
		want = append([]time.Time{from.UTC()}, want...)
		if p.Recurrence.EndTime != nil && from.After(*p.Recurrence.EndTime) {
			want = nil
		}
	}
	var got []time.Time
	for at, ok := s.First(); ok && !at.After(until); at, ok = s.Next(at) {
		if n := len(got); n > 0 && !at.After(got[n-1]) {
			t.Fatalf("%s: instants do not increase: %s then %s", describe(), got[n-1], at)
		}
		got = append(got, at)
		if len(got) > 5000 {
			break
		}
	}
	if len(got) > 5000 { // a long list: compare what was taken
		want = want[:min(len(want), len(got))]
	}
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("%s:\n got %v\nwant %v", describe(), firstN(got, 12), firstN(want, 12))
	}
	// count: Upcoming never returns more than count.
	if c := s.Count(); c > 0 {
		if n := len(s.Upcoming(c + 5)); n > c {
			t.Fatalf("%s: %d occurrences for count %d", describe(), n, c)
		}
	}
	// endTime: nothing after it.
	if e := p.Recurrence.EndTime; e != nil {
		for _, at := range s.Upcoming(200) {
			if at.After(*e) {
				t.Fatalf("%s: occurrence %s after endTime %s", describe(), at, e)
			}
		}
	}
}

// oracleSpan is a span of time long enough to hold several occurrences of
// any schedule of frequency f.
func oracleSpan(f contracts.Frequency) time.Duration {
	return map[contracts.Frequency]time.Duration{"Minute": 3 * 24 * time.Hour, "Hour": 20 * 24 * time.Hour,
		"Day": 120 * 24 * time.Hour, "Week": 400 * 24 * time.Hour, "Month": 3 * 365 * 24 * time.Hour, "Year": 30 * 365 * 24 * time.Hour}[f]
}

func firstN(ts []time.Time, n int) []string {
	if len(ts) > n {
		ts = ts[:n]
	}
	return formatAll(ts)
}

// The policies' property test adds to random jobs random excluded calendars
// (dates and ranges around the span checked, yearly rules), an action on
// excluded days, a flexible window and monthly business days, and compares
// the engine with the oracle's occurrences filtered by the rules read
// literally: an occurrence on a held local date is skipped, or moved to the
// same wall-clock time on the nearest business day (Monday to Friday, held
// by no excluded calendar), dropped before the anchor or after the end.

// namedCalendar is a calendar of a random job's collection.
type namedCalendar struct {
	name  string
	props contracts.CalendarProperties
}

// oracleHolds reports by definition whether a calendar holds y-m-d.
func oracleHolds(cp *contracts.CalendarProperties, y int, m time.Month, d int) bool {
	date := fmt.Sprintf("%04d-%02d-%02d", y, m, d)
	for _, x := range cp.Dates {
		if x.Date == date {
			return true
		}
	}
	for _, r := range cp.Ranges {
		if r.Start <= date && date <= r.End { // YYYY-MM-DD order as strings
			return true
		}
	}
	dim := time.Date(y, m+1, 0, 12, 0, 0, 0, time.UTC).Day()
	wd := time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Weekday()
	for _, yr := range cp.Yearly {
		if time.Month(yr.Month) != m {
			continue
		}
		if yr.Day != nil {
			if *yr.Day == d || (*yr.Day < 0 && dim+1+*yr.Day == d) {
				return true
			}
			continue
		}
		nth, fromEnd := (d-1)/7+1, -((dim-d)/7 + 1)
		if contracts.DaysOfWeek[(int(wd)+6)%7] == yr.WeekDay && (*yr.Occurrence == nth || *yr.Occurrence == fromEnd) {
			return true
		}
	}
	return false
}

// oracleBusinessDayOfMonth reports whether y-m-d is one of the business days
// of its month at positions (1 the first, -1 the last).
func oracleBusinessDayOfMonth(positions []int, y int, m time.Month, d int, held func(int, time.Month, int) bool) bool {
	var business []int
	dim := time.Date(y, m+1, 0, 12, 0, 0, 0, time.UTC).Day()
	for day := 1; day <= dim; day++ {
		wd := time.Date(y, m, day, 12, 0, 0, 0, time.UTC).Weekday()
		if wd != time.Saturday && wd != time.Sunday && (held == nil || !held(y, m, day)) {
			business = append(business, day)
		}
	}
	for _, k := range positions {
		i := k - 1
		if k < 0 {
			i = len(business) + k
		}
		if i >= 0 && i < len(business) && business[i] == d {
			return true
		}
	}
	return false
}

// excludedHolds returns whether a calendar that rec excludes holds a date.
func excludedHolds(rec *contracts.Recurrence, cals []namedCalendar) func(int, time.Month, int) bool {
	var excluded []*contracts.CalendarProperties
	for i := range cals {
		if slices.Contains(rec.ExcludedCalendars, cals[i].name) {
			excluded = append(excluded, &cals[i].props)
		}
	}
	return func(y int, m time.Month, d int) bool {
		for _, cp := range excluded {
			if oracleHolds(cp, y, m, d) {
				return true
			}
		}
		return false
	}
}

// oracleWithPolicies lists the occurrences of p in [from, until] by brute
// force, with the excluded calendars among cals applied.
func oracleWithPolicies(p *contracts.JobProperties, created, from, until time.Time, cals []namedCalendar) []time.Time {
	rec := p.Recurrence
	loc, _ := time.LoadLocation(rec.TimeZone)
	held := excludedHolds(rec, cals)
	business := func(day time.Time) bool {
		wd := day.Weekday()
		return wd != time.Saturday && wd != time.Sunday && !held(day.Date())
	}
	anchor := created.Truncate(time.Second)
	if p.StartTime != nil {
		anchor = *p.StartTime
	}
	var out []time.Time
	for _, o := range oracleBase(p, created, from.AddDate(0, 0, -60), until.AddDate(0, 0, 60), held) {
		y, m, d := o.at.In(loc).Date()
		if !held(y, m, d) {
			out = append(out, o.at)
			continue
		}
		step := 0
		switch rec.OnExcludedDay {
		case contracts.ExcludedDayNextBusiness:
			step = 1
		case contracts.ExcludedDayPrevBusiness:
			step = -1
		}
		if step == 0 {
			continue
		}
		day := time.Date(y, m, d, 12, 0, 0, 0, time.UTC)
		for day = day.AddDate(0, 0, step); !business(day); day = day.AddDate(0, 0, step) {
		}
		e := contracts.WallClock(loc, day.Year(), day.Month(), day.Day(), o.tod/3600, o.tod/60%60, o.tod%60)
		if e.Before(anchor) || (rec.EndTime != nil && e.After(*rec.EndTime)) {
			continue
		}
		out = append(out, e.UTC())
	}
	out = slices.DeleteFunc(out, func(t time.Time) bool { return t.Before(from) || t.After(until) })
	slices.SortFunc(out, func(x, y time.Time) int { return x.Compare(y) })
	return slices.CompactFunc(out, func(x, y time.Time) bool { return x.Equal(y) })
}

// addRandomPolicies gives a random job excluded calendars (returned),
// an action on excluded days, a flexible window and, for some monthly
// jobs, business days of the month.
func addRandomPolicies(r *rand.Rand, p *contracts.JobProperties, created time.Time) []namedCalendar {
	rec := p.Recurrence
	loc, _ := time.LoadLocation(rec.TimeZone)
	from := created
	if p.StartTime != nil && p.StartTime.After(from) {
		from = *p.StartTime
	}
	lo := from.In(loc).AddDate(0, 0, -15)
	spanDays := int(oracleSpan(rec.Frequency).Hours()/24) + 30
	var cals []namedCalendar
	for i := range 1 + r.IntN(2) {
		c := namedCalendar{name: fmt.Sprintf("cal-%d", i)}
		for j := range r.IntN(40) {
			day := lo.AddDate(0, 0, r.IntN(spanDays))
			c.props.Dates = append(c.props.Dates, contracts.CalendarDate{Date: day.Format(time.DateOnly), Name: fmt.Sprintf("date %d", j)})
		}
		for range r.IntN(3) {
			start := lo.AddDate(0, 0, r.IntN(spanDays))
			c.props.Ranges = append(c.props.Ranges, contracts.DateRange{Start: start.Format(time.DateOnly),
				End: start.AddDate(0, 0, r.IntN(10)).Format(time.DateOnly), Name: "range"})
		}
		for range r.IntN(5) {
			y := contracts.YearlyDate{Name: "yearly", Month: 1 + r.IntN(12)}
			if r.IntN(2) == 0 {
				d := 1 + r.IntN(31)
				if r.IntN(3) == 0 {
					d = -d
				}
				y.Day = &d
			} else {
				n := 1 + r.IntN(5)
				if r.IntN(2) == 0 {
					n = -n
				}
				y.WeekDay, y.Occurrence = contracts.DaysOfWeek[r.IntN(7)], &n
			}
			c.props.Yearly = append(c.props.Yearly, y)
		}
		if p.StartTime != nil && r.IntN(3) == 0 { // the start's own date, every year
			d := p.StartTime.In(loc).Day()
			c.props.Yearly = append(c.props.Yearly, contracts.YearlyDate{Name: "anniversary", Month: int(p.StartTime.In(loc).Month()), Day: &d})
		}
		cals = append(cals, c)
	}
	if r.IntN(6) != 0 {
		for _, c := range cals {
			if r.IntN(4) != 0 || len(rec.ExcludedCalendars) == 0 {
				rec.ExcludedCalendars = append(rec.ExcludedCalendars, c.name)
			}
		}
		actions := []contracts.ExcludedDayAction{"", contracts.ExcludedDaySkip}
		if rec.Frequency != contracts.FrequencyMinute && rec.Frequency != contracts.FrequencyHour {
			actions = append(actions, contracts.ExcludedDayNextBusiness, contracts.ExcludedDayNextBusiness, contracts.ExcludedDayPrevBusiness, contracts.ExcludedDayPrevBusiness)
		}
		rec.OnExcludedDay = actions[r.IntN(len(actions))]
	}
	if r.IntN(2) == 0 {
		period := int64(periodFloor[rec.Frequency]/time.Second) * int64(rec.IntervalOrDefault())
		rec.FlexibleWindow = fmt.Sprintf("PT%dS", 1+r.Int64N(period))
	}
	if rec.Frequency == contracts.FrequencyMonth && r.IntN(3) == 0 {
		if rec.Schedule == nil {
			rec.Schedule = &contracts.Schedule{}
		}
		rec.Schedule.MonthDays, rec.Schedule.MonthlyOccurrences = nil, nil
		for range 1 + r.IntN(3) {
			k := 1 + r.IntN(23)
			if r.IntN(2) == 0 {
				k = -k
			}
			rec.Schedule.MonthlyBusinessDays = append(rec.Schedule.MonthlyBusinessDays, k)
		}
	}
	return cals
}

func TestEngineWithPoliciesMatchesTheOracle(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2026, 11))
	runs := 1500
	if testing.Short() {
		runs = 200
	}
	for i := range runs {
		p, created := randomJob(r)
		cals := addRandomPolicies(r, &p, created)
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkPoliciesAgainstOracle(t, &p, created, cals)
		})
	}
}

func checkPoliciesAgainstOracle(t *testing.T, p *contracts.JobProperties, created time.Time, named []namedCalendar) {
	t.Helper()
	rec := p.Recurrence
	describe := func() string {
		return fmt.Sprintf("start %v created %v recurrence %+v schedule %+v calendars %+v", p.StartTime, created, *rec, rec.Schedule, named)
	}
	var cals []*Calendar
	for _, c := range named {
		compiled, err := CompileCalendar(c.name, &c.props)
		if err != nil {
			t.Fatalf("%s: %v", describe(), err)
		}
		cals = append(cals, compiled)
	}
	s, err := NewSchedule(p, created, cals...)
	if err != nil {
		t.Fatalf("%s: %v", describe(), err)
	}
	loc := s.Location()
	held := excludedHolds(rec, named)
	from := created.Truncate(time.Second)
	if p.StartTime != nil && p.StartTime.After(from) {
		from = *p.StartTime
	}
	until := from.Add(oracleSpan(rec.Frequency))
	want := oracleWithPolicies(p, created, from, until, named)
	if p.StartTime == nil { // the immediate run unless its date is held, then occurrences after it
		want = slices.DeleteFunc(want, func(x time.Time) bool { return !x.After(from) })
		if !held(from.In(loc).Date()) {
			want = append([]time.Time{from.UTC()}, want...)
		}
		if rec.EndTime != nil && from.After(*rec.EndTime) {
			want = nil
		}
	}
	var got []time.Time
	for at, ok := s.First(); ok && !at.After(until); at, ok = s.Next(at) {
		if n := len(got); n > 0 && !at.After(got[n-1]) {
			t.Fatalf("%s: instants do not increase: %s then %s", describe(), got[n-1], at)
		}
		got = append(got, at)
		if len(got) > 5000 {
			break
		}
	}
	if len(got) > 5000 {
		want = want[:min(len(want), len(got))]
	}
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Fatalf("%s:\n got %v\nwant %v", describe(), firstN(got, 12), firstN(want, 12))
	}
	// Next from just before each occurrence finds it.
	for i := 1; i < min(len(got), 200); i++ {
		if next, ok := s.Next(got[i].Add(-time.Second)); !ok || !next.Equal(got[i]) {
			t.Fatalf("%s: Next(%s - 1s) = %s, %v; want %s", describe(), got[i], next, ok, got[i])
		}
	}
	// No occurrence runs on a held date; a moved one runs on a business
	// day; each is due within its window.
	window := s.Window()
	for _, o := range s.UpcomingDetail("job-"+describe(), 60) {
		y, m, d := o.At.In(loc).Date()
		switch {
		case o.Skipped:
			if !held(y, m, d) {
				t.Fatalf("%s: %s skipped on a date no excluded calendar holds", describe(), o.At)
			}
			continue
		case held(y, m, d):
			t.Fatalf("%s: %s runs on a held date", describe(), o.At)
		case o.Moved():
			if wd := o.At.In(loc).Weekday(); wd == time.Saturday || wd == time.Sunday {
				t.Fatalf("%s: %s moved from %s to a %s", describe(), o.At, o.MovedFrom, wd)
			}
			if fy, fm, fd := o.MovedFrom.In(loc).Date(); !held(fy, fm, fd) {
				t.Fatalf("%s: %s moved from %s, a date no calendar holds", describe(), o.At, o.MovedFrom)
			}
		}
		if o.Due.Before(o.At) || (window > 0 && !o.Due.Before(o.At.Add(window))) || (window == 0 && !o.Due.Equal(o.At)) {
			t.Fatalf("%s: due %s outside [%s, +%s)", describe(), o.Due, o.At, window)
		}
	}
	if c := s.Count(); c > 0 {
		if n := len(s.Upcoming(c + 5)); n > c {
			t.Fatalf("%s: %d occurrences for count %d", describe(), n, c)
		}
	}
}
