package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/api"
)

// occurrenceLine is one occurrence of a preview as the commands print it:
// its instant, then why it is skipped, where it was moved from and when
// it runs within its flexible window.
func occurrenceLine(o api.PreviewOccurrence) string {
	s := o.Instant.UTC().Format(time.RFC3339)
	held := o.Calendar
	if o.Holiday != "" {
		held = o.Holiday + ", " + o.Calendar
	}
	if o.Skipped {
		return s + "  skipped (" + held + ")"
	}
	var marks []string
	if o.MovedFrom != nil {
		marks = append(marks, "moved from "+o.MovedFrom.UTC().Format(time.RFC3339)+" ("+held+")")
	}
	if o.RunAt != nil && !o.RunAt.Equal(o.Instant) {
		marks = append(marks, fmt.Sprintf("runs at %s (+%s in its window)", o.RunAt.UTC().Format(time.RFC3339), o.RunAt.Sub(o.Instant)))
	}
	if len(marks) == 0 {
		return s
	}
	return s + "  " + strings.Join(marks, ", ")
}

// writeOccurrences prints occurrences one a line, or as a JSON array.
func writeOccurrences(w io.Writer, occ []api.PreviewOccurrence, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(occ)
	}
	for _, o := range occ {
		if _, err := fmt.Fprintln(w, occurrenceLine(o)); err != nil {
			return err
		}
	}
	return nil
}

// readCalendar reads and compiles a calendar file: JSON (the ARM envelope,
// which may name the calendar, or the bare properties) or iCalendar
// (.ics). It is named by its file name without extension unless the JSON
// names it.
func readCalendar(file string) (*planner.Calendar, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--calendar: %w", err)
	}
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	var props contracts.CalendarProperties
	if strings.EqualFold(filepath.Ext(file), ".ics") {
		props, err = contracts.ImportICalendar(data)
		if err != nil {
			return nil, fmt.Errorf("--calendar %s: %w", file, err)
		}
	} else {
		d, errs := contracts.DecodeCalendar(data)
		if len(errs) > 0 {
			return nil, fmt.Errorf("--calendar %s: %w", file, errs)
		}
		props = d.Properties
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(data, &named) == nil && named.Name != "" {
			_, last, _ := strings.Cut(named.Name, "/")
			name = strings.TrimSpace(last)
			if name == "" {
				name = named.Name
			}
		}
	}
	c, err := planner.CompileCalendar(name, &props)
	if err != nil {
		return nil, fmt.Errorf("--calendar %s: %w", file, err)
	}
	return c, nil
}

// runPolicies puts a job's catch-up, overlap and pause-after-faults
// policies into words, each when it is set.
func runPolicies(p *contracts.JobProperties) []string {
	var out []string
	if p.CatchUp != "" {
		s := "catch-up " + string(p.CatchUp)
		if p.CatchUp == contracts.CatchUpAll && p.CatchUpWindow != "" {
			s += " within " + p.CatchUpWindow
		}
		out = append(out, s)
	}
	if p.Overlap != "" {
		out = append(out, "overlap "+string(p.Overlap))
	}
	if p.PauseAfterFaults != nil {
		out = append(out, fmt.Sprintf("paused after %d consecutive faults", *p.PauseAfterFaults))
	}
	return out
}
