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
