package api

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

const calendarBody = `{"properties": {"description": "Holidays",
	"dates": [{"date": "2026-12-24", "name": "Eve"}, "2026-01-01"],
	"ranges": [{"start": "2026-07-01", "end": "2026-07-14", "name": "Shutdown"}],
	"yearly": [{"name": "Christmas", "month": 12, "day": 25}, {"month": 11, "weekDay": "Thursday", "occurrence": 4}]}}`

// jobExcluding is a daily job that excludes the calendars named.
func jobExcluding(calendars ...string) string {
	return `{"properties": {"startTime": "2030-01-01T00:00:00Z",
		"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST"}},
		"recurrence": {"frequency": "Day", "excludedCalendars": ["` + strings.Join(calendars, `", "`) + `"]}}}`
}

// details returns the targets and messages of an ARM error body's details.
func details(t *testing.T, r response) map[string]string {
	t.Helper()
	out := map[string]string{}
	e, _ := r.json(t)["error"].(map[string]any)
	list, _ := e["details"].([]any)
	for _, d := range list {
		m := d.(map[string]any)
		target, _ := m["target"].(string)
		out[target], _ = m["message"].(string)
	}
	return out
}

func TestCalendars(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", `{"properties": {}}`)
	cals := base + "/jc/calendars"

	t.Run("PUT creates with 201, then replaces with 200", func(t *testing.T) {
		r := b.mustDo(t, http.StatusCreated, "PUT", cals+"/Holidays", calendarBody)
		m := r.json(t)
		if m["id"] != cals+"/Holidays" || m["type"] != "Microsoft.Scheduler/jobCollections/calendars" || m["name"] != "jc/Holidays" {
			t.Fatalf("envelope: %s", r.body)
		}
		if !strings.Contains(string(r.body), `"dates":[{"date":"2026-01-01"},{"date":"2026-12-24","name":"Eve"}]`) {
			t.Fatalf("dates not sorted: %s", r.body)
		}
		r = b.mustDo(t, http.StatusOK, "PUT", cals+"/HOLIDAYS", `{"dates": ["2027-01-01"]}`)
		if m := r.json(t); m["name"] != "jc/Holidays" || strings.Contains(string(r.body), "2026") {
			t.Fatalf("replaced: %s", r.body)
		}
		b.mustDo(t, http.StatusOK, "PUT", cals+"/Holidays", calendarBody)
	})
	t.Run("GET reads one and lists them; unknown ones are 404", func(t *testing.T) {
		b.mustDo(t, http.StatusCreated, "PUT", cals+"/another", `{"dates": []}`)
		r := b.mustDo(t, http.StatusOK, "GET", cals+"/holidays", "")
		if !strings.Contains(string(r.body), `"Christmas"`) {
			t.Fatalf("get: %s", r.body)
		}
		list := b.mustDo(t, http.StatusOK, "GET", cals, "").json(t)["value"].([]any)
		if len(list) != 2 || list[0].(map[string]any)["name"] != "jc/another" || list[1].(map[string]any)["name"] != "jc/Holidays" {
			t.Fatalf("list: %v", list)
		}
		for _, path := range []string{cals + "/nope", base + "/nope/calendars", base + "/nope/calendars/holidays"} {
			if code := b.mustDo(t, http.StatusNotFound, "GET", path, "").errorCode(t); code != codeNotFound {
				t.Fatalf("GET %s: code %q", path, code)
			}
		}
		b.mustDo(t, http.StatusNotFound, "PUT", base+"/nope/calendars/h", calendarBody)
		b.mustDo(t, http.StatusBadRequest, "PUT", cals+"/bad.name", calendarBody)
	})
	t.Run("an invalid calendar is 400 naming each field and its rule", func(t *testing.T) {
		r := b.mustDo(t, http.StatusBadRequest, "PUT", cals+"/bad", `{"properties": {"dates": ["2026-02-30"],
			"ranges": [{"start": "2026-05-02", "end": "2026-05-01"}], "yearly": [{"month": 2, "day": 30}]}}`)
		got := details(t, r)
		for target, words := range map[string]string{
			"properties.dates[0]":      "YYYY-MM-DD",
			"properties.ranges[0].end": "before the start",
			"properties.yearly[0].day": "at most 29 days",
		} {
			if !strings.Contains(got[target], words) {
				t.Errorf("detail %s = %q, want one with %q", target, got[target], words)
			}
		}
		b.mustDo(t, http.StatusNotFound, "GET", cals+"/bad", "")
	})
	t.Run("PUT of an iCalendar file stores its dates, ranges and yearly rules", func(t *testing.T) {
		ics, err := os.ReadFile("../../contracts/testdata/holidays-de.ics")
		if err != nil {
			t.Fatal(err)
		}
		r := b.do(t, "PUT", cals+"/feiertage", string(ics), "Content-Type", "text/calendar; charset=utf-8")
		if r.status != http.StatusCreated {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		s := string(r.body)
		for _, want := range []string{`{"date":"2026-10-03","name":"Tag der Deutschen Einheit"}`,
			`{"start":"2026-04-05","end":"2026-04-06","name":"Ostersonntag und Ostermontag"}`,
			`{"name":"1. Weihnachtstag","month":12,"day":25}`, `"description":"Gesetzliche Feiertage in Deutschland 2026, 2027"`} {
			if !strings.Contains(s, want) {
				t.Errorf("missing %s in %s", want, s)
			}
		}
		r = b.do(t, "PUT", cals+"/weekly", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20260105\r\nRRULE:FREQ=WEEKLY\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
			"Content-Type", "text/calendar")
		if r.status != http.StatusBadRequest || !strings.Contains(details(t, r)["line 4"], "FREQ=WEEKLY is not supported") {
			t.Fatalf("weekly rule: %d %s", r.status, r.body)
		}
	})
	t.Run("PATCH merges into the stored calendar", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "PATCH", cals+"/holidays", `{"properties": {"description": "Changed"}}`)
		if s := string(r.body); !strings.Contains(s, `"description":"Changed"`) || !strings.Contains(s, `"Christmas"`) {
			t.Fatalf("patch: %s", s)
		}
		b.mustDo(t, http.StatusNotFound, "PATCH", cals+"/nope", `{}`)
		b.mustDo(t, http.StatusBadRequest, "PATCH", cals+"/holidays", `{"properties": {"yearly": [{"month": 13, "day": 1}]}}`)
	})
	t.Run("a job naming a calendar its collection lacks is 400", func(t *testing.T) {
		r := b.mustDo(t, http.StatusBadRequest, "PUT", base+"/jc/jobs/j", jobExcluding("Holidays", "missing"))
		msg := details(t, r)["properties.recurrence.excludedCalendars[1]"]
		if !strings.Contains(msg, `calendar "missing" does not exist in collection "jc"; create it first with PUT …/jobCollections/jc/calendars/missing`) {
			t.Fatalf("body: %s", r.body)
		}
		b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", jobExcluding("HOLIDAYS"))
		b.mustDo(t, http.StatusBadRequest, "PATCH", base+"/jc/jobs/j", `{"properties": {"recurrence": {"excludedCalendars": ["missing"]}}}`)
	})
	t.Run("DELETE of a calendar jobs name is 409 naming them", func(t *testing.T) {
		for i := range 11 {
			b.mustDo(t, http.StatusCreated, "PUT", fmt.Sprintf("%s/jc/jobs/k%02d", base, i), jobExcluding("feiertage"))
		}
		r := b.mustDo(t, http.StatusConflict, "DELETE", cals+"/Feiertage", "")
		msg := r.json(t)["error"].(map[string]any)["message"].(string)
		if !strings.Contains(msg, "11 job(s)") || !strings.Contains(msg, "k00, k01") || !strings.Contains(msg, "and 1 more") {
			t.Fatalf("message: %s", msg)
		}
		r = b.mustDo(t, http.StatusConflict, "DELETE", cals+"/holidays", "")
		if !strings.Contains(string(r.body), ": j;") {
			t.Fatalf("body: %s", r.body)
		}
		b.mustDo(t, http.StatusOK, "DELETE", cals+"/another", "")
		b.mustDo(t, http.StatusNotFound, "DELETE", cals+"/another", "")
		b.mustDo(t, http.StatusOK, "PATCH", base+"/jc/jobs/j", `{"properties": {"recurrence": {"excludedCalendars": null}}}`)
		b.mustDo(t, http.StatusOK, "DELETE", cals+"/holidays", "")
	})
	t.Run("deleting the collection deletes its calendars", func(t *testing.T) {
		b.mustDo(t, http.StatusOK, "DELETE", base+"/jc", "")
		b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", `{"properties": {}}`)
		if list := b.mustDo(t, http.StatusOK, "GET", cals, "").json(t)["value"].([]any); len(list) != 0 {
			t.Fatalf("calendars of a new collection: %v", list)
		}
	})
}

func TestCalendarAccessFollowsTheCollection(t *testing.T) {
	t.Parallel()
	b := setupAccess(t, Config{}, operator, readerA, writerColl)
	c1, c2 := collections("subA", "rg")+"/c1", collections("subA", "rg")+"/c2"
	b.mustAs(t, operator, http.StatusCreated, "PUT", c1, `{"properties": {}}`)
	b.mustAs(t, operator, http.StatusCreated, "PUT", c2, `{"properties": {}}`)
	b.mustAs(t, writerColl, http.StatusCreated, "PUT", c1+"/calendars/h", calendarBody)
	b.mustAs(t, writerColl, http.StatusForbidden, "PUT", c2+"/calendars/h", calendarBody)
	b.mustAs(t, readerA, http.StatusOK, "GET", c1+"/calendars", "")
	b.mustAs(t, readerA, http.StatusOK, "GET", c1+"/calendars/h", "")
	b.mustAs(t, readerA, http.StatusForbidden, "PUT", c1+"/calendars/h", calendarBody)
	b.mustAs(t, readerA, http.StatusForbidden, "DELETE", c1+"/calendars/h", "")
	b.mustAs(t, writerColl, http.StatusOK, "DELETE", c1+"/calendars/h", "")
}
