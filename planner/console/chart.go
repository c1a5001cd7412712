package console

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// chart is the histogram of runs per minute over the next hours, drawn as
// SVG bars by the overview's template, with its busiest minutes listed in
// words for those who do not see the chart.
type chart struct {
	Width, Height int
	Bars          []bar
	Ticks         []tick
	Max           int
	Total         int
	Busiest       []bar
}

type bar struct {
	X, Y, H int
	Minute  time.Time
	Count   int
}

type tick struct {
	X     int
	Label string
}

// Chart geometry: two pixels a minute.
const (
	barWidth    = 2
	chartHeight = 120
	busiestList = 5
)

// minuteChart draws counts (by UTC minute) from now for hours.
func minuteChart(now time.Time, hours int, counts map[time.Time]int) chart {
	start := now.UTC().Truncate(time.Minute)
	n := hours * 60
	ch := chart{Width: n * barWidth, Height: chartHeight}
	for _, c := range counts {
		ch.Max = max(ch.Max, c)
		ch.Total += c
	}
	for i := 0; i <= n; i += 60 {
		ch.Ticks = append(ch.Ticks, tick{X: i * barWidth, Label: start.Add(time.Duration(i) * time.Minute).Format("15:04")})
	}
	if ch.Max == 0 {
		return ch
	}
	for i := range n {
		m := start.Add(time.Duration(i) * time.Minute)
		c := counts[m]
		if c == 0 {
			continue
		}
		h := max(1, c*chartHeight/ch.Max)
		ch.Bars = append(ch.Bars, bar{X: i * barWidth, Y: chartHeight - h, H: h, Minute: m, Count: c})
	}
	busiest := slices.Clone(ch.Bars)
	// The busiest minutes first, the earliest among equals.
	slices.SortStableFunc(busiest, func(a, b bar) int { return b.Count - a.Count })
	ch.Busiest = busiest[:min(len(busiest), busiestList)]
	return ch
}

// outcomeChart is the stacked histogram of the attempts that ended in each
// minute of a recent window, succeeded below and failed on top, drawn as
// SVG bars by the overview's template, with the totals in words.
type outcomeChart struct {
	Width, Height int
	Minutes       int
	Bars          []outcomeBar
	Ticks         []tick
	Max           int64
	Succeeded     int64
	Failed        int64
}

// outcomeBar is one minute's stacked bar: the succeeded part from OkY
// down OkH pixels, the failed part above it from BadY down BadH pixels.
type outcomeBar struct {
	X                    int
	OkY, OkH, BadY, BadH int
	Minute               time.Time
	Succeeded, Failed    int64
}

// outcomeCount is how many attempts of one minute succeeded and failed.
type outcomeCount struct{ Succeeded, Failed int64 }

// Outcome chart geometry: ten pixels a minute, bars of eight.
const (
	outcomeSlot     = 10
	outcomeBarWidth = 8
	outcomeHeight   = 120
)

// newOutcomeChart draws counts (by UTC minute) over the minutes up to and
// including the one holding now.
func newOutcomeChart(now time.Time, minutes int, counts map[time.Time]outcomeCount) outcomeChart {
	start := now.UTC().Truncate(time.Minute).Add(-time.Duration(minutes-1) * time.Minute)
	ch := outcomeChart{Width: minutes * outcomeSlot, Height: outcomeHeight, Minutes: minutes}
	for i := 0; i < minutes; i += 15 {
		ch.Ticks = append(ch.Ticks, tick{X: i * outcomeSlot, Label: start.Add(time.Duration(i) * time.Minute).Format("15:04")})
	}
	for i := range minutes {
		c := counts[start.Add(time.Duration(i)*time.Minute)]
		ch.Max = max(ch.Max, c.Succeeded+c.Failed)
		ch.Succeeded += c.Succeeded
		ch.Failed += c.Failed
	}
	if ch.Max == 0 {
		return ch
	}
	for i := range minutes {
		m := start.Add(time.Duration(i) * time.Minute)
		c := counts[m]
		if c.Succeeded+c.Failed == 0 {
			continue
		}
		b := outcomeBar{X: i * outcomeSlot, Minute: m, Succeeded: c.Succeeded, Failed: c.Failed}
		total := int(max(1, (c.Succeeded+c.Failed)*outcomeHeight/ch.Max))
		if c.Failed > 0 {
			b.BadH = int(max(1, c.Failed*outcomeHeight/ch.Max))
		}
		if c.Succeeded > 0 {
			b.OkH = max(1, total-b.BadH)
		}
		b.OkY = outcomeHeight - b.OkH
		b.BadY = b.OkY - b.BadH
		ch.Bars = append(ch.Bars, b)
	}
	return ch
}

// definitionJSON returns the job's definition as the editor and the job
// page show it: its properties without the status, indented.
func definitionJSON(p contracts.JobProperties) string {
	p.Status = nil
	data, err := json.MarshalIndent(map[string]any{"properties": p}, "", "  ")
	if err != nil {
		return fmt.Sprintf("(the definition could not be written: %v)", err)
	}
	return string(data)
}
