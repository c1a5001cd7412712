package planner

import (
	"errors"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // every IANA zone, whatever the host has installed

	"github.com/jobscheduler/scheduler/contracts"
)

// This file is the recurrence engine: given a job's start time and recurrence,
// and the time the job was created, which instants does it run at? The rules
// are those of shared/design/recurrence.md; comments cite them.
//
// Every computation jumps to the period that contains the instant asked about
// (day numbers, month numbers, elapsed steps) and searches forward from there,
// so the cost does not depend on how long ago the job started.

// ErrNeverFires is returned for a definition that can never produce an
// occurrence.
var ErrNeverFires = errors.New("schedule never fires")

// scanLimit bounds the periods searched for the next occurrence. The
// Gregorian calendar repeats every 400 years (4,800 months); a schedule with no
// occurrence within that many periods has none at all.
const scanLimit = 4800 + 2

// elapsedScanLimit bounds the steps of a minute or hour schedule whose hours
// or minutes filter the elapsed grid.
const elapsedScanLimit = 500_000

type ruleKind uint8

const (
	kindOnce             ruleKind = iota // no recurrence: one run
	kindElapsedGrid                      // minute/hour, no schedule: A + k·I units
	kindCalendarGrid                     // day/week/month/year, no schedule: A's wall time + k·I units
	kindElapsedSchedule                  // minute/hour with a schedule: the grid, filtered
	kindCalendarSchedule                 // day/week/month/year with a schedule: periods × days × times
)

// Schedule is a job's recurrence anchored at the time the job was created: it
// answers when the job runs first and when it runs next after any instant.
// It holds no runtime state (how many occurrences have run); callers count.
// A Schedule is immutable and safe for concurrent use.
//
// The planner keeps one per job, a million of them with a million jobs, so
// the small fields sit together at the end rather than each padded to a
// word: that keeps a Schedule within 256 bytes, an allocator size class,
// instead of 288 (TestScheduleSize).
type Schedule struct {
	loc      *time.Location
	created  int64 // unix seconds
	anchor   int64 // A: the start time, or the creation time when there is none
	freq     contracts.Frequency
	interval int64
	count    int   // 0: no limit
	end      int64 // with hasEnd

	// A's wall clock in loc.
	aDays                int64 // day number of A's local date
	aYear                int
	aMonth               time.Month
	aDay                 int
	aHour, aMin, aSecond int

	// Schedule elements, as sets (with hours, weekDays and the flags
	// below).
	minutes     uint64 // bit m
	monthDays   uint64 // bit d for d in 1…31; bit 32+k for -k
	occurrences []monthlyOccurrence

	times  []int64 // calendar schedules: seconds after local midnight, ascending
	offs   []int64 // hour schedules: seconds after the period start, ascending
	second int64   // the second of the minute an occurrence has
	step   int64   // elapsed kinds: I units in seconds
	base   int64   // elapsed schedules: start of period 0

	// policy holds the scheduling policies (flexible window, excluded
	// calendars, business days) of the jobs that name any; nil for the
	// others, so that they pay one word.
	policy *policy

	hours                uint32 // bit h
	kind                 ruleKind
	weekDays             uint8 // bit time.Weekday
	immediate            bool  // no start time: the first run is at creation, even off-schedule
	hasEnd               bool
	hasHours, hasMinutes bool
	hasDays              bool // weekDays, monthDays, monthlyOccurrences or monthlyBusinessDays given
}

type monthlyOccurrence struct {
	weekday time.Weekday
	nth     int // ±1…±5; 0 for every such day
}

// NewSchedule compiles the start time and recurrence of p, for a job created
// (or re-enabled) at created. It expects a definition that passed validation
// of its recurrence fields; it does not check ranges itself. cals are the
// calendars of the job's collection, or at least those its recurrence names
// in excludedCalendars: one named but not given is an error wrapping
// ErrCalendarMissing.
func NewSchedule(p *contracts.JobProperties, created time.Time, cals ...*Calendar) (*Schedule, error) {
	return newSchedule(p, created, true, cals)
}

// NewStoredSchedule is NewSchedule for a stored job, whose calendars may
// have changed since it was written: an excluded calendar that cals lacks
// (deleted in a race with the job's write) holds no date, so the job runs
// rather than stops, and its name is returned in missing for the caller
// to report.
func NewStoredSchedule(p *contracts.JobProperties, created time.Time, cals ...*Calendar) (s *Schedule, missing []string, err error) {
	if r := p.Recurrence; r != nil {
		for _, name := range r.ExcludedCalendars {
			if !slices.ContainsFunc(cals, func(c *Calendar) bool { return c != nil && strings.EqualFold(c.name, name) }) {
				missing = append(missing, name)
			}
		}
	}
	s, err = newSchedule(p, created, false, cals)
	return s, missing, err
}

// newSchedule is NewSchedule; when strict is false, excluded calendars that
// cals lacks are left out instead of being an error (validation without the
// collection's calendars).
func newSchedule(p *contracts.JobProperties, created time.Time, strict bool, cals []*Calendar) (*Schedule, error) {
	s := &Schedule{loc: time.UTC, created: created.Unix()}
	r := p.Recurrence
	if r != nil && r.TimeZone != "" {
		loc, err := contracts.LoadZone(r.TimeZone)
		if err != nil {
			return nil, err
		}
		s.loc = loc
	}
	s.anchor = s.created
	if p.StartTime != nil {
		s.anchor = p.StartTime.Unix()
	} else {
		s.immediate = true
	}
	if r == nil {
		s.kind = kindOnce
		return s, nil
	}
	s.freq = r.Frequency
	s.interval = int64(r.IntervalOrDefault())
	if s.interval < 1 {
		return nil, errors.New("interval must be at least 1")
	}
	if r.Count != nil {
		s.count = *r.Count
	}
	if r.EndTime != nil {
		s.end, s.hasEnd = r.EndTime.Unix(), true
	}

	if err := s.compilePolicy(r, strict, cals); err != nil {
		return nil, err
	}

	a := time.Unix(s.anchor, 0).In(s.loc)
	s.aYear, s.aMonth, s.aDay = a.Date()
	s.aHour, s.aMin, s.aSecond = a.Clock()
	s.aDays = daysFromCivil(s.aYear, s.aMonth, s.aDay)

	elapsed := s.freq == contracts.FrequencyMinute || s.freq == contracts.FrequencyHour
	if r.Schedule == nil {
		if elapsed {
			s.kind = kindElapsedGrid
			s.step = s.interval * unitSeconds(s.freq)
		} else {
			s.kind = kindCalendarGrid
		}
		return s, nil
	}
	if elapsed {
		s.kind = kindElapsedSchedule
	} else {
		s.kind = kindCalendarSchedule
	}
	s.compileElements(r.Schedule)
	return s, nil
}

func unitSeconds(f contracts.Frequency) int64 {
	if f == contracts.FrequencyHour {
		return 3600
	}
	return 60
}

// compileElements turns the schedule's elements into sets and the list of
// times of day (rules 2–6 of "The schedule").
func (s *Schedule) compileElements(sc *contracts.Schedule) {
	for _, h := range sc.Hours {
		s.hours |= 1 << uint(h)
	}
	for _, m := range sc.Minutes {
		s.minutes |= 1 << uint(m)
	}
	s.hasHours, s.hasMinutes = len(sc.Hours) > 0, len(sc.Minutes) > 0
	for _, d := range sc.WeekDays {
		s.weekDays |= 1 << uint(weekdayOf(d))
	}
	for _, d := range sc.MonthDays {
		if d > 0 {
			s.monthDays |= 1 << uint(d)
		} else {
			s.monthDays |= 1 << uint(32-d)
		}
	}
	for _, o := range sc.MonthlyOccurrences {
		mo := monthlyOccurrence{weekday: weekdayOf(o.Day)}
		if o.Occurrence != nil {
			mo.nth = *o.Occurrence
		}
		s.occurrences = append(s.occurrences, mo)
	}
	s.hasDays = len(sc.WeekDays) > 0 || len(sc.MonthDays) > 0 || len(sc.MonthlyOccurrences) > 0 || len(sc.MonthlyBusinessDays) > 0

	// Rule 5: second 0 when the schedule sets minutes, otherwise A's second.
	if !s.hasMinutes {
		s.second = int64(s.aSecond)
	}
	// Rule 4: the minutes, or A's minute.
	minutes := sc.Minutes
	if !s.hasMinutes {
		minutes = []int{s.aMin}
	}

	switch s.kind {
	case kindElapsedSchedule:
		if s.freq == contracts.FrequencyHour {
			// Periods are elapsed hours from A truncated to the hour; each
			// holds the minutes at the second.
			s.step = s.interval * 3600
			s.base = s.anchor - int64(s.aMin*60+s.aSecond)
			for _, m := range minutes {
				s.offs = append(s.offs, int64(m*60)+s.second)
			}
			slices.Sort(s.offs)
		} else {
			// Periods are elapsed minutes from A truncated to the minute;
			// minutes and hours filter them.
			s.step = s.interval * 60
			s.base = s.anchor - int64(s.aSecond)
		}
	case kindCalendarSchedule:
		// Rule 3: the hours; every hour when only minutes are given; else A's hour.
		hours := sc.Hours
		switch {
		case s.hasHours:
		case s.hasMinutes:
			hours = make([]int, 24)
			for h := range hours {
				hours[h] = h
			}
		default:
			hours = []int{s.aHour}
		}
		for _, h := range hours {
			for _, m := range minutes {
				s.times = append(s.times, int64(h*3600+m*60)+s.second)
			}
		}
		slices.Sort(s.times)
		s.times = slices.Compact(s.times)
	}
}

func weekdayOf(d contracts.DayOfWeek) time.Weekday {
	// contracts.DaysOfWeek runs Monday…Sunday; time.Weekday counts from Sunday.
	return time.Weekday((slices.Index(contracts.DaysOfWeek, d) + 1) % 7)
}

// Location returns the time zone the schedule's wall-clock values are in.
func (s *Schedule) Location() *time.Location { return s.loc }

// Count returns the number of occurrences after which the job completes, or 0
// when there is no limit.
func (s *Schedule) Count() int { return s.count }

// Recurring reports whether the job has a recurrence.
func (s *Schedule) Recurring() bool { return s.kind != kindOnce }

// First returns the first occurrence (the table of "The three cases"):
// without a start time, the creation time itself; with one, the first
// instant no sooner than both the start time and the creation time. It
// reports false when the job never runs. The immediate run of a job
// without a start time is never moved: on a date an excluded calendar
// holds it is skipped, and the first occurrence is the next one.
func (s *Schedule) First() (time.Time, bool) {
	switch {
	case s.kind == kindOnce:
		return unixUTC(max(s.anchor, s.created)), true
	case s.immediate:
		if s.hasEnd && s.created > s.end {
			return time.Time{}, false
		}
		if s.excludedAt(s.created) == nil {
			return unixUTC(s.created), true
		}
		return s.Next(unixUTC(s.created))
	}
	return s.Next(unixUTC(max(s.anchor, s.created) - 1))
}

// Next returns the first occurrence strictly after t, honouring the end time
// and the excluded calendars but not the count, and reports false when
// there is none. Occurrences are whole seconds in UTC.
func (s *Schedule) Next(t time.Time) (time.Time, bool) {
	after := t.Unix()
	var (
		next int64
		ok   bool
	)
	if s.policy == nil || len(s.policy.cals) == 0 {
		next, ok = s.nextBase(after)
		ok = ok && (!s.hasEnd || next <= s.end)
	} else {
		next, ok = s.nextExcluding(after)
	}
	if !ok {
		return time.Time{}, false
	}
	return unixUTC(next), true
}

// nextBase returns the first instant of the recurrence strictly after
// after, before excluded calendars and the end time apply.
func (s *Schedule) nextBase(after int64) (int64, bool) {
	if after < s.anchor {
		after = s.anchor - 1 // rule 7: no sooner than A
	}
	var (
		next int64
		ok   bool
	)
	switch s.kind {
	case kindOnce:
		return 0, false
	case kindElapsedGrid:
		next, ok = s.anchor+(floorDiv(after-s.anchor, s.step)+1)*s.step, true
	case kindCalendarGrid:
		next, ok = s.nextCalendarGrid(after)
	case kindElapsedSchedule:
		if s.freq == contracts.FrequencyHour {
			next, ok = s.nextHourSchedule(after)
		} else {
			next, ok = s.nextMinuteSchedule(after)
		}
	case kindCalendarSchedule:
		next, ok = s.nextCalendarSchedule(after)
	}
	return next, ok
}

// Resume returns the first occurrence that has not run, and its 1-based
// number: the first occurrence when the schedule has reached none, else the
// one after occurrence reached, which was due at reachedAt. An occurrence
// due before the schedule's anchor (its creation time) belongs to an earlier
// start of the schedule, and is ignored. It reports false when no
// occurrence is left: the end time has passed or the count is used up.
func (s *Schedule) Resume(reached int64, reachedAt time.Time) (time.Time, int64, bool) {
	if reached <= 0 || reachedAt.Unix() < s.created {
		at, ok := s.First()
		return at, 1, ok
	}
	n := reached + 1
	if s.count > 0 && n > int64(s.count) {
		return time.Time{}, n, false
	}
	at, ok := s.Next(reachedAt)
	return at, n, ok
}

// Upcoming returns up to n occurrences from the first, honouring the count and
// the end time: what `scheduler preview` prints.
func (s *Schedule) Upcoming(n int) []time.Time {
	if s.count > 0 {
		n = min(n, s.count)
	}
	var out []time.Time
	t, ok := s.First()
	for ok && len(out) < n {
		out = append(out, t)
		t, ok = s.Next(t)
	}
	return out
}

func unixUTC(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// localDays returns the day number of the local date of unix in s.loc.
func (s *Schedule) localDays(unix int64) int64 {
	y, m, d := time.Unix(unix, 0).In(s.loc).Date()
	return daysFromCivil(y, m, d)
}

// wallClock returns the instant of a wall-clock time on day number days.
func (s *Schedule) wallClock(days int64, secOfDay int64) int64 {
	y, m, d := civilFromDays(days)
	return contracts.WallClock(s.loc, y, m, d, int(secOfDay/3600), int(secOfDay/60%60), int(secOfDay%60)).Unix()
}

// nextCalendarGrid: A's local wall time plus k·I days, weeks, months or years;
// a date that does not exist is skipped (RFC 5545).
func (s *Schedule) nextCalendarGrid(after int64) (int64, bool) {
	tod := int64(s.aHour*3600 + s.aMin*60 + s.aSecond)
	lt := time.Unix(after, 0).In(s.loc)
	ly, lm, _ := lt.Date()
	var k int64
	switch s.freq {
	case contracts.FrequencyDay:
		k = floorDiv(s.localDays(after)-s.aDays, s.interval)
	case contracts.FrequencyWeek:
		k = floorDiv(s.localDays(after)-s.aDays, 7*s.interval)
	case contracts.FrequencyMonth:
		k = floorDiv(monthIndex(ly, lm)-monthIndex(s.aYear, s.aMonth), s.interval)
	case contracts.FrequencyYear:
		k = floorDiv(int64(ly-s.aYear), s.interval)
	}
	// Start one step early: a daylight-saving shift can put step k's instant
	// on either side of after.
	k = max(k-1, 0)
	for i := 0; i < scanLimit; i, k = i+1, k+1 {
		var days int64
		switch s.freq {
		case contracts.FrequencyDay:
			days = s.aDays + k*s.interval
		case contracts.FrequencyWeek:
			days = s.aDays + 7*k*s.interval
		case contracts.FrequencyMonth:
			y, m := fromMonthIndex(monthIndex(s.aYear, s.aMonth) + k*s.interval)
			if s.aDay > daysIn(y, m) {
				continue
			}
			days = daysFromCivil(y, m, s.aDay)
		case contracts.FrequencyYear:
			y := s.aYear + int(k*s.interval)
			if s.aDay > daysIn(y, s.aMonth) {
				continue
			}
			days = daysFromCivil(y, s.aMonth, s.aDay)
		}
		if at := s.wallClock(days, tod); at > after {
			return at, true
		}
	}
	return 0, false
}

func monthIndex(y int, m time.Month) int64 { return int64(y)*12 + int64(m) - 1 }

func fromMonthIndex(i int64) (int, time.Month) {
	return int(floorDiv(i, 12)), time.Month(floorMod(i, 12) + 1)
}

// nextCalendarSchedule: the F-periods containing A and every I-th after it
// (rule 1), their days (rule 2), and the times of day (rules 3–6).
func (s *Schedule) nextCalendarSchedule(after int64) (int64, bool) {
	afterDays := s.localDays(after)
	u := max(s.unitOf(afterDays), 0)
	u = ceilDiv(u, s.interval) * s.interval // the first period at or after after's
	var buf [31]int64
	for range scanLimit {
		for _, days := range s.periodDays(u, &buf) {
			// A daylight-saving gap just before midnight can push a day's
			// occurrence into the next day: look one day back.
			if days < afterDays-1 {
				continue
			}
			if at, ok := s.firstTimeAfter(days, after); ok {
				return at, true
			}
		}
		u += s.interval
	}
	return 0, false
}

// unitOf returns the index of the frequency unit (day, ISO week, month, year)
// that contains day number days, counted from A's.
func (s *Schedule) unitOf(days int64) int64 {
	switch s.freq {
	case contracts.FrequencyWeek:
		return floorDiv(days-s.mondayOf(s.aDays), 7)
	case contracts.FrequencyMonth:
		y, m, _ := civilFromDays(days)
		return monthIndex(y, m) - monthIndex(s.aYear, s.aMonth)
	case contracts.FrequencyYear:
		y, _, _ := civilFromDays(days)
		return int64(y - s.aYear)
	}
	return days - s.aDays
}

func (s *Schedule) mondayOf(days int64) int64 {
	return days - int64(isoWeekday(weekdayOfDays(days)))
}

// periodDays returns the day numbers of period unit u that the schedule runs
// on, ascending, using buf for storage.
func (s *Schedule) periodDays(u int64, buf *[31]int64) []int64 {
	out := buf[:0]
	switch s.freq {
	case contracts.FrequencyDay:
		out = append(out, s.aDays+u)
	case contracts.FrequencyWeek:
		monday := s.mondayOf(s.aDays) + 7*u
		if s.weekDays == 0 {
			return append(out, monday+int64(isoWeekday(weekdayOfDays(s.aDays))))
		}
		for i := range int64(7) {
			if s.weekDays&(1<<uint(weekdayOfDays(monday+i))) != 0 {
				out = append(out, monday+i)
			}
		}
	case contracts.FrequencyMonth:
		y, m := fromMonthIndex(monthIndex(s.aYear, s.aMonth) + u)
		first := daysFromCivil(y, m, 1)
		mask := s.monthMask(y, m, first)
		for d := int64(1); d <= 31; d++ {
			if mask&(1<<uint(d)) != 0 {
				out = append(out, first+d-1)
			}
		}
	case contracts.FrequencyYear:
		y := s.aYear + int(u)
		if s.aDay <= daysIn(y, s.aMonth) {
			out = append(out, daysFromCivil(y, s.aMonth, s.aDay))
		}
	}
	return out
}

// monthMask returns the days (bit d) of month y-m the schedule runs on: the
// monthDays, the monthlyOccurrences, both when both are given (a day must
// satisfy both), or A's day of month when neither is.
func (s *Schedule) monthMask(y int, m time.Month, first int64) uint64 {
	dim := daysIn(y, m)
	firstWeekday := weekdayOfDays(first)
	if s.policy != nil && len(s.policy.businessDays) > 0 {
		return s.businessDaysMask(y, m, first)
	}
	if !s.hasDays {
		if s.aDay > dim {
			return 0
		}
		return 1 << uint(s.aDay)
	}
	var byDay, byOccurrence uint64
	if s.monthDays != 0 {
		for d := 1; d <= 31; d++ {
			if d <= dim && s.monthDays&(1<<uint(d)) != 0 {
				byDay |= 1 << uint(d)
			}
			if neg := dim + 1 - d; d <= dim && s.monthDays&(1<<uint(32+d)) != 0 {
				byDay |= 1 << uint(neg)
			}
		}
	}
	for _, o := range s.occurrences {
		// The first such weekday of the month, then every 7 days.
		firstDay := 1 + (int(o.weekday)-int(firstWeekday)+7)%7
		switch {
		case o.nth == 0:
			for d := firstDay; d <= dim; d += 7 {
				byOccurrence |= 1 << uint(d)
			}
		case o.nth > 0:
			if d := firstDay + 7*(o.nth-1); d <= dim {
				byOccurrence |= 1 << uint(d)
			}
		default:
			last := firstDay + 7*((dim-firstDay)/7)
			if d := last + 7*(o.nth+1); d >= 1 {
				byOccurrence |= 1 << uint(d)
			}
		}
	}
	switch {
	case s.monthDays != 0 && len(s.occurrences) > 0:
		return byDay & byOccurrence
	case s.monthDays != 0:
		return byDay
	}
	return byOccurrence
}

// firstTimeAfter returns the earliest occurrence on local day number days
// that is later than after.
func (s *Schedule) firstTimeAfter(days int64, after int64) (int64, bool) {
	y, m, d := civilFromDays(days)
	start := contracts.WallClock(s.loc, y, m, d, 0, 0, 0)
	midnight := start.Unix()
	if s.loc == time.UTC || (!transitionWithin(s.loc, midnight) && isMidnight(start)) {
		// One offset all day: occurrences are midnight + time of day, in order.
		i, _ := slices.BinarySearch(s.times, after-midnight+1)
		if i == len(s.times) {
			return 0, false
		}
		return midnight + s.times[i], true
	}
	// A daylight-saving change today: wall times in a gap are shifted forward,
	// so wall-clock order need not be instant order. Look at every one.
	best, found := int64(0), false
	for _, tod := range s.times {
		if at := s.wallClock(days, tod); at > after && (!found || at < best) {
			best, found = at, true
		}
	}
	return best, found
}

// isMidnight reports whether t is 00:00:00 on its clock: not so when a zone
// skips midnight itself (America/Santiago springs forward at 24:00).
func isMidnight(t time.Time) bool {
	h, m, s := t.Clock()
	return h == 0 && m == 0 && s == 0
}

// transitionWithin reports whether loc changes its offset within a day of from.
func transitionWithin(loc *time.Location, from int64) bool {
	_, end := time.Unix(from, 0).In(loc).ZoneBounds()
	return !end.IsZero() && end.Unix() < from+86400
}

// nextHourSchedule: elapsed hours from A truncated to the hour, every I-th;
// in each the minutes at the second; hours filter by local hour.
func (s *Schedule) nextHourSchedule(after int64) (int64, bool) {
	p := max(floorDiv(after-s.base, s.step), 0)
	for range elapsedScanLimit {
		start := s.base + p*s.step
		for _, off := range s.offs {
			if at := start + off; at > after && (!s.hasHours || s.hourAllowed(at)) {
				return at, true
			}
		}
		p++
	}
	return 0, false
}

// nextMinuteSchedule: elapsed minutes from A truncated to the minute, every
// I-th, filtered by the local minute and hour. It skips from a minute or hour
// that is not allowed straight to the next one that is.
func (s *Schedule) nextMinuteSchedule(after int64) (int64, bool) {
	origin := s.base + s.second
	p := max(floorDiv(after-origin, s.step)+1, 0)
	for range elapsedScanLimit {
		at := origin + p*s.step
		lt := time.Unix(at, 0).In(s.loc)
		h, m, sec := lt.Clock()
		var target int64
		switch {
		case s.hasHours && s.hours&(1<<uint(h)) == 0:
			target = s.nextAllowedHour(lt)
		case s.hasMinutes && s.minutes&(1<<uint(m)) == 0:
			target = at - int64(m*60+sec) + 3600 // the next hour, unless…
			for next := m + 1; next < 60; next++ {
				if s.minutes&(1<<uint(next)) != 0 {
					target = at - int64(m*60+sec) + int64(next*60)
					break
				}
			}
		default:
			return at, true
		}
		p = max(ceilDiv(target-origin, s.step), p+1)
	}
	return 0, false
}

// nextAllowedHour returns the start of the next local hour after lt's that
// the hours filter allows.
func (s *Schedule) nextAllowedHour(lt time.Time) int64 {
	y, mo, d := lt.Date()
	days := daysFromCivil(y, mo, d)
	for h := lt.Hour() + 1; h < 24; h++ {
		if s.hours&(1<<uint(h)) != 0 {
			return s.wallClock(days, int64(h*3600))
		}
	}
	for h := range 24 {
		if s.hours&(1<<uint(h)) != 0 {
			return s.wallClock(days+1, int64(h*3600))
		}
	}
	return lt.Unix() + 3600
}

func (s *Schedule) hourAllowed(unix int64) bool {
	return s.hours&(1<<uint(time.Unix(unix, 0).In(s.loc).Hour())) != 0
}
