package contracts

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeCalendarReadsBothShapesAndNormalizes(t *testing.T) {
	t.Parallel()
	four, minusOne, twentyFive := 4, -1, 25
	want := CalendarProperties{
		Description: "Holidays",
		Dates: []CalendarDate{
			{Date: "2026-01-01", Name: "New Year"},
			{Date: "2026-05-01"},
			{Date: "2026-12-24", Name: "Eve"},
		},
		Ranges: []DateRange{
			{Start: "2026-07-01", End: "2026-07-14", Name: "Shutdown"},
			{Start: "2026-12-27", End: "2026-12-31"},
		},
		Yearly: []YearlyDate{
			{Name: "Christmas", Month: 12, Day: &twentyFive},
			{Name: "Thanksgiving", Month: 11, WeekDay: Thursday, Occurrence: &four},
			{Name: "Last day of February", Month: 2, Day: &minusOne},
		},
	}
	props := `{"Description":"Holidays",
		"DATES":[{"date":"2026-12-24","name":"Eve"},"2026-05-01",{"Date":"2026-01-01","Name":"New Year"},{"date":"2026-12-24","name":"again"}],
		"ranges":[{"start":"2026-12-27","end":"2026-12-31"},{"start":"2026-07-01","end":"2026-07-14","name":"Shutdown"}],
		"yearly":[{"name":"Christmas","month":12,"day":25},{"name":"Thanksgiving","month":11,"weekDay":"thursday","occurrence":4},
		          {"name":"Last day of February","month":2,"day":-1}]}`
	for _, tc := range []struct {
		name, body, prefix string
	}{
		{"the bare properties", props, ""},
		{"the ARM envelope", `{"name":"x","properties":` + props + `}`, "properties."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, errs := DecodeCalendar([]byte(tc.body))
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			if got.Prefix != tc.prefix {
				t.Errorf("prefix %q, want %q", got.Prefix, tc.prefix)
			}
			if !reflect.DeepEqual(got.Properties, want) {
				t.Errorf("got  %+v\nwant %+v", got.Properties, want)
			}
		})
	}
}

func TestDecodeCalendarReportsEveryProblemWithItsPath(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxCalendarNameLength+1)
	for _, tc := range []struct {
		name, body string
		want       map[string]string // path → part of the message
	}{
		{"not JSON", `{`, map[string]string{"": "invalid JSON"}},
		{"a date that does not exist", `{"dates":["2026-02-30"]}`, map[string]string{"dates[0]": "YYYY-MM-DD"}},
		{"a date in another form", `{"properties":{"dates":[{"date":"25.12.2026"}]}}`, map[string]string{"properties.dates[0].date": "YYYY-MM-DD"}},
		{"a date object without its date", `{"dates":[{"name":"x"}]}`, map[string]string{"dates[0].date": "required"}},
		{"a range that ends before it starts", `{"ranges":[{"start":"2026-05-02","end":"2026-05-01"}]}`, map[string]string{"ranges[0].end": "before the start"}},
		{"a range over three years", `{"ranges":[{"start":"2026-01-01","end":"2029-01-01"}]}`, map[string]string{"ranges[0].end": "longer than 3 years"}},
		{"a range of three years less a day", `{"ranges":[{"start":"2026-01-01","end":"2028-12-31"}]}`, nil},
		{"a range without its end", `{"ranges":[{"start":"2026-01-01"}]}`, map[string]string{"ranges[0].end": "required"}},
		{"a month of 13", `{"yearly":[{"month":13,"day":1}]}`, map[string]string{"yearly[0].month": "1 (January) to 12"}},
		{"a rule without a month", `{"yearly":[{"day":1}]}`, map[string]string{"yearly[0].month": "required"}},
		{"day 30 of February", `{"yearly":[{"month":2,"day":30}]}`, map[string]string{"yearly[0].day": "at most 29 days"}},
		{"day -31 of April", `{"yearly":[{"month":4,"day":-31}]}`, map[string]string{"yearly[0].day": "at most 30 days"}},
		{"day 29 of February", `{"yearly":[{"month":2,"day":29}]}`, nil},
		{"day 0", `{"yearly":[{"month":1,"day":0}]}`, map[string]string{"yearly[0].day": "not a day"}},
		{"both day and weekDay", `{"yearly":[{"month":1,"day":1,"weekDay":"Monday","occurrence":1}]}`, map[string]string{"yearly[0]": "not both"}},
		{"neither day nor weekDay", `{"yearly":[{"month":1}]}`, map[string]string{"yearly[0]": "give day"}},
		{"a weekDay without occurrence", `{"yearly":[{"month":1,"weekDay":"Monday"}]}`, map[string]string{"yearly[0].occurrence": "required"}},
		{"an occurrence of 6", `{"yearly":[{"month":1,"weekDay":"Monday","occurrence":6}]}`, map[string]string{"yearly[0].occurrence": "1 to 5"}},
		{"an occurrence without weekDay", `{"yearly":[{"month":1,"occurrence":-1}]}`, map[string]string{"yearly[0].weekDay": "required"}},
		{"an unknown weekDay", `{"yearly":[{"month":1,"weekDay":"Someday","occurrence":1}]}`, map[string]string{"yearly[0].weekDay": "not one of"}},
		{"a day that is not a number", `{"yearly":[{"month":1,"day":"1"}]}`, map[string]string{"yearly[0].day": "integer"}},
		{"a long name", `{"dates":[{"date":"2026-01-01","name":"` + long + `"}]}`, map[string]string{"dates[0].name": "limit is 100"}},
		{"a null date", `{"dates":[null]}`, map[string]string{"dates[0]": "null"}},
		{"several problems", `{"dates":["x"],"ranges":[{"start":"2026-01-02","end":"2026-01-01"}],"yearly":[{"month":0,"day":1}]}`,
			map[string]string{"dates[0]": "YYYY-MM-DD", "ranges[0].end": "before", "yearly[0].month": "month"}},
		{"a property given twice", `{"dates":["2026-01-01"],"Dates":["2026-01-02"]}`, map[string]string{"dates": "more than once"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, errs := DecodeCalendar([]byte(tc.body))
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(tc.want), errs)
			}
			for _, fe := range errs {
				part, ok := tc.want[fe.Path]
				if !ok || !strings.Contains(fe.Message, part) {
					t.Errorf("unexpected error %q at %q; want one containing %q", fe.Message, fe.Path, part)
				}
			}
		})
	}
}

func TestDecodeCalendarBoundsItsSizeAndEntries(t *testing.T) {
	t.Parallel()
	dates := make([]string, 0, MaxCalendarEntries)
	for i := range MaxCalendarEntries {
		dates = append(dates, fmt.Sprintf("%q", FormatCalendarDate(mustDate(t, "2026-01-01").AddDate(0, 0, i))))
	}
	atLimit := `{"dates":[` + strings.Join(dates, ",") + `]}`
	if _, errs := DecodeCalendar([]byte(atLimit)); len(errs) > 0 {
		t.Fatalf("%d dates: %v", MaxCalendarEntries, errs)
	}
	over := `{"properties":{"dates":[` + strings.Join(dates, ",") + `],"yearly":[{"month":1,"day":1}]}}`
	_, errs := DecodeCalendar([]byte(over))
	if len(errs) != 1 || errs[0].Path != "properties" || !strings.Contains(errs[0].Message, "the limit is 1000") {
		t.Errorf("over the entry limit: %v", errs)
	}
	big := `{"description":"` + strings.Repeat("x", MaxCalendarBytes) + `"}`
	_, errs = DecodeCalendar([]byte(big))
	if len(errs) != 1 || errs[0].Path != "" || !strings.Contains(errs[0].Message, "64 KB") {
		t.Errorf("over the size limit: %v", errs)
	}
}

func mustDate(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := ParseCalendarDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// calendarFuzzSeeds are realistic calendars and near misses.
var calendarFuzzSeeds = []string{
	`{"properties":{"description":"DE","dates":[{"date":"2026-01-01","name":"Neujahr"},"2026-10-03"],"ranges":[{"start":"2026-12-24","end":"2026-12-31","name":"Betriebsruhe"}],"yearly":[{"name":"1. Weihnachtstag","month":12,"day":25},{"month":11,"weekDay":"Thursday","occurrence":4}]}}`,
	`{"dates":["2026-02-29"]}`,
	`{"yearly":[{"month":2,"day":-1},{"month":5,"weekDay":"MONDAY","occurrence":-1}]}`,
	`{"DATES":"2026-01-01","Ranges":{"start":"2026-01-01","end":"2026-01-01"}}`,
	`{"ranges":[{"start":"2026-01-02","end":"2026-01-01"}],"yearly":[{"month":0}]}`,
	`[]`,
}

func FuzzDecodeCalendar(f *testing.F) {
	for _, seed := range calendarFuzzSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, errs := DecodeCalendar(data)
		if len(errs) > 0 {
			return
		}
		out, err := json.Marshal(CalendarDefinition{Properties: c.Properties})
		if err != nil {
			t.Fatalf("marshalling a calendar that decoded without errors: %v", err)
		}
		again, errs := DecodeCalendar(out)
		if len(out) > MaxCalendarBytes && len(errs) > 0 && errs[0].Path == "" && strings.Contains(errs[0].Message, "the limit is") {
			errs = errs[1:]
		}
		if len(errs) > 0 {
			t.Fatalf("decoding the marshalled calendar %s: %v", out, errs)
		}
		if !reflect.DeepEqual(c.Properties, again.Properties) {
			t.Errorf("round trip changed the calendar:\n first: %+v\nsecond: %+v", c.Properties, again.Properties)
		}
		for i := 1; i < len(c.Properties.Dates); i++ {
			if c.Properties.Dates[i-1].Date >= c.Properties.Dates[i].Date {
				t.Errorf("dates not sorted and unique: %v", c.Properties.Dates)
			}
		}
	})
}
