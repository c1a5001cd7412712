package contracts

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ICalendarError is a line of an iCalendar file that cannot be imported,
// and why.
type ICalendarError struct {
	// Line is the 1-based number of the line (the first of a folded one);
	// 0 for the file as a whole.
	Line    int
	Message string
}

func (e ICalendarError) Error() string {
	if e.Line == 0 {
		return e.Message
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Message)
}

// ICalendarErrors are all the problems of one file.
type ICalendarErrors []ICalendarError

func (e ICalendarErrors) Error() string {
	lines := make([]string, len(e))
	for i, x := range e {
		lines[i] = x.Error()
	}
	return strings.Join(lines, "\n")
}

// ImportICalendar converts an iCalendar file (RFC 5545) of holidays to a
// calendar's properties. Each VEVENT becomes:
//
//   - a date, from DTSTART (a date, or the date a date-time is written
//     with), when it lasts one day or less;
//   - a range from DTSTART to the last day it covers, when DTEND (an
//     exclusive end) or DURATION makes it longer;
//   - a yearly rule, for RRULE:FREQ=YEARLY, with BYMONTH (else DTSTART's
//     month) and BYMONTHDAY (one day) or BYDAY (one weekday with its
//     occurrence, such as 4TH or -1MO), else DTSTART's day.
//
// SUMMARY names it (cut to MaxCalendarNameLength characters), and
// X-WR-CALDESC, or else X-WR-CALNAME, describes the calendar. Cancelled
// events, VTIMEZONE, VALARM and other components are left out. What a
// calendar cannot hold (another RRULE, COUNT or UNTIL, EXDATE or RDATE on
// a recurring event, RECURRENCE-ID, a yearly event longer than a day) is
// an error naming the line. The result is validated (ValidateCalendar)
// and normalized.
func ImportICalendar(data []byte) (CalendarProperties, error) {
	if len(data) > MaxCalendarBytes*4 {
		return CalendarProperties{}, ICalendarErrors{{Message: fmt.Sprintf("the file is %d bytes; the limit is %d bytes (256 KB)", len(data), MaxCalendarBytes*4)}}
	}
	if !utf8.Valid(data) {
		return CalendarProperties{}, ICalendarErrors{{Message: "the file is not UTF-8 text"}}
	}
	im := &icalImport{}
	im.read(unfold(string(data)))
	if len(im.errs) == 0 {
		var errs FieldErrors
		ValidateCalendar(&im.props, "", &errs)
		for _, fe := range errs {
			im.errs = append(im.errs, ICalendarError{Line: im.lineOf(fe.Path), Message: fe.Message})
		}
	}
	if len(im.errs) > 0 {
		if len(im.errs) > maxReported {
			im.errs = append(im.errs[:maxReported], ICalendarError{Message: fmt.Sprintf("more problems were found; only the first %d are listed", maxReported)})
		}
		return CalendarProperties{}, im.errs
	}
	NormalizeCalendar(&im.props)
	return im.props, nil
}

// icalLine is one unfolded content line: NAME;PARAM=VALUE:value.
type icalLine struct {
	num    int
	name   string // upper case
	params map[string]string
	value  string
}

// unfold joins folded lines (a line break followed by a space or tab) and
// splits the text into content lines, keeping each one's first line number.
func unfold(text string) []rawLine {
	text = strings.TrimPrefix(text, "\uFEFF")
	var out []rawLine
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSuffix(l, "\r")
		if (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) && len(out) > 0 {
			out[len(out)-1].text += l[1:]
			continue
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		out = append(out, rawLine{num: i + 1, text: l})
	}
	return out
}

type rawLine struct {
	num  int
	text string
}

// parseLine splits a content line into its name, parameters and value.
// Parameter values may be quoted, and hold ':' and ';' then.
func parseLine(r rawLine) (icalLine, error) {
	l := icalLine{num: r.num, params: map[string]string{}}
	s := r.text
	end := strings.IndexAny(s, ";:")
	if end <= 0 {
		return l, fmt.Errorf("%q is not a content line NAME:value", Abbreviate(s))
	}
	l.name = strings.ToUpper(s[:end])
	s = s[end:]
	for strings.HasPrefix(s, ";") {
		s = s[1:]
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return l, fmt.Errorf("property %s has a parameter without a value", l.name)
		}
		key := strings.ToUpper(s[:eq])
		s = s[eq+1:]
		var value string
		if strings.HasPrefix(s, `"`) {
			q := strings.IndexByte(s[1:], '"')
			if q < 0 {
				return l, fmt.Errorf("property %s: parameter %s has an unclosed quote", l.name, key)
			}
			value, s = s[1:q+1], s[q+2:]
		} else {
			stop := strings.IndexAny(s, ";:")
			if stop < 0 {
				return l, fmt.Errorf("property %s has no ':' before its value", l.name)
			}
			value, s = s[:stop], s[stop:]
		}
		l.params[key] = value
	}
	if !strings.HasPrefix(s, ":") {
		return l, fmt.Errorf("property %s has no ':' before its value", l.name)
	}
	l.value = s[1:]
	return l, nil
}

// icalImport collects the calendar and the problems of one file.
type icalImport struct {
	props CalendarProperties
	errs  ICalendarErrors
	// lines of the events each entry came from, for the messages of
	// ValidateCalendar.
	dateLines, rangeLines, yearlyLines []int
}

func (im *icalImport) fail(line int, format string, args ...any) {
	im.errs = append(im.errs, ICalendarError{Line: line, Message: fmt.Sprintf(format, args...)})
}

// lineOf returns the line of the event an error path of ValidateCalendar
// ("dates[3].name") points at; 0 for the calendar as a whole.
func (im *icalImport) lineOf(path string) int {
	for prefix, lines := range map[string][]int{"dates[": im.dateLines, "ranges[": im.rangeLines, "yearly[": im.yearlyLines} {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		idx, _, _ := strings.Cut(rest, "]")
		if i, err := strconv.Atoi(idx); err == nil && i < len(lines) {
			return lines[i]
		}
	}
	return 0
}

// read walks the components: properties of VCALENDAR and each VEVENT are
// read; any other component is skipped with what it holds.
func (im *icalImport) read(raw []rawLine) {
	var (
		stack     []string // open components, outermost first
		event     []icalLine
		eventLine int
		sawCal    bool
		calName   string
		calDesc   string
	)
	for _, r := range raw {
		if !sawCal && !strings.EqualFold(strings.TrimSpace(r.text), "BEGIN:VCALENDAR") {
			im.fail(r.num, "the file must begin with BEGIN:VCALENDAR: it is not an iCalendar file")
			return
		}
		l, err := parseLine(r)
		if err != nil {
			im.fail(r.num, "%v", err)
			continue
		}
		switch l.name {
		case "BEGIN":
			comp := strings.ToUpper(l.value)
			switch {
			case len(stack) == 0 && sawCal:
				im.fail(l.num, "BEGIN:%s follows END:VCALENDAR; a file holds one calendar", comp)
				return
			case len(stack) == 0:
				sawCal = true
			case len(stack) == 1 && comp == "VEVENT":
				event, eventLine = nil, l.num
			}
			stack = append(stack, comp)
			continue
		case "END":
			comp := strings.ToUpper(l.value)
			if len(stack) == 0 || stack[len(stack)-1] != comp {
				im.fail(l.num, "END:%s does not close the open component", comp)
				return
			}
			if len(stack) == 2 && comp == "VEVENT" {
				im.event(eventLine, event)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		switch {
		case len(stack) == 0:
			im.fail(l.num, "%s follows END:VCALENDAR", l.name)
			return
		case len(stack) == 1 && l.name == "X-WR-CALNAME":
			calName = unescapeText(l.value)
		case len(stack) == 1 && l.name == "X-WR-CALDESC":
			calDesc = unescapeText(l.value)
		case len(stack) == 2 && stack[1] == "VEVENT":
			event = append(event, l)
		}
	}
	switch {
	case !sawCal:
		im.fail(0, "the file holds no BEGIN:VCALENDAR: it is not an iCalendar file")
	case len(stack) > 0:
		im.fail(0, "the file ends before END:%s", stack[len(stack)-1])
	}
	im.props.Description = truncateRunes(firstNonEmpty(calDesc, calName), 1000)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// truncateRunes cuts s to at most n characters.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// event converts one VEVENT, whose BEGIN is at line begin.
func (im *icalImport) event(begin int, props []icalLine) {
	var (
		start, end, duration, rrule *icalLine
		summary                     string
		exdate, rdate               *icalLine
	)
	for i := range props {
		l := &props[i]
		switch l.name {
		case "DTSTART":
			start = l
		case "DTEND":
			end = l
		case "DURATION":
			duration = l
		case "SUMMARY":
			summary = unescapeText(l.value)
		case "RRULE":
			if rrule != nil {
				im.fail(l.num, "a second RRULE is not supported: a calendar event has one rule")
				return
			}
			rrule = l
		case "EXDATE":
			exdate = l
		case "RDATE":
			rdate = l
		case "RECURRENCE-ID":
			im.fail(l.num, "RECURRENCE-ID (a changed instance of a recurring event) is not supported")
			return
		case "STATUS":
			if strings.EqualFold(l.value, "CANCELLED") {
				return
			}
		}
	}
	if start == nil {
		im.fail(begin, "the VEVENT has no DTSTART")
		return
	}
	first, startTime, ok := im.dateOf(start)
	if !ok {
		return
	}
	last := first
	switch {
	case end != nil && duration != nil:
		im.fail(duration.num, "a VEVENT has DTEND or DURATION, not both")
		return
	case end != nil:
		endDate, endTime, ok := im.dateOf(end)
		if !ok {
			return
		}
		last = lastDay(endDate, endTime)
	case duration != nil:
		d, ok := im.duration(duration)
		if !ok {
			return
		}
		t := first.Add(startTime).Add(d)
		last = lastDay(t.Truncate(24*time.Hour), t.Sub(t.Truncate(24*time.Hour)))
	}
	if last.Before(first) {
		last = first
	}
	name := truncateRunes(summary, MaxCalendarNameLength)
	if rrule != nil {
		if exdate != nil {
			im.fail(exdate.num, "EXDATE on a recurring event is not supported: a yearly rule holds every year; remove the EXDATE or list the years' dates as single events")
			return
		}
		if rdate != nil {
			im.fail(rdate.num, "RDATE on a recurring event is not supported; list the extra dates as events of their own")
			return
		}
		if !last.Equal(first) {
			im.fail(rrule.num, "a yearly event longer than one day is not supported; a yearly rule holds one day")
			return
		}
		y, ok := im.yearly(rrule, first)
		if !ok {
			return
		}
		y.Name = name
		im.props.Yearly = append(im.props.Yearly, y)
		im.yearlyLines = append(im.yearlyLines, begin)
		return
	}
	if rdate != nil {
		im.fail(rdate.num, "RDATE is not supported; list the extra dates as events of their own")
		return
	}
	if last.Equal(first) {
		im.props.Dates = append(im.props.Dates, CalendarDate{Date: FormatCalendarDate(first), Name: name})
		im.dateLines = append(im.dateLines, begin)
		return
	}
	im.props.Ranges = append(im.props.Ranges, DateRange{Start: FormatCalendarDate(first), End: FormatCalendarDate(last), Name: name})
	im.rangeLines = append(im.rangeLines, begin)
}

// lastDay returns the last day an event ending (exclusively) at the time
// of day tod on date covers: the day before when it ends at midnight.
func lastDay(date time.Time, tod time.Duration) time.Time {
	if tod == 0 {
		return date.AddDate(0, 0, -1)
	}
	return date
}

// dateOf reads DTSTART or DTEND: a date (YYYYMMDD) or a date-time
// (YYYYMMDDTHHMMSS, with Z or a TZID: the date and time as written). It
// returns the date at midnight UTC and the time of day.
func (im *icalImport) dateOf(l *icalLine) (time.Time, time.Duration, bool) {
	v := strings.TrimSpace(l.value)
	if strings.Contains(v, ",") {
		im.fail(l.num, "%s holds several values; give one", l.name)
		return time.Time{}, 0, false
	}
	isDate := strings.EqualFold(l.params["VALUE"], "DATE") || len(v) == 8
	if isDate {
		d, err := time.Parse("20060102", v)
		if err != nil || len(v) != 8 {
			im.fail(l.num, "%s %q is not a date YYYYMMDD", l.name, v)
			return time.Time{}, 0, false
		}
		return d, 0, true
	}
	t, err := time.Parse("20060102T150405", strings.TrimSuffix(v, "Z"))
	if err != nil {
		im.fail(l.num, "%s %q is not a date YYYYMMDD or a date-time YYYYMMDDTHHMMSS", l.name, v)
		return time.Time{}, 0, false
	}
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return day, t.Sub(day), true
}

// duration reads a DURATION: P[nW] or P[nD][T[nH][nM][nS]].
func (im *icalImport) duration(l *icalLine) (time.Duration, bool) {
	v := strings.ToUpper(strings.TrimSpace(l.value))
	bad := func() (time.Duration, bool) {
		im.fail(l.num, "DURATION %q is not a duration such as P1D, P2W or PT12H", l.value)
		return 0, false
	}
	if strings.HasPrefix(v, "-") {
		im.fail(l.num, "a negative DURATION is not supported")
		return 0, false
	}
	v = strings.TrimPrefix(v, "+")
	rest, ok := strings.CutPrefix(v, "P")
	if !ok || rest == "" {
		return bad()
	}
	var total time.Duration
	inTime := false
	units := map[bool]map[byte]time.Duration{
		false: {'W': 7 * 24 * time.Hour, 'D': 24 * time.Hour},
		true:  {'H': time.Hour, 'M': time.Minute, 'S': time.Second},
	}
	for rest != "" {
		if rest[0] == 'T' && !inTime {
			inTime, rest = true, rest[1:]
			continue
		}
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 6 || i == len(rest) {
			return bad()
		}
		n, _ := strconv.Atoi(rest[:i])
		unit, ok := units[inTime][rest[i]]
		if !ok {
			return bad()
		}
		total += time.Duration(n) * unit
		rest = rest[i+1:]
	}
	return total, true
}

// icalDays maps iCalendar's weekday codes to DaysOfWeek.
var icalDays = map[string]DayOfWeek{"MO": Monday, "TU": Tuesday, "WE": Wednesday, "TH": Thursday, "FR": Friday, "SA": Saturday, "SU": Sunday}

// yearly converts an RRULE of a one-day event starting on first.
func (im *icalImport) yearly(l *icalLine, first time.Time) (YearlyDate, bool) {
	parts := map[string]string{}
	for _, part := range strings.Split(l.value, ";") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			im.fail(l.num, "RRULE part %q is not NAME=VALUE", part)
			return YearlyDate{}, false
		}
		parts[strings.ToUpper(k)] = strings.ToUpper(v)
	}
	const supported = "only FREQ=YEARLY, with BYMONTH and one BYMONTHDAY or BYDAY (such as 4TH or -1MO), is supported"
	if f := parts["FREQ"]; f != "YEARLY" {
		im.fail(l.num, "RRULE FREQ=%s is not supported: %s", f, supported)
		return YearlyDate{}, false
	}
	for k, v := range parts {
		switch k {
		case "FREQ", "BYMONTH", "BYMONTHDAY", "BYDAY", "WKST":
		case "INTERVAL":
			if v != "1" {
				im.fail(l.num, "RRULE INTERVAL=%s is not supported: a yearly rule holds every year", v)
				return YearlyDate{}, false
			}
		case "COUNT", "UNTIL":
			im.fail(l.num, "RRULE %s is not supported: a yearly rule holds every year; list the dates as single events instead", k)
			return YearlyDate{}, false
		default:
			im.fail(l.num, "RRULE %s is not supported: %s", k, supported)
			return YearlyDate{}, false
		}
	}
	y := YearlyDate{Month: int(first.Month())}
	if m, ok := parts["BYMONTH"]; ok {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 || n > 12 {
			im.fail(l.num, "RRULE BYMONTH=%s is not supported: give one month, 1 to 12", m)
			return YearlyDate{}, false
		}
		y.Month = n
	}
	monthDay, hasMonthDay := parts["BYMONTHDAY"]
	byDay, hasByDay := parts["BYDAY"]
	switch {
	case hasMonthDay && hasByDay:
		im.fail(l.num, "RRULE with both BYMONTHDAY and BYDAY is not supported: give one")
		return YearlyDate{}, false
	case hasMonthDay:
		n, err := strconv.Atoi(monthDay)
		if err != nil || n == 0 || n < -31 || n > 31 {
			im.fail(l.num, "RRULE BYMONTHDAY=%s is not supported: give one day, 1 to 31 or -1 to -31", monthDay)
			return YearlyDate{}, false
		}
		y.Day = &n
	case hasByDay:
		code := byDay[max(len(byDay)-2, 0):]
		day, okDay := icalDays[code]
		n, err := strconv.Atoi(strings.TrimPrefix(byDay[:len(byDay)-len(code)], "+"))
		if !okDay || err != nil || n == 0 || n < -5 || n > 5 {
			im.fail(l.num, "RRULE BYDAY=%s is not supported: give one weekday with its occurrence, such as 4TH or -1MO", byDay)
			return YearlyDate{}, false
		}
		y.WeekDay, y.Occurrence = day, &n
	default:
		d := first.Day()
		y.Day = &d
	}
	return y, true
}

// unescapeText undoes the escapes of an iCalendar TEXT value: \\ \; \,
// and \n (a line break, kept as a space in a name).
func unescapeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n', 'N':
			b.WriteByte(' ')
		default:
			b.WriteByte(s[i])
		}
	}
	return strings.TrimSpace(b.String())
}
