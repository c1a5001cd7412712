package contracts

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestImportICalendarReadsAHolidayExport(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/holidays-de.ics")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ImportICalendar(data)
	if err != nil {
		t.Fatal(err)
	}
	one, twentyFive, twentySix := 1, 25, 26
	want := CalendarProperties{
		Description: "Gesetzliche Feiertage in Deutschland 2026, 2027",
		Dates: []CalendarDate{
			{Date: "2026-01-01", Name: "Neujahr"},
			{Date: "2026-04-03", Name: "Karfreitag"},
			{Date: "2026-05-01", Name: "Tag der Arbeit"},
			{Date: "2026-10-03", Name: "Tag der Deutschen Einheit"},
			{Date: "2027-01-01", Name: "Neujahr"},
			{Date: "2027-03-26", Name: "Karfreitag"},
		},
		Ranges: []DateRange{
			{Start: "2026-04-05", End: "2026-04-06", Name: "Ostersonntag und Ostermontag"},
			{Start: "2027-12-24", End: "2028-01-01", Name: "Betriebsruhe"},
		},
		Yearly: []YearlyDate{
			{Name: "1. Weihnachtstag", Month: 12, Day: &twentyFive},
			{Name: "2. Weihnachtstag", Month: 12, Day: &twentySix},
			{Name: "Erntedankfest; kein Feiertag", Month: 10, WeekDay: Sunday, Occurrence: &one},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// LF line ends read the same.
	lf, err := ImportICalendar([]byte(strings.ReplaceAll(string(data), "\r\n", "\n")))
	if err != nil || !reflect.DeepEqual(lf, want) {
		t.Errorf("with LF line ends: %+v, %v", lf, err)
	}
}

// event wraps VEVENT lines in a calendar: the event's BEGIN is line 3.
func event(lines ...string) []byte {
	all := append([]string{"BEGIN:VCALENDAR", "VERSION:2.0", "BEGIN:VEVENT", "UID:x"}, lines...)
	all = append(all, "END:VEVENT", "END:VCALENDAR")
	return []byte(strings.Join(all, "\r\n") + "\r\n")
}

func TestImportICalendarConvertsEachKindOfEvent(t *testing.T) {
	t.Parallel()
	minusOne, four := -1, 4
	for _, tc := range []struct {
		name  string
		lines []string
		want  CalendarProperties
	}{
		{"a date-time event is a date", []string{"DTSTART:20260310T090000Z", "DTEND:20260310T170000Z", "SUMMARY:Offsite"},
			CalendarProperties{Dates: []CalendarDate{{Date: "2026-03-10", Name: "Offsite"}}}},
		{"an event without an end is a date", []string{"DTSTART;VALUE=DATE:20260310"},
			CalendarProperties{Dates: []CalendarDate{{Date: "2026-03-10"}}}},
		{"a date-time event over midnight is a range", []string{"DTSTART:20260310T220000", "DTEND:20260311T020000"},
			CalendarProperties{Ranges: []DateRange{{Start: "2026-03-10", End: "2026-03-11"}}}},
		{"a two-week duration is a range", []string{"DTSTART;VALUE=DATE:20260803", "DURATION:P2W", "SUMMARY:Summer"},
			CalendarProperties{Ranges: []DateRange{{Start: "2026-08-03", End: "2026-08-16", Name: "Summer"}}}},
		{"a duration in hours stays a date", []string{"DTSTART:20260803T080000", "DURATION:PT8H"},
			CalendarProperties{Dates: []CalendarDate{{Date: "2026-08-03"}}}},
		{"the last Monday of May", []string{"DTSTART;VALUE=DATE:20260525", "RRULE:FREQ=YEARLY;BYMONTH=5;BYDAY=-1MO", "SUMMARY:Memorial Day"},
			CalendarProperties{Yearly: []YearlyDate{{Name: "Memorial Day", Month: 5, WeekDay: Monday, Occurrence: &minusOne}}}},
		{"the fourth Thursday of November", []string{"DTSTART;VALUE=DATE:20261126", "RRULE:FREQ=YEARLY;INTERVAL=1;BYMONTH=11;BYDAY=4TH"},
			CalendarProperties{Yearly: []YearlyDate{{Month: 11, WeekDay: Thursday, Occurrence: &four}}}},
		{"escaped text", []string{"DTSTART;VALUE=DATE:20260101", `SUMMARY:New Year\, day one\nof two \\ ok`},
			CalendarProperties{Dates: []CalendarDate{{Date: "2026-01-01", Name: `New Year, day one of two \ ok`}}}},
		{"a quoted parameter", []string{`DTSTART;X-NOTE="a;b:c";VALUE=DATE:20260101`},
			CalendarProperties{Dates: []CalendarDate{{Date: "2026-01-01"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ImportICalendar(event(tc.lines...))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestImportICalendarNamesTheLineItCannotRepresent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		data  []byte
		line  int
		words string
	}{
		{"a weekly rule", event("DTSTART;VALUE=DATE:20260105", "RRULE:FREQ=WEEKLY;BYDAY=MO"), 6, "FREQ=WEEKLY is not supported"},
		{"a monthly rule", event("DTSTART;VALUE=DATE:20260105", "RRULE:FREQ=MONTHLY"), 6, "FREQ=MONTHLY"},
		{"a yearly rule with a count", event("DTSTART;VALUE=DATE:20260105", "RRULE:FREQ=YEARLY;COUNT=3"), 6, "COUNT is not supported"},
		{"a yearly rule on every Monday of a month", event("DTSTART;VALUE=DATE:20260105", "RRULE:FREQ=YEARLY;BYMONTH=1;BYDAY=MO"), 6, "BYDAY=MO is not supported"},
		{"a yearly rule on two months", event("DTSTART;VALUE=DATE:20260105", "RRULE:FREQ=YEARLY;BYMONTH=1,2;BYMONTHDAY=5"), 6, "BYMONTH=1,2"},
		{"a rule part it does not know", event("DTSTART;VALUE=DATE:20260105", "RRULE:FREQ=YEARLY;BYWEEKNO=20"), 6, "BYWEEKNO is not supported"},
		{"EXDATE on a recurring event", event("DTSTART;VALUE=DATE:20261225", "RRULE:FREQ=YEARLY", "EXDATE;VALUE=DATE:20271225"), 7, "EXDATE on a recurring event"},
		{"a yearly event of two days", event("DTSTART;VALUE=DATE:20261225", "DTEND;VALUE=DATE:20261227", "RRULE:FREQ=YEARLY"), 7, "longer than one day"},
		{"RECURRENCE-ID", event("DTSTART;VALUE=DATE:20261225", "RECURRENCE-ID;VALUE=DATE:20261225"), 6, "RECURRENCE-ID"},
		{"an event without DTSTART", event("SUMMARY:x"), 3, "no DTSTART"},
		{"a date that does not exist", event("DTSTART;VALUE=DATE:20260230"), 5, "not a date"},
		{"a bad duration", event("DTSTART;VALUE=DATE:20260201", "DURATION:1D"), 6, "not a duration"},
		{"a range over three years", event("DTSTART;VALUE=DATE:20260101", "DTEND;VALUE=DATE:20300101"), 3, "longer than 3 years"},
		{"a line that is no content line", event("DTSTART;VALUE=DATE:20260101", "garbage"), 6, "not a content line"},
		{"not a calendar", []byte("BEGIN:VCARD\r\nEND:VCARD\r\n"), 1, "BEGIN:VCALENDAR"},
		{"an unclosed calendar", []byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\n"), 0, "ends before END:VEVENT"},
		{"mismatched ends", []byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nEND:VCALENDAR\r\n"), 3, "does not close"},
		{"JSON", []byte(`{"dates":[]}`), 1, "not an iCalendar file"},
		{"an empty file", nil, 0, "not an iCalendar file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ImportICalendar(tc.data)
			var errs ICalendarErrors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("got %v, want ICalendarErrors", err)
			}
			if errs[0].Line != tc.line || !strings.Contains(errs[0].Message, tc.words) {
				t.Errorf("got %q, want line %d with %q", errs[0].Error(), tc.line, tc.words)
			}
		})
	}
}
