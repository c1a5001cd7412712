package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// This file renders a job's schedule as short, exact English for people:
// the CLI's job listings and, later, a web console. The words say what the
// recurrence engine (recurrence.go) computes, by the rules of
// shared/design/recurrence.md, including what a schedule inherits from the
// start time.

// listedTimesMax is the most times of day listed one by one; more are
// written compactly ("every 10 minutes in hours 05, 10, 15 and 20").
const listedTimesMax = 6

// Describe returns when a job with start time start (nil: none, the job
// starts when created) and recurrence r (nil: none, the job runs once)
// runs, in words: "once, at 2026-05-01 09:00 UTC", "every 15 minutes, 10
// times", "every weekday at 09:00 Europe/Berlin", "on the last Friday of
// each month at 17:00 UTC, until 2027-01-01 00:00 UTC". Times of day are
// wall-clock times in the recurrence's time zone, which is named. It
// expects a definition that passed validation; an element its frequency
// does not use is named as ignored.
func Describe(start *time.Time, r *contracts.Recurrence) string {
	if r == nil {
		if start == nil {
			return "once, when created"
		}
		return "once, at " + wallInstant(*start, time.UTC, "UTC")
	}
	d := newDescriber(start, r)
	var s string
	if r.Schedule == nil {
		s = d.grid()
	} else {
		s = d.schedule()
	}
	if r.Count != nil {
		s += ", " + pluralize(*r.Count, "time")
	}
	if r.EndTime != nil {
		s += ", until " + wallInstant(*r.EndTime, d.loc, d.zone)
	}
	return s + d.policies()
}

// policies describes the excluded calendars, what happens on a date they
// hold, and the flexible window: ", not on dates calendar "holidays"
// holds, each run starting within 30 minutes after its time".
func (d *describer) policies() string {
	var s string
	if n := len(d.r.ExcludedCalendars); n > 0 {
		var names []string
		for _, name := range d.r.ExcludedCalendars {
			names = append(names, contracts.QuoteName(name))
		}
		held := "calendar " + names[0] + " holds"
		if n > 1 {
			held = "calendars " + joinAnd(names) + " hold"
		}
		switch d.r.OnExcludedDay {
		case contracts.ExcludedDayNextBusiness:
			s += ", moved to the same time on the next business day when " + held + " the date"
		case contracts.ExcludedDayPrevBusiness:
			s += ", moved to the same time on the previous business day when " + held + " the date"
		default:
			s += ", not on dates " + held
		}
	}
	if d.r.FlexibleWindow != "" {
		if w, err := contracts.ParseDuration(d.r.FlexibleWindow); err == nil && w >= time.Second {
			s += ", each run starting within " + formatDuration(w.Truncate(time.Second)) + " after its time"
		}
	}
	return s
}

// describer holds what Describe needs of one recurrence.
type describer struct {
	r        *contracts.Recurrence
	interval int
	loc      *time.Location
	zone     string    // the zone's name as shown: the IANA name, or UTC
	hasStart bool      // false: the anchor is the creation time, unknown here
	a        time.Time // the start time in loc
}

func newDescriber(start *time.Time, r *contracts.Recurrence) *describer {
	d := &describer{r: r, interval: r.IntervalOrDefault(), loc: time.UTC, zone: "UTC"}
	if r.TimeZone != "" {
		if loc, err := contracts.LoadZone(r.TimeZone); err == nil {
			d.loc, d.zone = loc, r.TimeZone
		}
	}
	if start != nil {
		d.hasStart, d.a = true, start.In(d.loc)
	}
	return d
}

// every returns "every day" or "every 3 days".
func (d *describer) every(unit string) string {
	if d.interval == 1 {
		return "every " + unit
	}
	return "every " + pluralize(d.interval, unit)
}

// at returns " at 09:00 Europe/Berlin": the start time's time of day.
func (d *describer) at() string {
	h, m, s := d.a.Clock()
	return " at " + clock(h, m, s) + " " + d.zone
}

// grid describes a recurrence without a schedule: the start time plus
// multiples of the interval ("The grid").
func (d *describer) grid() string {
	const created = " on the %s and at the time it was created"
	switch d.r.Frequency {
	case contracts.FrequencyMinute:
		return d.every("minute")
	case contracts.FrequencyHour:
		if !d.hasStart {
			return d.every("hour")
		}
		return d.every("hour") + " at " + minuteMark(d.a.Minute(), d.a.Second()) + d.minuteZone()
	case contracts.FrequencyDay:
		if !d.hasStart {
			return d.every("day") + " at the time it was created"
		}
		return d.every("day") + d.at()
	case contracts.FrequencyWeek:
		if !d.hasStart {
			return d.every("week") + fmt.Sprintf(created, "weekday")
		}
		if d.interval == 1 {
			return "every " + d.a.Weekday().String() + d.at()
		}
		return d.every("week") + " on " + d.a.Weekday().String() + d.at()
	case contracts.FrequencyMonth:
		if !d.hasStart {
			return d.every("month") + fmt.Sprintf(created, "day")
		}
		return d.monthly("the "+ordinal(d.a.Day())) + d.at()
	case contracts.FrequencyYear:
		if !d.hasStart {
			return d.every("year") + fmt.Sprintf(created, "date")
		}
		return d.every("year") + " on " + d.date() + d.at()
	}
	return d.every(strings.ToLower(string(d.r.Frequency)))
}

// monthly returns "on the 1st of each month" or "every 2 months on the 1st".
func (d *describer) monthly(days string) string {
	if d.interval == 1 {
		return "on " + days + " of each month"
	}
	return d.every("month") + " on " + days
}

// date returns the start time's day and month: "29 February".
func (d *describer) date() string {
	return strconv.Itoa(d.a.Day()) + " " + d.a.Month().String()
}

// minuteZone names the zone after a phrase that names only minutes of the
// hour, which read the same in UTC and most zones: only when one was set.
func (d *describer) minuteZone() string {
	if d.r.TimeZone == "" {
		return ""
	}
	return " " + d.zone
}

// schedule describes a recurrence with a schedule ("The schedule").
func (d *describer) schedule() string {
	sc := d.r.Schedule
	s := d.scheduleWords(sc)
	if !d.hasStart {
		// The no-start cases of the startTime table: the first run is at
		// creation, even off-schedule.
		s = "when created, then " + s
	}
	var ignored []string
	if len(sc.WeekDays) > 0 && d.r.Frequency != contracts.FrequencyWeek {
		ignored = append(ignored, "weekDays")
	}
	if len(sc.MonthDays) > 0 && d.r.Frequency != contracts.FrequencyMonth {
		ignored = append(ignored, "monthDays")
	}
	if len(sc.MonthlyOccurrences) > 0 && d.r.Frequency != contracts.FrequencyMonth {
		ignored = append(ignored, "monthlyOccurrences")
	}
	if len(ignored) > 0 {
		s += fmt.Sprintf(" (%s ignored with frequency %s)", joinAnd(ignored), d.r.Frequency)
	}
	return s
}

func (d *describer) scheduleWords(sc *contracts.Schedule) string {
	hours, minutes := sortedSet(sc.Hours), sortedSet(sc.Minutes)
	switch d.r.Frequency {
	case contracts.FrequencyMinute:
		return d.minuteSchedule(hours, minutes)
	case contracts.FrequencyHour:
		return d.hourSchedule(hours, minutes)
	}
	days := d.days(sc)
	// Rules 3–5: the hours, every hour when only minutes are given, else
	// the start's hour; the minutes, else the start's; second 0 when
	// minutes are given, else the start's.
	second := 0
	switch {
	case len(hours) == 0 && len(minutes) > 0:
		hours = allOf(24)
	case len(hours) == 0 && d.hasStart:
		hours = []int{d.a.Hour()}
	}
	if len(minutes) == 0 && d.hasStart {
		minutes, second = []int{d.a.Minute()}, d.a.Second()
	}
	switch {
	case len(hours) == 0:
		return days + " at the time it was created"
	case len(minutes) == 0:
		return days + " in hours " + hourList(hours) + " " + d.zone + ", at the minute it was created"
	case len(hours) == 24 && days == "every day":
		// The day adds nothing to "every 15 minutes".
		return timesOfDay(hours, minutes, second, d.minuteZone())
	}
	return joinPhrases(days, timesOfDay(hours, minutes, second, " "+d.zone))
}

// joinPhrases joins a phrase of days and one of times: "every Monday at
// 09:00", "every Monday, every 15 minutes".
func joinPhrases(days, times string) string {
	if strings.HasPrefix(times, "every") {
		return days + ", " + times
	}
	return days + " " + times
}

// days describes the days of a calendar schedule's periods (rule 2).
func (d *describer) days(sc *contracts.Schedule) string {
	switch d.r.Frequency {
	case contracts.FrequencyWeek:
		var set []time.Weekday
		for _, w := range sc.WeekDays {
			set = append(set, weekdayOf(w))
		}
		if len(set) == 0 {
			if !d.hasStart {
				return d.every("week") + " on the weekday it was created"
			}
			set = []time.Weekday{d.a.Weekday()}
		}
		return d.weekly(set)
	case contracts.FrequencyMonth:
		days, when := d.monthDays(sc)
		return d.monthly(days) + when
	case contracts.FrequencyYear:
		if !d.hasStart {
			return d.every("year") + " on the date it was created"
		}
		return d.every("year") + " on " + d.date()
	}
	return d.every("day")
}

// weekly returns "every Monday and Thursday", "every weekday" or "every 2
// weeks on Monday".
func (d *describer) weekly(set []time.Weekday) string {
	slices.SortFunc(set, func(a, b time.Weekday) int { return isoWeekday(a) - isoWeekday(b) })
	set = slices.Compact(set)
	var names string
	switch {
	case len(set) == 7:
		names = "day"
	case slices.Equal(set, []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}):
		names = "weekday"
	default:
		var s []string
		for _, w := range set {
			s = append(s, w.String())
		}
		names = joinAnd(s)
	}
	if d.interval == 1 {
		return "every " + names
	}
	if names == "day" || names == "weekday" {
		return d.every("week") + " on every " + names
	}
	return d.every("week") + " on " + names
}

// monthDays describes the days of a month: "the 1st, 15th and last day",
// "the first and last Friday"; and when both month days and occurrences
// are given, the condition the occurrences add: ", when it is a Friday".
func (d *describer) monthDays(sc *contracts.Schedule) (string, string) {
	if len(sc.MonthlyBusinessDays) > 0 {
		return "the " + positions(sc.MonthlyBusinessDays) + " business day", ""
	}
	var byDay, byOccurrence string
	if len(sc.MonthDays) > 0 {
		byDay = "the " + positions(sc.MonthDays)
		if slices.Min(sc.MonthDays) < 0 {
			byDay += " day"
		}
	}
	if len(sc.MonthlyOccurrences) > 0 {
		byOccurrence = occurrences(sc.MonthlyOccurrences)
	}
	switch {
	case byDay != "" && byOccurrence != "":
		when := strings.ReplaceAll(strings.ReplaceAll(byOccurrence, " and ", " or "), "every ", "a ")
		return byDay, ", when it is " + when
	case byDay != "":
		return byDay, ""
	case byOccurrence != "":
		return byOccurrence, ""
	case d.hasStart:
		return "the " + ordinal(d.a.Day()), ""
	}
	return "the day it was created", ""
}

// positions names days counted from a month's start or end: "1st, 15th,
// 2nd-to-last and last".
func positions(ns []int) string {
	days := sortedSet(ns)
	slices.SortFunc(days, fromStartThenEnd)
	var words []string
	for _, n := range days {
		switch {
		case n > 0:
			words = append(words, ordinal(n))
		case n == -1:
			words = append(words, "last")
		default:
			words = append(words, ordinal(-n)+"-to-last")
		}
	}
	return joinAnd(words)
}

// occurrences returns "the first and last Friday", "every Monday and the
// second Tuesday": the occurrences grouped by weekday, Monday first.
func occurrences(os []contracts.MonthlyOccurrence) string {
	byDay := map[time.Weekday][]int{}
	every := map[time.Weekday]bool{}
	var order []time.Weekday
	for _, o := range os {
		w := weekdayOf(o.Day)
		if !every[w] && byDay[w] == nil {
			order = append(order, w)
		}
		if o.Occurrence == nil {
			every[w] = true
			byDay[w] = []int{}
			continue
		}
		byDay[w] = append(byDay[w], *o.Occurrence)
	}
	slices.SortFunc(order, func(a, b time.Weekday) int { return isoWeekday(a) - isoWeekday(b) })
	var groups []string
	for _, w := range order {
		if every[w] {
			groups = append(groups, "every "+w.String())
			continue
		}
		nths := sortedSet(byDay[w])
		slices.SortFunc(nths, fromStartThenEnd)
		var words []string
		for _, n := range nths {
			words = append(words, nthWord(n))
		}
		groups = append(groups, "the "+joinAnd(words)+" "+w.String())
	}
	return joinAnd(groups)
}

// fromStartThenEnd orders positions in a month counted from its start
// before those counted from its end (negative), each in calendar order:
// 1, 15, -2, -1.
func fromStartThenEnd(a, b int) int {
	if (a > 0) != (b > 0) {
		return b - a
	}
	return a - b
}

// nthWord names an occurrence of a weekday in a month: "first", "last",
// "second-to-last".
func nthWord(n int) string {
	words := []string{"", "first", "second", "third", "fourth", "fifth"}
	switch {
	case n == -1:
		return "last"
	case n < 0 && -n < len(words):
		return words[-n] + "-to-last"
	case n > 0 && n < len(words):
		return words[n]
	}
	return strconv.Itoa(n)
}

// hourSchedule: elapsed hours from the start truncated to the hour, every
// interval-th; in each the minutes (else the start's minute); hours filter.
func (d *describer) hourSchedule(hours, minutes []int) string {
	second := 0
	if len(minutes) == 0 && d.hasStart {
		minutes, second = []int{d.a.Minute()}, d.a.Second()
	}
	if d.interval == 1 && len(minutes) > 0 {
		// Every hour: the hours × minutes of each day.
		return d.timesOfEveryDay(hours, minutes, second)
	}
	s := d.every("hour")
	if len(minutes) > 0 {
		s += " at " + minuteMarks(minutes, second)
	}
	return s + d.hoursFilter(hours)
}

// minuteSchedule: elapsed minutes from the start truncated to the minute,
// every interval-th, filtered by minutes and hours.
func (d *describer) minuteSchedule(hours, minutes []int) string {
	if d.interval == 1 {
		second := 0
		if len(minutes) == 0 {
			minutes = allOf(60)
			if d.hasStart {
				second = d.a.Second()
			}
		}
		return d.timesOfEveryDay(hours, minutes, second)
	}
	s := d.every("minute")
	if len(minutes) > 0 {
		s += ", only at " + minuteMarks(minutes, 0)
	}
	return s + d.hoursFilter(hours)
}

// timesOfEveryDay describes hours (none: all) × minutes on every day.
func (d *describer) timesOfEveryDay(hours, minutes []int, second int) string {
	if len(hours) == 0 {
		return timesOfDay(allOf(24), minutes, second, d.minuteZone())
	}
	return joinPhrases("every day", timesOfDay(hours, minutes, second, " "+d.zone))
}

// hoursFilter returns ", only in hours 09–17 Europe/Berlin", or "" when
// there is no hours filter.
func (d *describer) hoursFilter(hours []int) string {
	if len(hours) == 0 {
		return d.minuteZone()
	}
	return ", only in hours " + hourList(hours) + " " + d.zone
}

// timesOfDay describes the times of day hours × minutes at second, in the
// zone named by zone (" UTC", or ""): listed ("at 09:00 and 17:30 UTC")
// when few, else compactly ("every 15 minutes", "every hour at :00 and
// :30", "every 10 minutes from 08:00 to 17:50 UTC", "at :07 and :37 in
// hours 05, 10 and 15 UTC (6 times a day)").
func timesOfDay(hours, minutes []int, second int, zone string) string {
	if len(hours)*len(minutes) <= listedTimesMax {
		var times []string
		for _, h := range hours {
			for _, m := range minutes {
				times = append(times, clock(h, m, second))
			}
		}
		return "at " + joinAnd(times) + zone
	}
	step, stepped := minuteStep(minutes)
	perHour := "at " + minuteMarks(minutes, second)
	if stepped {
		perHour = "every " + pluralize(step, "minute")
		if step == 1 {
			perHour = "every minute"
		}
		if minutes[0] != 0 {
			perHour += " from " + minuteMark(minutes[0], second)
		}
	}
	runs := hourRuns(hours)
	switch {
	case len(hours) == 24 && stepped:
		return perHour + zone
	case len(hours) == 24:
		return "every hour " + perHour + zone
	case len(runs) == 1 && stepped:
		return fmt.Sprintf("%s from %s to %s%s", strings.Split(perHour, " from ")[0],
			clock(runs[0][0], minutes[0], second), clock(runs[0][1], minutes[len(minutes)-1], second), zone)
	}
	return fmt.Sprintf("%s in hours %s%s (%d times a day)", perHour, hourList(hours), zone, len(hours)*len(minutes))
}

// minuteStep reports whether three or more minutes are equally spaced over
// the whole hour (0, 15, 30, 45; 5, 25, 45), and their spacing.
func minuteStep(minutes []int) (int, bool) {
	if len(minutes) < 3 {
		return 0, false
	}
	step := minutes[1] - minutes[0]
	if 60%step != 0 || len(minutes) != 60/step {
		return 0, false
	}
	for i := 1; i < len(minutes); i++ {
		if minutes[i]-minutes[i-1] != step {
			return 0, false
		}
	}
	return step, true
}

// hourRuns groups ascending hours into runs of consecutive hours.
func hourRuns(hours []int) [][2]int {
	var runs [][2]int
	for _, h := range hours {
		if n := len(runs); n > 0 && runs[n-1][1] == h-1 {
			runs[n-1][1] = h
			continue
		}
		runs = append(runs, [2]int{h, h})
	}
	return runs
}

// hourList returns "05, 10 and 20" or "09–17 and 20": runs of three or more
// consecutive hours as a range.
func hourList(hours []int) string {
	var words []string
	for _, r := range hourRuns(hours) {
		switch {
		case r[1]-r[0] >= 2:
			words = append(words, fmt.Sprintf("%02d–%02d", r[0], r[1]))
		case r[1] > r[0]:
			words = append(words, fmt.Sprintf("%02d", r[0]), fmt.Sprintf("%02d", r[1]))
		default:
			words = append(words, fmt.Sprintf("%02d", r[0]))
		}
	}
	return joinAnd(words)
}

// minuteMarks returns ":00 and :30".
func minuteMarks(minutes []int, second int) string {
	var marks []string
	for _, m := range minutes {
		marks = append(marks, minuteMark(m, second))
	}
	return joinAnd(marks)
}

// minuteMark returns ":05", or ":05:30" when the second is not 0.
func minuteMark(m, s int) string {
	if s != 0 {
		return fmt.Sprintf(":%02d:%02d", m, s)
	}
	return fmt.Sprintf(":%02d", m)
}

// clock returns "09:05", or "09:05:30" when the second is not 0.
func clock(h, m, s int) string {
	return fmt.Sprintf("%02d", h) + minuteMark(m, s)
}

// wallInstant returns "2026-05-01 09:00 Europe/Berlin": t's wall clock in
// loc, whose name is zone.
func wallInstant(t time.Time, loc *time.Location, zone string) string {
	t = t.In(loc)
	h, m, s := t.Clock()
	return t.Format("2006-01-02") + " " + clock(h, m, s) + " " + zone
}

// ordinal returns "1st", "22nd", "13th".
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// pluralize returns "1 time" or "10 times".
func pluralize(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// joinAnd returns "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// sortedSet returns the values ascending, without duplicates, in a new slice.
func sortedSet(values []int) []int {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

// allOf returns 0…n-1.
func allOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
