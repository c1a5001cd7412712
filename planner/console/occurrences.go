package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/api"
)

// This file puts into words what a job's scheduling policies do: to each
// occurrence of a preview (skipped or moved by an excluded calendar, run
// later within a flexible window), and to the job as a whole (catch-up,
// overlap, pausing after faults).

// occurrenceMarks returns what a preview occurrence shows besides its
// instant: why it is skipped or where it was moved from, and when it runs
// within its flexible window (window, when known, is the window's length).
func occurrenceMarks(o api.PreviewOccurrence, window time.Duration) []string {
	var marks []string
	held := heldBy(o.Holiday, o.Calendar)
	switch {
	case o.Skipped:
		return []string{"skipped: " + held}
	case o.MovedFrom != nil:
		m := "moved from " + o.MovedFrom.UTC().Format("2006-01-02 15:04:05") + " UTC"
		if held != "" {
			m += ": " + held
		}
		marks = append(marks, m)
	}
	if o.RunAt != nil && (window > 0 || !o.RunAt.Equal(o.Instant)) {
		marks = append(marks, runsAt(o.Instant, *o.RunAt, window))
	}
	return marks
}

// heldBy says what holds an excluded date: "New Year (holidays)", or
// "calendar holidays" for a date without a name.
func heldBy(holiday, calendar string) string {
	switch {
	case holiday != "" && calendar != "":
		return holiday + " (" + calendar + ")"
	case holiday != "":
		return holiday
	case calendar != "":
		return "calendar " + calendar
	}
	return ""
}

// runsAt says when an occurrence runs within its window: "runs at
// 09:17:23, +17m23s in its 30m window".
func runsAt(instant, run time.Time, window time.Duration) string {
	instant, run = instant.UTC(), run.UTC()
	layout := "15:04:05"
	if run.Format(time.DateOnly) != instant.Format(time.DateOnly) {
		layout = "2006-01-02 15:04:05"
	}
	s := "runs at " + run.Format(layout) + ", +" + shortDuration(run.Sub(instant))
	if window > 0 {
		return s + " in its " + shortDuration(window) + " window"
	}
	return s + " after its time"
}

// shortDuration writes a duration without its zero units: 30m, 17m23s,
// 1h5s, 0s.
func shortDuration(d time.Duration) string {
	d = d.Truncate(time.Second)
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.size; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.size
		}
	}
	return b.String()
}

// windowOf returns the length of a recurrence's flexible window, 0 when it
// has none or it cannot be read.
func windowOf(window string) time.Duration {
	if window == "" {
		return 0
	}
	d, err := contracts.ParseDuration(window)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// runPolicies puts a job's catch-up, overlap and pause-after-faults
// policies into words, each when it is set.
func runPolicies(p *contracts.JobProperties) []string {
	var out []string
	switch p.CatchUp {
	case "":
	case contracts.CatchUpEarliest:
		out = append(out, "Catch-up Earliest: after an outage, the earliest missed occurrence runs")
	case contracts.CatchUpSkip:
		out = append(out, "Catch-up Skip: missed occurrences do not run")
	case contracts.CatchUpLatest:
		out = append(out, "Catch-up Latest: after an outage, only the latest missed occurrence runs")
	case contracts.CatchUpAll:
		s := "Catch-up All: every missed occurrence runs"
		if p.CatchUpWindow != "" {
			s += ", within " + p.CatchUpWindow
		} else {
			s += ", within a day"
		}
		out = append(out, s)
	default:
		out = append(out, "Catch-up "+string(p.CatchUp))
	}
	switch p.Overlap {
	case "":
	case contracts.OverlapAllow:
		out = append(out, "Overlap Allow: an occurrence runs even while the previous one still runs")
	case contracts.OverlapSkip:
		out = append(out, "Overlap Skip: an occurrence due while the previous one still runs does not run")
	case contracts.OverlapBufferOne:
		out = append(out, "Overlap BufferOne: an occurrence due while the previous one still runs waits for it to end (one waits at most)")
	default:
		out = append(out, "Overlap "+string(p.Overlap))
	}
	if p.PauseAfterFaults != nil {
		out = append(out, fmt.Sprintf("Pause after faults: the job is disabled after %d consecutive faulted occurrences", *p.PauseAfterFaults))
	}
	return out
}
