package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/api"
)

func TestPreviewShowsWhatThePoliciesDo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Each job file is written before the subtests, which run in parallel:
	// one written again while another read it would read empty.
	jobs := map[string]string{}
	for _, action := range []string{"Skip", "NextBusinessDay"} {
		jobs[action] = writeFile(t, dir, "job-"+action+".json", `{"properties": {"startTime": "2030-12-23T09:00:00Z",
			"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
			"recurrence": {"frequency": "Day", "flexibleWindow": "PT30M", "excludedCalendars": ["holidays"], "onExcludedDay": "`+action+`"}}}`)
	}
	job := func(action string) string { return jobs[action] }
	jsonCal := writeFile(t, dir, "holidays.json", `{"properties": {"dates": [{"date": "2030-12-25", "name": "Christmas Day"}]}}`)
	icsCal := writeFile(t, dir, "holidays.ics", "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\nUID:1\r\nDTSTAMP:20300101T000000Z\r\nDTSTART;VALUE=DATE:20301225\r\nSUMMARY:Christmas Day\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
	named := writeFile(t, dir, "other.json", `{"name": "holidays", "properties": {"dates": [{"date": "2030-12-25", "name": "Christmas Day"}]}}`)
	window := `runs at 2030-12-2\dT09:\d\d:\d\dZ \(\+(\d+m)?(\d+s)? in its window\)`
	for _, tt := range []struct {
		name     string
		action   string
		calendar string
		want     []string
	}{
		{"a skipped day names its holiday and calendar (JSON)", "Skip", jsonCal, []string{
			`^2030-12-24T09:00:00Z  ` + window + `$`, `^2030-12-25T09:00:00Z  skipped \(Christmas Day, holidays\)$`, `^2030-12-26T09:00:00Z  ` + window + `$`}},
		{"an iCalendar file is named by its file name", "Skip", icsCal, []string{`^2030-12-25T09:00:00Z  skipped \(Christmas Day, holidays\)$`}},
		{"a JSON calendar that names itself keeps its name", "Skip", named, []string{`^2030-12-25T09:00:00Z  skipped \(Christmas Day, holidays\)$`}},
		{"a moved day says where it was moved from", "NextBusinessDay", jsonCal, []string{
			`^2030-12-26T09:00:00Z  moved from 2030-12-25T09:00:00Z \(Christmas Day, holidays\), ` + window + `$`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := runCLI(t, "", "preview", "--now", "2030-12-01T00:00:00Z", "--count", "5", "--calendar", tt.calendar, job(tt.action))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			for _, w := range tt.want {
				re := regexp.MustCompile(w)
				found := false
				for _, l := range lines {
					found = found || re.MatchString(l)
				}
				if !found {
					t.Errorf("no line matches %s in\n%s", w, out)
				}
			}
		})
	}
	t.Run("--job gives the runs the offsets the planner gives that job", func(t *testing.T) {
		t.Parallel()
		ref := contracts.JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc", Job: "nightly"}
		out, errOut, code := runCLI(t, "", "preview", "--now", "2030-12-01T00:00:00Z", "--count", "1", "--format", "json",
			"--calendar", jsonCal, "--job", "sub/rg/jc/nightly", job("Skip"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var occ []api.PreviewOccurrence
		if err := json.Unmarshal([]byte(out), &occ); err != nil || len(occ) != 1 || occ[0].RunAt == nil {
			t.Fatalf("%v: %s", err, out)
		}
		props, errs := planner.ParseJob([]byte(`{"startTime": "2030-12-23T09:00:00Z", "action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
			"recurrence": {"frequency": "Day", "flexibleWindow": "PT30M"}}`), time.Date(2030, 12, 1, 0, 0, 0, 0, time.UTC))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		sched, err := planner.NewSchedule(&props, time.Date(2030, 12, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		if want := sched.Due(ref.KVKey(), occ[0].Instant); !occ[0].RunAt.Equal(want) {
			t.Fatalf("runs at %s, want %s, the planner's time for %s", occ[0].RunAt, want, ref.Key())
		}
		cmd := newRootCommand()
		cmd.SetArgs([]string{"preview", "--calendar", jsonCal, "--job", "sub/rg/jc", job("Skip")})
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--job") {
			t.Fatalf("a --job of three parts: %v", err)
		}
	})
	t.Run("without the calendar the job excludes, the preview says so", func(t *testing.T) {
		t.Parallel()
		_, errOut, code := runCLI(t, "", "preview", "--now", "2030-12-01T00:00:00Z", job("Skip"))
		if code != 1 || !strings.Contains(errOut, "recurrence.excludedCalendars") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("a missing calendar file is an error naming the flag", func(t *testing.T) {
		t.Parallel()
		plain := writeFile(t, dir, "plain.json", `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
			"recurrence": {"frequency": "Day"}}}`)
		if _, errOut, code := runCLI(t, "", "preview", plain); code != 0 {
			t.Fatalf("without --calendar: exit %d: %s", code, errOut)
		}
		if _, _, code := runCLI(t, "", "preview", "--calendar", filepath.Join(dir, "nope.json"), plain); code != 1 {
			t.Fatalf("a missing calendar file: exit %d, want 1", code)
		}
		if _, err := readCalendar(filepath.Join(dir, "nope.json")); err == nil || !strings.Contains(err.Error(), "--calendar") {
			t.Fatalf("readCalendar: %v", err)
		}
	})
}

func TestJobSummaryShowsPoliciesAndFaults(t *testing.T) {
	t.Parallel()
	three := 3
	j := contracts.JobDefinition{Properties: contracts.JobProperties{
		CatchUp: contracts.CatchUpAll, CatchUpWindow: "PT6H", Overlap: contracts.OverlapSkip, PauseAfterFaults: &three,
		Recurrence: &contracts.Recurrence{Frequency: "Day"},
		Status:     &contracts.JobStatus{ConsecutiveFaults: 3, StateReason: "disabled after 3 consecutive faults"},
	}}
	var b bytes.Buffer
	printJobSummary(&b, j)
	for _, want := range []string{"policies: catch-up All within PT6H; overlap Skip; paused after 3 consecutive faults\n",
		"state reason: disabled after 3 consecutive faults\n", "consecutive faults: 3\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary\n%s\nlacks %q", b.String(), want)
		}
	}
	b.Reset()
	printJobSummary(&b, contracts.JobDefinition{Properties: contracts.JobProperties{Recurrence: &contracts.Recurrence{Frequency: "Day"}}})
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("a job without policies: %q", b.String())
	}
}

func TestAnOccurrenceFromTheAPIReadsAsOneLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 12, 26, 9, 0, 0, 0, time.UTC)
	run, from := at.Add(17*time.Minute+23*time.Second), at.Add(-24*time.Hour)
	for _, tt := range []struct {
		o    api.PreviewOccurrence
		want string
	}{
		{api.PreviewOccurrence{Instant: at, RunAt: &at}, "2030-12-26T09:00:00Z"},
		{api.PreviewOccurrence{Instant: at, RunAt: &run}, "2030-12-26T09:00:00Z  runs at 2030-12-26T09:17:23Z (+17m23s in its window)"},
		{api.PreviewOccurrence{Instant: at, Skipped: true, Calendar: "holidays"}, "2030-12-26T09:00:00Z  skipped (holidays)"},
		{api.PreviewOccurrence{Instant: at, RunAt: &at, MovedFrom: &from, Calendar: "holidays", Holiday: "Christmas Day"}, "2030-12-26T09:00:00Z  moved from 2030-12-25T09:00:00Z (Christmas Day, holidays)"},
	} {
		if got := occurrenceLine(tt.o); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
