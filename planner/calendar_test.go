package planner

import (
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

func intp(i int) *int { return &i }

// usHolidays is a calendar of one year's dates and yearly rules, as the
// tests and the benchmark use it.
func usHolidays() contracts.CalendarProperties {
	return contracts.CalendarProperties{
		Dates: []contracts.CalendarDate{
			{Date: "2026-04-03", Name: "Good Friday"},
			{Date: "2026-07-03", Name: "Independence Day (observed)"},
		},
		Ranges: []contracts.DateRange{{Start: "2026-12-24", End: "2026-12-26", Name: "Winter break"}},
		Yearly: []contracts.YearlyDate{
			{Name: "New Year's Day", Month: 1, Day: intp(1)},
			{Name: "Memorial Day", Month: 5, WeekDay: contracts.Monday, Occurrence: intp(-1)},
			{Name: "Thanksgiving", Month: 11, WeekDay: contracts.Thursday, Occurrence: intp(4)},
			{Name: "Christmas Day", Month: 12, Day: intp(25)},
			{Name: "New Year's Eve", Month: 12, Day: intp(-1)},
		},
	}
}

func mustCalendar(t testing.TB, name string, p contracts.CalendarProperties) *Calendar {
	t.Helper()
	c, err := CompileCalendar(name, &p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCalendarHolds(t *testing.T) {
	t.Parallel()
	c := mustCalendar(t, "us", usHolidays())
	tests := []struct {
		date    string
		held    bool
		holiday string
	}{
		{"2026-04-03", true, "Good Friday"},
		{"2027-04-03", false, ""}, // a date, not a yearly rule
		{"2026-12-24", true, "Winter break"},
		{"2026-12-25", true, "Winter break"}, // the range is listed before the yearly rule
		{"2026-12-26", true, "Winter break"},
		{"2026-12-27", false, ""},
		{"2027-12-25", true, "Christmas Day"},
		{"2030-01-01", true, "New Year's Day"},
		{"2026-12-31", true, "New Year's Eve"}, // day -1 of December
		{"2026-12-30", false, ""},
		{"2026-05-25", true, "Memorial Day"}, // the last Monday of May 2026
		{"2026-05-18", false, ""},
		{"2027-05-31", true, "Memorial Day"},
		{"2026-11-26", true, "Thanksgiving"}, // the fourth Thursday
		{"2026-11-19", false, ""},
		{"2028-11-23", true, "Thanksgiving"},
	}
	for _, tt := range tests {
		d, err := time.Parse(time.DateOnly, tt.date)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Holds(d.Date()); got != tt.held {
			t.Errorf("Holds(%s) = %v, want %v", tt.date, got, tt.held)
		}
		if name, held := c.Holiday(d.Date()); held != tt.held || name != tt.holiday {
			t.Errorf("Holiday(%s) = %q, %v; want %q, %v", tt.date, name, held, tt.holiday, tt.held)
		}
	}
}

// edgeRules are yearly rules at the edges of months: negative days,
// days some months lack, fifth and fifth-to-last weekdays.
func edgeRules() []contracts.YearlyDate {
	return []contracts.YearlyDate{
		{Month: 2, Day: intp(-1)},                                       // 28 or 29 February
		{Month: 2, Day: intp(30)},                                       // never
		{Month: 4, Day: intp(31)},                                       // never
		{Month: 9, Day: intp(-31)},                                      // never: September has 30 days
		{Month: 6, Day: intp(-30)},                                      // 1 June
		{Month: 12, Day: intp(-7)},                                      // 25 December
		{Month: 8, WeekDay: contracts.Saturday, Occurrence: intp(5)},    // only in some years
		{Month: 3, WeekDay: contracts.Sunday, Occurrence: intp(-5)},     // only when March has five Sundays
		{Month: 2, WeekDay: contracts.Sunday, Occurrence: intp(5)},      // 29 February on a Sunday only
		{Month: 10, WeekDay: contracts.Wednesday, Occurrence: intp(-2)}, // second-to-last Wednesday
		{Month: 1, WeekDay: contracts.Monday, Occurrence: intp(1)},
		{Month: 9, WeekDay: contracts.Tuesday, Occurrence: intp(-1)},
		{Month: 11, WeekDay: contracts.Thursday, Occurrence: intp(4)},
	}
}

// The compiled rules agree with their definitions (oracleHolds) on every
// day of 28 years, through Holds and MonthMask.
func TestCalendarYearlyRulesAtTheMonthsEdges(t *testing.T) {
	t.Parallel()
	def := contracts.CalendarProperties{Yearly: edgeRules()}
	c := mustCalendar(t, "edges", def)
	held := 0
	for day := time.Date(2020, 1, 1, 12, 0, 0, 0, time.UTC); day.Year() < 2048; day = day.AddDate(0, 0, 1) {
		y, m, d := day.Date()
		want := oracleHolds(&def, y, m, d)
		if want {
			held++
		}
		if got := c.Holds(y, m, d); got != want {
			t.Fatalf("Holds(%s) = %v, want %v", day.Format(time.DateOnly), got, want)
		}
		if got := c.MonthMask(y, m)&(1<<uint(d)) != 0; got != want {
			t.Fatalf("MonthMask(%d-%02d) bit %d = %v, want %v", y, m, d, got, want)
		}
	}
	if held < 28*6 {
		t.Fatalf("only %d days held in 28 years", held)
	}
}

func TestCompileCalendarRejectsWhatItCannotRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    contracts.CalendarProperties
		says string
	}{
		{"a date that does not exist", contracts.CalendarProperties{Dates: []contracts.CalendarDate{{Date: "2026-02-30"}}}, `dates[0]: "2026-02-30" is not a date`},
		{"a date in another format", contracts.CalendarProperties{Dates: []contracts.CalendarDate{{Date: "25/12/2026"}}}, "dates[0]"},
		{"an empty range end", contracts.CalendarProperties{Ranges: []contracts.DateRange{{Start: "2026-01-01"}}}, "ranges[0].end"},
		{"a range that ends before it starts", contracts.CalendarProperties{Ranges: []contracts.DateRange{{Start: "2026-01-05", End: "2026-01-01"}}}, "is before start"},
		{"month 13", contracts.CalendarProperties{Yearly: []contracts.YearlyDate{{Month: 13, Day: intp(1)}}}, "yearly[0].month"},
		{"day 0", contracts.CalendarProperties{Yearly: []contracts.YearlyDate{{Month: 1, Day: intp(0)}}}, "yearly[0].day"},
		{"a sixth Monday", contracts.CalendarProperties{Yearly: []contracts.YearlyDate{{Month: 1, WeekDay: contracts.Monday, Occurrence: intp(6)}}}, "yearly[0].occurrence"},
		{"a weekday without occurrence", contracts.CalendarProperties{Yearly: []contracts.YearlyDate{{Month: 1, WeekDay: contracts.Monday}}}, "yearly[0].occurrence"},
		{"both day and weekday", contracts.CalendarProperties{Yearly: []contracts.YearlyDate{{Month: 1, Day: intp(1), WeekDay: contracts.Monday, Occurrence: intp(1)}}}, "exactly one of day and weekDay"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is an error", func(t *testing.T) {
			t.Parallel()
			_, err := CompileCalendar("bad", &tt.p)
			if err == nil || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), "calendar bad") {
				t.Fatalf("err = %v; want one naming the calendar and …%s…", err, tt.says)
			}
		})
	}
}
