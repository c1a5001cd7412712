package console

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

func TestMergePatchTurnsTheStoredDefinitionIntoTheEdited(t *testing.T) {
	var before, after map[string]any
	_ = json.Unmarshal([]byte(`{"properties": {"action": {"type": "Http", "request": {"uri": "https://a/", "method": "GET",
		"authentication": {"type": "Basic", "username": "u"}}, "retryPolicy": {"retryType": "Fixed"}},
		"recurrence": {"frequency": "Day", "schedule": {"hours": [9]}}, "state": "Enabled"}}`), &before)
	_ = json.Unmarshal([]byte(`{"properties": {"action": {"type": "Http", "request": {"uri": "https://a/", "method": "POST",
		"authentication": {"type": "Basic", "username": "u"}}},
		"recurrence": {"frequency": "Day", "schedule": {"hours": [9, 17]}}, "state": "Enabled"}}`), &after)
	got := mergePatch(before, after)
	want := map[string]any{"properties": map[string]any{
		"action":     map[string]any{"request": map[string]any{"method": "POST"}, "retryPolicy": nil},
		"recurrence": map[string]any{"schedule": map[string]any{"hours": []any{9.0, 17.0}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("patch %v, want %v", got, want)
	}
	// The password the page never showed is in neither: the patch leaves it.
	if mergePatch(before, before) != nil {
		t.Fatal("an unchanged definition gives a patch")
	}
}

func TestFieldLineFindsTheFieldOfAnError(t *testing.T) {
	body := `{
  "properties": {
    "action": {
      "type": "Http",
      "request": {
        "uri": "not a url"
      }
    },
    "recurrence": {"frequency": "Day",
      "schedule": {"hours": [
        9,
        25]}}
  }
}`
	for _, tt := range []struct {
		field string
		line  int
	}{
		{"properties.action.request.uri", 6},
		{"properties.recurrence.schedule.hours[1]", 12},
		{"properties.action.request.method", 5}, // missing: its parent's line
		{"Properties.Action.Type", 4},           // names in any case, as the decoder reads them
		{"properties.nothing", 2},
	} {
		if got := fieldLine(body, tt.field); got != tt.line {
			t.Errorf("fieldLine(%s) = %d, want %d", tt.field, got, tt.line)
		}
	}
	if got := fieldLine(`{"properties": `, "properties.action"); got != 1 {
		t.Errorf("a truncated draft: %d", got)
	}
}

func TestNextRunsMarkDaylightSavingChanges(t *testing.T) {
	// 09:00 in Berlin on the days around the end of summer time 2026.
	at := []time.Time{
		time.Date(2026, 10, 24, 7, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 25, 8, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC),
	}
	runs := nextRuns(previewJSON{Value: at}, "Europe/Berlin", "")
	if runs[0].Local != "2026-10-24 09:00:00 +02:00 CEST" || runs[1].Local != "2026-10-25 09:00:00 +01:00 CET" {
		t.Fatalf("local times %q, %q", runs[0].Local, runs[1].Local)
	}
	if runs[0].Change != "" || !strings.Contains(runs[1].Change, "daylight saving time ends") || runs[2].Change != "" {
		t.Fatalf("changes %q %q %q", runs[0].Change, runs[1].Change, runs[2].Change)
	}
	if r := nextRuns(previewJSON{Value: at}, "", ""); r[1].Local != "" || r[1].Change != "" {
		t.Fatalf("UTC runs: %+v", r)
	}
}

func TestSigningInNeverLeavesTheConsole(t *testing.T) {
	for in, want := range map[string]string{
		"/c/s/rg/c": "/c/s/rg/c", "": "/", "https://evil.example/": "/", "//evil.example/": "/", "/\\evil.example": "/",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMinuteChart(t *testing.T) {
	now := time.Date(2026, 1, 5, 7, 58, 30, 0, time.UTC)
	top := time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	ch := minuteChart(now, 1, map[time.Time]int{top: 40, top.Add(time.Minute): 10, top.Add(2 * time.Hour): 99})
	if ch.Max != 99 || len(ch.Bars) != 2 || ch.Bars[0].X != 2*barWidth || ch.Bars[0].Count != 40 {
		t.Fatalf("chart %+v", ch)
	}
	if ch.Busiest[0].Minute != top {
		t.Fatalf("busiest %+v", ch.Busiest)
	}
	if empty := minuteChart(now, 6, nil); len(empty.Bars) != 0 || len(empty.Ticks) != 7 {
		t.Fatalf("empty chart %+v", empty)
	}
}

func TestJobIDsReadBack(t *testing.T) {
	ref := contracts.JobRef{Subscription: "s 1", ResourceGroup: "rg", Collection: "c", Job: "a/b"}
	got, ok := parseJobID(jobPath(ref))
	if !ok || got != ref {
		t.Fatalf("parseJobID(%s) = %+v", jobPath(ref), got)
	}
	if jobHref(ref) != "/c/s%201/rg/c/jobs/a%2Fb" {
		t.Fatalf("jobHref %s", jobHref(ref))
	}
}

func TestTheVendoredFilesAreThePinnedOnes(t *testing.T) {
	data, err := staticFiles.ReadFile("static/htmx-2.0.11.min.js")
	if err != nil {
		t.Fatal(err)
	}
	const want = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717" // static/VENDORED.md
	if got := fmt.Sprintf("%x", sha256.Sum256(data)); got != want {
		t.Fatalf("static/htmx-2.0.11.min.js has sha256 %s, not the pinned %s", got, want)
	}
	layout, err := templateFiles.ReadFile("templates/layout.html")
	if err != nil || !strings.Contains(string(layout), `src="/static/htmx-2.0.11.min.js"`) {
		t.Fatalf("the layout does not load the vendored htmx: %v", err)
	}
}
