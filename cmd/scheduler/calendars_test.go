package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
)

// The calendar commands, run as the real binary against a real `scheduler
// dev`, put, import, list, show and delete calendars, and refuse what the
// API or the file does not allow with a message and a non-zero exit.
func TestTheCalendarCommands(t *testing.T) {
	t.Parallel()
	server := startDev(t)
	dir := t.TempDir()
	must(t, server, "", "collections", "create", "ops")
	calendarFile := writeFile(t, dir, "office.json", `{"properties": {"description": "Office closed",
		"dates": ["2026-12-24"], "ranges": [{"start": "2026-12-27", "end": "2026-12-31"}]}}`)
	ics, err := os.ReadFile("../../contracts/testdata/holidays-de.ics")
	if err != nil {
		t.Fatal(err)
	}
	icsFile := writeFile(t, dir, "de.ics", string(ics))

	t.Run("put and import create calendars that list and get show", func(t *testing.T) {
		var c contracts.CalendarDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "calendars", "put", "office", "-f", calendarFile)), &c); err != nil || c.Name != "ops/office" {
			t.Fatalf("calendars put: %v %+v", err, c)
		}
		out := must(t, server, "", "calendars", "import", "feiertage", "-f", icsFile)
		if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Properties.Dates) != 6 || len(c.Properties.Yearly) != 3 {
			t.Fatalf("calendars import: %v\n%s", err, out)
		}
		must(t, server, string(ics), "calendars", "import", "stdin", "-f", "-")
		out = must(t, server, "", "calendars", "list")
		if !regexp.MustCompile(`(?m)^feiertage\s+6\s+2\s+3\s+Gesetzliche Feiertage`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^office\s+1\s+1\s+0\s+Office closed$`).MatchString(out) || len(rows(out)) != 3 {
			t.Errorf("calendars list:\n%s", out)
		}
		if err := json.Unmarshal([]byte(must(t, server, "", "calendars", "get", "office")), &c); err != nil || c.Properties.Description != "Office closed" {
			t.Errorf("calendars get: %v %+v", err, c)
		}
	})

	t.Run("refusals exit non-zero with the reason", func(t *testing.T) {
		bad := writeFile(t, dir, "bad.json", `{"properties": {"yearly": [{"month": 2, "day": 30}]}}`)
		weekly := writeFile(t, dir, "weekly.ics", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20260105\r\nRRULE:FREQ=WEEKLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
		for _, tc := range []struct {
			args  []string
			code  int
			words string
		}{
			{[]string{"calendars", "put", "x", "-f", bad}, exitRefused, "properties.yearly[0].day"},
			{[]string{"calendars", "import", "x", "-f", weekly}, exitRefused, "line 4: RRULE FREQ=WEEKLY is not supported"},
			{[]string{"calendars", "import", "x", "-f", calendarFile}, exitUsage, "not an iCalendar file"},
			{[]string{"calendars", "put", "x"}, exitUsage, "-f FILE"},
			{[]string{"calendars", "get", "nope"}, exitNotFound, "was not found"},
			{[]string{"calendars", "get", "a/b"}, exitUsage, "holds no '/'"},
		} {
			_, errOut, code := cli(t, server, "", tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.words) {
				t.Errorf("scheduler %s: exit %d, want %d with %q:\n%s", strings.Join(tc.args, " "), code, tc.code, tc.words, errOut)
			}
		}
	})

	t.Run("delete removes a calendar no job excludes", func(t *testing.T) {
		job := writeFile(t, dir, "job.json", `{"properties": {"startTime": "2030-01-01T00:00:00Z",
			"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST"}},
			"recurrence": {"frequency": "Day", "excludedCalendars": ["feiertage"]}}}`)
		must(t, server, "", "jobs", "create", "daily", "-f", job)
		if _, errOut, code := cli(t, server, "", "calendars", "delete", "feiertage"); code != exitRefused || !strings.Contains(errOut, "daily") {
			t.Errorf("deleting an excluded calendar: exit %d\n%s", code, errOut)
		}
		if out := must(t, server, "", "calendars", "delete", "office"); out != "calendar office deleted\n" {
			t.Errorf("calendars delete: %q", out)
		}
		if _, _, code := cli(t, server, "", "calendars", "get", "office"); code != exitNotFound {
			t.Errorf("get after delete: exit %d", code)
		}
	})
}
