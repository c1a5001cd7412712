package contracts

import (
	"fmt"
)

// DecodedCalendar is a calendar read by DecodeCalendar.
type DecodedCalendar struct {
	Properties CalendarProperties
	// Prefix is "properties." when the input was the ARM envelope and ""
	// when it was the bare properties object, as DecodedJob.Prefix.
	Prefix string
}

// DecodeCalendar reads a calendar as forgivingly as DecodeJob reads a job:
// the ARM envelope {"properties": {...}} or the bare properties object,
// property names and weekday names in any case, a date given as an object
// {"date", "name"} or as a bare "YYYY-MM-DD" string. It reports every
// problem with its JSON path, checks the rules too (ValidateCalendar), and
// when there is none returns the calendar in its stored form
// (NormalizeCalendar: dates sorted and unique, ranges sorted). A body
// larger than MaxCalendarBytes is reported and still read.
func DecodeCalendar(data []byte) (DecodedCalendar, FieldErrors) {
	rep := &report{}
	if len(data) > MaxCalendarBytes {
		rep.addRoot(fmt.Sprintf("the calendar is %d bytes; the limit is %d bytes (64 KB)", len(data), MaxCalendarBytes))
	}
	top, ok := readDocument(data, rep)
	if !ok {
		return DecodedCalendar{}, rep.result()
	}
	var c DecodedCalendar
	props := top
	if top.has("properties") {
		c.Prefix = envelopePrefix
		props = object{path: "properties", rep: rep}
		if o, ok := top.get("properties").object(); ok {
			props = o
		}
	}
	c.Properties = readCalendarProperties(props)
	errs := rep.result()
	ValidateCalendar(&c.Properties, c.Prefix, &errs)
	if len(errs) == 0 {
		NormalizeCalendar(&c.Properties)
	}
	return c, errs
}

func readCalendarProperties(o object) CalendarProperties {
	p := CalendarProperties{Description: o.str("description")}
	for _, f := range o.get("dates").list() {
		if d, ok := readCalendarDate(f); ok {
			p.Dates = append(p.Dates, d)
		}
	}
	for _, f := range o.get("ranges").list() {
		if r, ok := readDateRange(f); ok {
			p.Ranges = append(p.Ranges, r)
		}
	}
	for _, f := range o.get("yearly").list() {
		if y, ok := readYearlyDate(f); ok {
			p.Yearly = append(p.Yearly, y)
		}
	}
	return p
}

// readCalendarDate reads {"date": "2026-12-25", "name": "..."} or a bare
// date string.
func readCalendarDate(f field) (CalendarDate, bool) {
	if _, isString := f.value.(string); isString {
		d, ok := readDate(f)
		return CalendarDate{Date: d}, ok
	}
	if !f.given() {
		f.fail("must not be null")
		return CalendarDate{}, false
	}
	o, ok := f.object()
	if !ok {
		return CalendarDate{}, false
	}
	date := o.get("date")
	if !date.given() {
		date.fail("required: a date YYYY-MM-DD")
		return CalendarDate{}, false
	}
	d, ok := readDate(date)
	return CalendarDate{Date: d, Name: o.str("name")}, ok
}

func readDateRange(f field) (DateRange, bool) {
	if !f.given() {
		f.fail("must not be null")
		return DateRange{}, false
	}
	o, ok := f.object()
	if !ok {
		return DateRange{}, false
	}
	start, end := o.get("start"), o.get("end")
	for _, b := range []field{start, end} {
		if !b.given() {
			b.fail("required: a date YYYY-MM-DD")
		}
	}
	s, okStart := readDate(start)
	e, okEnd := readDate(end)
	return DateRange{Start: s, End: e, Name: o.str("name")}, okStart && okEnd
}

func readYearlyDate(f field) (YearlyDate, bool) {
	if !f.given() {
		f.fail("must not be null")
		return YearlyDate{}, false
	}
	o, ok := f.object()
	if !ok {
		return YearlyDate{}, false
	}
	day, weekDay, occurrence, month := o.get("day"), o.get("weekDay"), o.get("occurrence"), o.get("month")
	y := YearlyDate{Name: o.str("name"), Day: day.integer(), Occurrence: occurrence.integer()}
	ok = true
	if weekDay.given() {
		y.WeekDay, ok = enum(weekDay, DaysOfWeek)
	}
	// A value that could not be read is reported; the rule is left out
	// rather than also reported as lacking it.
	ok = ok && (y.Day != nil) == day.given() && (y.Occurrence != nil) == occurrence.given()
	if !month.given() {
		month.fail("required: a month from 1 to 12")
		return y, false
	}
	m := month.integer()
	if m == nil {
		return y, false
	}
	y.Month = *m
	return y, ok
}

// readDate returns the value as a date YYYY-MM-DD; ok is false when it is
// not given or not such a date (which is reported).
func readDate(f field) (string, bool) {
	s, ok := f.str()
	if !ok {
		return "", false
	}
	if _, err := ParseCalendarDate(s); err != nil {
		f.fail("%v", err)
		return "", false
	}
	return s, true
}
