package contracts

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of a calendar.
const (
	// MaxCalendarBytes is the largest calendar body accepted: 64 KB.
	MaxCalendarBytes = 64 * 1024
	// MaxCalendarEntries bounds the dates, ranges and yearly rules of a
	// calendar together.
	MaxCalendarEntries = 1000
	// MaxCalendarNameLength is the longest name of a date, range or rule,
	// in characters.
	MaxCalendarNameLength = 100
	// MaxDateRangeYears bounds a range: its end is before the same day
	// this many years after its start.
	MaxDateRangeYears = 3
)

// calendarDateLayout is the form of a calendar date.
const calendarDateLayout = "2006-01-02"

// ParseCalendarDate reads a date YYYY-MM-DD that exists (no 2026-02-30),
// as midnight UTC.
func ParseCalendarDate(s string) (time.Time, error) {
	t, err := time.Parse(calendarDateLayout, s)
	if err != nil || t.Format(calendarDateLayout) != s || t.Year() < 1 {
		return time.Time{}, fmt.Errorf("%q is not a date of the form YYYY-MM-DD that exists, such as 2026-12-25", s)
	}
	return t, nil
}

// FormatCalendarDate writes the date of t (in its own zone) as YYYY-MM-DD.
func FormatCalendarDate(t time.Time) string { return t.Format(calendarDateLayout) }

// ValidateCalendar appends the violations of the calendar's rules to errs,
// with paths under prefix ("properties." or ""), unless a path has one
// already: every date exists; a range ends on or after its start and
// spans less than MaxDateRangeYears; a yearly rule has a month 1–12 and
// exactly one of day (±1…±31, a day that month has in some year) and
// weekDay with occurrence (±1…±5); names are at most
// MaxCalendarNameLength characters; and there are at most
// MaxCalendarEntries dates, ranges and rules together.
func ValidateCalendar(p *CalendarProperties, prefix string, errs *FieldErrors) {
	if n := len(p.Dates) + len(p.Ranges) + len(p.Yearly); n > MaxCalendarEntries {
		errs.Add(strings.TrimSuffix(prefix, "."), "the calendar holds %d dates, ranges and yearly rules; the limit is %d in all", n, MaxCalendarEntries)
	}
	for i, d := range p.Dates {
		path := fmt.Sprintf("%sdates[%d]", prefix, i)
		if _, err := ParseCalendarDate(d.Date); err != nil {
			errs.Add(path+".date", "%v", err)
		}
		validateCalendarName(d.Name, path, errs)
	}
	for i, r := range p.Ranges {
		path := fmt.Sprintf("%sranges[%d]", prefix, i)
		validateDateRange(r, path, errs)
		validateCalendarName(r.Name, path, errs)
	}
	for i, y := range p.Yearly {
		path := fmt.Sprintf("%syearly[%d]", prefix, i)
		validateYearlyDate(y, path, errs)
		validateCalendarName(y.Name, path, errs)
	}
}

func validateCalendarName(name, path string, errs *FieldErrors) {
	if n := utf8.RuneCountInString(name); n > MaxCalendarNameLength {
		errs.Add(path+".name", "is %d characters long; the limit is %d", n, MaxCalendarNameLength)
	}
}

func validateDateRange(r DateRange, path string, errs *FieldErrors) {
	start, errStart := ParseCalendarDate(r.Start)
	end, errEnd := ParseCalendarDate(r.End)
	if errStart != nil {
		errs.Add(path+".start", "%v", errStart)
	}
	if errEnd != nil {
		errs.Add(path+".end", "%v", errEnd)
	}
	switch {
	case errStart != nil || errEnd != nil:
	case end.Before(start):
		errs.Add(path+".end", "%s is before the start %s; a range holds the dates from start to end, both included", r.End, r.Start)
	case !end.Before(start.AddDate(MaxDateRangeYears, 0, 0)):
		errs.Add(path+".end", "the range from %s to %s is longer than %d years, the limit; split it or use yearly rules", r.Start, r.End, MaxDateRangeYears)
	}
}

// daysInMonth is the most days each month has in any year.
var daysInMonth = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func validateYearlyDate(y YearlyDate, path string, errs *FieldErrors) {
	monthOK := y.Month >= 1 && y.Month <= 12
	if !monthOK {
		errs.Add(path+".month", "%d is not a month; use 1 (January) to 12 (December)", y.Month)
	}
	hasWeekDay := y.WeekDay != "" || y.Occurrence != nil
	switch {
	case y.Day != nil && hasWeekDay:
		errs.Add(path, "give either day, or weekDay with occurrence, not both")
	case y.Day != nil:
		d := *y.Day
		switch {
		case d == 0 || d < -31 || d > 31:
			errs.Add(path+".day", "%d is not a day of a month; use 1 to 31, or -1 (the last day) to -31", d)
		case monthOK && abs(d) > daysInMonth[y.Month]:
			errs.Add(path+".day", "month %d has at most %d days, so day %d never comes", y.Month, daysInMonth[y.Month], d)
		}
	case !hasWeekDay:
		errs.Add(path, "give day (such as 25), or weekDay with occurrence (such as Thursday and 4)")
	default:
		checkEnum(errs, path+".weekDay", y.WeekDay, DaysOfWeek, true)
		switch {
		case y.Occurrence == nil:
			errs.Add(path+".occurrence", "required with weekDay; use 1 to 5, or -1 (the last) to -5")
		case *y.Occurrence == 0 || *y.Occurrence < -5 || *y.Occurrence > 5:
			errs.Add(path+".occurrence", "%d is not an occurrence; use 1 to 5, or -1 (the last) to -5", *y.Occurrence)
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// NormalizeCalendar puts a valid calendar in its stored form: dates sorted
// and unique (the first name given for a date is kept), ranges sorted by
// start then end. Yearly rules keep their order.
func NormalizeCalendar(p *CalendarProperties) {
	slices.SortStableFunc(p.Dates, func(a, b CalendarDate) int { return strings.Compare(a.Date, b.Date) })
	p.Dates = slices.CompactFunc(p.Dates, func(a, b CalendarDate) bool { return a.Date == b.Date })
	slices.SortStableFunc(p.Ranges, func(a, b DateRange) int {
		return cmp.Or(strings.Compare(a.Start, b.Start), strings.Compare(a.End, b.End))
	})
}
