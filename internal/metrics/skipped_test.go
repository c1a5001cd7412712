package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/internal/events"
)

// Each skip reason has its series from the start, and counts the
// occurrences skipped for it.
func TestSkippedOccurrencesAreCountedByReason(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	p := reg.Planner()
	scrape := func() string {
		rec := httptest.NewRecorder()
		reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		b, _ := io.ReadAll(rec.Body)
		return string(b)
	}
	if !strings.Contains(scrape(), `scheduler_occurrences_skipped_total{reason="overlap"} 0`) {
		t.Fatal("no overlap series before the first skip")
	}
	p.Skipped(events.Skipped{JobKey: "j", Reason: events.SkipOverlap})
	if !strings.Contains(scrape(), `scheduler_occurrences_skipped_total{reason="overlap"} 1`) {
		t.Fatal("the skip is not counted")
	}
}
