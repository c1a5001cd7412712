package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/api"
)

func newPreviewCommand() *cobra.Command {
	var (
		nowFlag   string
		count     int
		format    string
		calendars []string
		job       string
	)
	cmd := &cobra.Command{
		Use:   "preview [--now RFC3339] [--count N] [--format text|json] [--calendar FILE]... [--job SUB/RG/COLLECTION/JOB] FILE|-",
		Short: "Print the instants a job would run at",
		Long: `Print the first N instants a job would run at if it were created at --now,
one RFC 3339 UTC timestamp per line (or a JSON array with --format json).
FILE holds the job definition, as the ARM envelope {"properties": {...}} or the
bare properties object; "-" reads standard input. Fewer lines are printed when
the job completes first. An invalid definition prints every violation on
standard error and exits with status 1.

A job with a flexible window or excluded calendars prints each occurrence
with what its policies do: "skipped (<holiday>, <calendar>)", "moved from
<instant> (…)", and the time it runs within its window (with --format json,
objects as the API's preview occurrences). The calendars it excludes are
given with --calendar, once each: a JSON calendar file, or an iCalendar
(.ics) file, named by its file name without extension unless the JSON
names it. A run's offset in its window depends on the job's name: give
--job subscription/resourceGroup/collection/job for the times the planner
will use for that job (without it they are those of a job of no name).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			now := time.Now()
			if nowFlag != "" {
				t, err := time.Parse(time.RFC3339, nowFlag)
				if err != nil {
					return fmt.Errorf("--now %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", nowFlag)
				}
				now = t
			}
			if count < 1 {
				return fmt.Errorf("--count must be at least 1, not %d", count)
			}
			if format != "text" && format != "json" {
				return fmt.Errorf("--format must be text or json, not %q", format)
			}
			data, err := readInput(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			jobKey := ""
			if job != "" {
				parts := strings.Split(job, "/")
				if len(parts) != 4 {
					return fmt.Errorf("--job %q must be subscription/resourceGroup/collection/job", job)
				}
				ref := contracts.JobRef{Subscription: parts[0], ResourceGroup: parts[1], Collection: parts[2], Job: parts[3]}
				if err := ref.Validate(); err != nil {
					return fmt.Errorf("--job %q: %w", job, err)
				}
				jobKey = ref.KVKey()
			}
			var cals []*planner.Calendar
			for _, f := range calendars {
				c, err := readCalendar(f)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				cals = append(cals, c)
			}
			detail, err := planner.PreviewDetailed(data, now, count, jobKey, cals...)
			var invalid contracts.FieldErrors
			if errors.As(err, &invalid) {
				for _, fe := range invalid {
					fmt.Fprintln(cmd.ErrOrStderr(), fe.Error())
				}
				return &exitError{code: 1, err: fmt.Errorf("the job definition is invalid (%d problems)", len(invalid))}
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if hasPolicies(data) {
				return writeOccurrences(cmd.OutOrStdout(), api.PreviewOccurrences(detail), format)
			}
			instants := make([]time.Time, 0, len(detail))
			for _, o := range detail {
				instants = append(instants, o.At)
			}
			return writeInstants(cmd.OutOrStdout(), instants, format)
		},
	}
	cmd.Flags().StringVar(&nowFlag, "now", "", "the creation time, RFC 3339 (default: now)")
	cmd.Flags().IntVar(&count, "count", 10, "how many instants to print")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	cmd.Flags().StringArrayVar(&calendars, "calendar", nil, "a calendar the job excludes: a JSON or .ics file (repeatable)")
	cmd.Flags().StringVar(&job, "job", "", "the job the definition is for, subscription/resourceGroup/collection/job: its runs' offsets in a flexible window")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func readInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(stdin, 1<<20))
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("reading the job definition: %w", err)}
	}
	return data, nil
}

func writeInstants(w io.Writer, instants []time.Time, format string) error {
	lines := make([]string, len(instants))
	for i, t := range instants {
		lines[i] = t.UTC().Format(time.RFC3339)
	}
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(lines)
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// hasPolicies reports whether a valid definition has a flexible window or
// excluded calendars, whose effect a preview details.
func hasPolicies(data []byte) bool {
	d, errs := contracts.DecodeJob(data)
	if len(errs) > 0 {
		return false
	}
	r := d.Properties.Recurrence
	return r != nil && (r.FlexibleWindow != "" || len(r.ExcludedCalendars) > 0)
}
