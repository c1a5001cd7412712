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
	rec := p.Recurrence
	loc, _ := time.LoadLocation(rec.TimeZone)
	a := created.Truncate(time.Second)
	if p.StartTime != nil {
		a = *p.StartTime
	}
	a = a.In(loc)
	interval := rec.IntervalOrDefault()
	var out []time.Time
	keep := func(t time.Time) {
		if !t.Before(a) && !t.Before(from) && !t.After(until) && (rec.EndTime == nil || !t.After(*rec.EndTime)) {
			out = append(out, t.UTC())
		}
	}
	switch rec.Frequency {
	case contracts.FrequencyMinute, contracts.FrequencyHour:
		oracleElapsed(rec, a, loc, interval, from, until, keep)
	default:
		oracleCalendar(rec, a, loc, interval, from, until, keep)
	}
	slices.SortFunc(out, func(x, y time.Time) int { return x.Compare(y) })
	return slices.CompactFunc(out, func(x, y time.Time) bool { return x.Equal(y) })
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

func oracleCalendar(rec *contracts.Recurrence, a time.Time, loc *time.Location, interval int, from, until time.Time, keep func(time.Time)) {
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
		}
		if !onDay {
			continue
		}
		for _, tm := range times {
			keep(contracts.WallClock(loc, y, mo, d, tm.h, tm.m, tm.s))
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
	// A window long enough to hold several occurrences of any frequency.
	window := map[contracts.Frequency]time.Duration{"Minute": 3 * 24 * time.Hour, "Hour": 20 * 24 * time.Hour,
		"Day": 120 * 24 * time.Hour, "Week": 400 * 24 * time.Hour, "Month": 3 * 365 * 24 * time.Hour, "Year": 30 * 365 * 24 * time.Hour}[p.Recurrence.Frequency]
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

func firstN(ts []time.Time, n int) []string {
	if len(ts) > n {
		ts = ts[:n]
	}
	return formatAll(ts)
}
