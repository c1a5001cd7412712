package console

import (
	"testing"
	"time"
)

func TestTheOutcomeChartStacksFailedOnSucceeded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 1, 12, 30, 40, 0, time.UTC)
	first := time.Date(2026, 7, 1, 11, 31, 0, 0, time.UTC) // the window's first minute
	ch := newOutcomeChart(now, 60, map[time.Time]outcomeCount{
		first.Add(-time.Minute):     {Succeeded: 500}, // before the window
		first:                       {Succeeded: 30, Failed: 10},
		now.Truncate(time.Minute):   {Failed: 4},
		first.Add(10 * time.Minute): {}, // nothing: no bar
	})
	if ch.Succeeded != 30 || ch.Failed != 14 || ch.Max != 40 || ch.Width != 600 || len(ch.Ticks) != 4 {
		t.Fatalf("chart %+v", ch)
	}
	if len(ch.Bars) != 2 {
		t.Fatalf("bars %+v, want two", ch.Bars)
	}
	full, last := ch.Bars[0], ch.Bars[1]
	if full.X != 0 || full.OkH+full.BadH != outcomeHeight || full.BadH != 30 || full.OkY != 30 || full.BadY != 0 || !full.Minute.Equal(first) {
		t.Errorf("the busiest minute's bar %+v: want the full height, a quarter of it failed on top", full)
	}
	if last.X != 590 || last.OkH != 0 || last.BadH != 12 || last.BadY != outcomeHeight-12 {
		t.Errorf("the current minute's bar %+v: want a failed bar alone at the right end", last)
	}
	if empty := newOutcomeChart(now, 60, nil); len(empty.Bars) != 0 || empty.Succeeded+empty.Failed != 0 {
		t.Errorf("an empty window draws %+v", empty)
	}
}
