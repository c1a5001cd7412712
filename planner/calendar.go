package planner

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// This file compiles a holiday calendar (contracts.CalendarProperties) into
// a form the recurrence engine asks quickly: does the calendar hold a local
// date, and which days of a month does it hold (a bit mask, for business
// days). A calendar's dates are local dates: they hold in the time zone of
// the job that excludes them.

// Calendar is a compiled holiday calendar. It is immutable and safe for
// concurrent use.
type Calendar struct {
	name   string
	dates  []heldDate  // single dates, ascending by day, one per day
	ranges []heldRange // ascending by first day
	yearly [12][]yearlyRule
}

type heldDate struct {
	days int64
	name string
}

type heldRange struct {
	from, to int64 // day numbers, both included
	name     string
}

// yearlyRule holds one date of a month every year: a fixed day (negative
// from the month's end), or the nth weekday (±1…±5).
type yearlyRule struct {
	name    string
	day     int // ±1…±31; 0 for a weekday rule
	weekday time.Weekday
	nth     int
}

// CompileCalendar compiles the calendar called name. It expects properties
// that passed validation, but reports an unparsable date or an out-of-range
// rule as an error rather than failing later.
func CompileCalendar(name string, p *contracts.CalendarProperties) (*Calendar, error) {
	c := &Calendar{name: name}
	if p == nil {
		return c, nil
	}
	for i, d := range p.Dates {
		days, err := parseCivilDate(d.Date)
		if err != nil {
			return nil, fmt.Errorf("calendar %s: dates[%d]: %w", name, i, err)
		}
		c.dates = append(c.dates, heldDate{days: days, name: d.Name})
	}
	// Ascending, the first name given for a day kept.
	slices.SortStableFunc(c.dates, func(a, b heldDate) int { return cmp.Compare(a.days, b.days) })
	c.dates = slices.CompactFunc(c.dates, func(a, b heldDate) bool { return a.days == b.days })
	for i, r := range p.Ranges {
		from, err := parseCivilDate(r.Start)
		if err != nil {
			return nil, fmt.Errorf("calendar %s: ranges[%d].start: %w", name, i, err)
		}
		to, err := parseCivilDate(r.End)
		if err != nil {
			return nil, fmt.Errorf("calendar %s: ranges[%d].end: %w", name, i, err)
		}
		if to < from {
			return nil, fmt.Errorf("calendar %s: ranges[%d]: end %s is before start %s", name, i, r.End, r.Start)
		}
		c.ranges = append(c.ranges, heldRange{from: from, to: to, name: r.Name})
	}
	slices.SortStableFunc(c.ranges, func(a, b heldRange) int { return cmp.Compare(a.from, b.from) })
	for i, y := range p.Yearly {
		if y.Month < 1 || y.Month > 12 {
			return nil, fmt.Errorf("calendar %s: yearly[%d].month: %d is not a month 1–12", name, i, y.Month)
		}
		rule := yearlyRule{name: y.Name}
		switch {
		case y.Day != nil && y.WeekDay == "":
			if d := *y.Day; d == 0 || d < -31 || d > 31 {
				return nil, fmt.Errorf("calendar %s: yearly[%d].day: %d is not a day 1–31 or -31…-1", name, i, d)
			}
			rule.day = *y.Day
		case y.Day == nil && y.WeekDay != "":
			if !slices.Contains(contracts.DaysOfWeek, y.WeekDay) {
				return nil, fmt.Errorf("calendar %s: yearly[%d].weekDay: %q is not a day of the week", name, i, y.WeekDay)
			}
			if y.Occurrence == nil || *y.Occurrence == 0 || *y.Occurrence < -5 || *y.Occurrence > 5 {
				return nil, fmt.Errorf("calendar %s: yearly[%d].occurrence: a weekday rule needs an occurrence ±1…±5", name, i)
			}
			rule.weekday, rule.nth = weekdayOf(y.WeekDay), *y.Occurrence
		default:
			return nil, fmt.Errorf("calendar %s: yearly[%d]: give exactly one of day and weekDay", name, i)
		}
		c.yearly[y.Month-1] = append(c.yearly[y.Month-1], rule)
	}
	return c, nil
}

// parseCivilDate returns the day number of a YYYY-MM-DD date.
func parseCivilDate(s string) (int64, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a date YYYY-MM-DD", s)
	}
	y, m, d := t.Date()
	return daysFromCivil(y, m, d), nil
}

// Name returns the calendar's name.
func (c *Calendar) Name() string { return c.name }

// Holds reports whether the calendar holds the local date y-m-d.
func (c *Calendar) Holds(y int, m time.Month, d int) bool {
	return c.holds(daysFromCivil(y, m, d))
}

// MonthMask returns the days of month y-m the calendar holds: bit d for day d.
func (c *Calendar) MonthMask(y int, m time.Month) uint64 {
	return c.monthMask(y, m, daysFromCivil(y, m, 1))
}

// Holiday returns the name of what holds y-m-d (a date's, a range's or a
// yearly rule's name, in that order; "" when it has none) and whether the
// calendar holds the date at all.
func (c *Calendar) Holiday(y int, m time.Month, d int) (string, bool) {
	return c.holiday(daysFromCivil(y, m, d))
}

func (c *Calendar) holds(days int64) bool {
	y, m, d := civilFromDays(days)
	return c.monthMask(y, m, days-int64(d)+1)&(1<<uint(d)) != 0
}

// monthMask is MonthMask for the month y-m that starts on day number first.
func (c *Calendar) monthMask(y int, m time.Month, first int64) uint64 {
	dim := int64(daysIn(y, m))
	var mask uint64
	i, _ := slices.BinarySearchFunc(c.dates, first, func(h heldDate, days int64) int { return cmp.Compare(h.days, days) })
	for ; i < len(c.dates) && c.dates[i].days < first+dim; i++ {
		mask |= 1 << uint(c.dates[i].days-first+1)
	}
	for _, r := range c.ranges {
		if r.from >= first+dim {
			break
		}
		if r.to < first {
			continue
		}
		lo, hi := max(r.from, first)-first+1, min(r.to, first+dim-1)-first+1
		mask |= (1<<uint(hi+1) - 1) &^ (1<<uint(lo) - 1)
	}
	for _, rule := range c.yearly[m-1] {
		if d := rule.dayIn(int(dim), weekdayOfDays(first)); d > 0 {
			mask |= 1 << uint(d)
		}
	}
	return mask
}

// dayIn returns the day of a month with dim days, whose first day is a
// firstWeekday, that the rule holds, or 0 when the month has no such day.
func (r yearlyRule) dayIn(dim int, firstWeekday time.Weekday) int {
	switch {
	case r.day > 0 && r.day <= dim:
		return r.day
	case r.day < 0 && -r.day <= dim:
		return dim + 1 + r.day
	case r.day != 0:
		return 0
	}
	firstDay := 1 + (int(r.weekday)-int(firstWeekday)+7)%7
	if r.nth > 0 {
		if d := firstDay + 7*(r.nth-1); d <= dim {
			return d
		}
		return 0
	}
	last := firstDay + 7*((dim-firstDay)/7)
	if d := last + 7*(r.nth+1); d >= 1 {
		return d
	}
	return 0
}

func (c *Calendar) holiday(days int64) (string, bool) {
	if i, ok := slices.BinarySearchFunc(c.dates, days, func(h heldDate, d int64) int { return cmp.Compare(h.days, d) }); ok {
		return c.dates[i].name, true
	}
	for _, r := range c.ranges {
		if r.from <= days && days <= r.to {
			return r.name, true
		}
	}
	y, m, d := civilFromDays(days)
	first := days - int64(d) + 1
	for _, rule := range c.yearly[m-1] {
		if rule.dayIn(daysIn(y, m), weekdayOfDays(first)) == d {
			return rule.name, true
		}
	}
	return "", false
}
