package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/api"
)

// defaultCollection is the body `collections create` sends without a file.
const defaultCollection = `{"properties": {"sku": {"name": "Standard"}}}`

func newCollectionsCommand() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "collections",
		Short: "Create, list, enable, disable and delete job collections through the REST API",
		Long: `Manage the job collections of a subscription and resource group through
the scheduler's REST API (--server, --token, or the environment).

` + exitCodesHelp,
	}
	addClientFlags(cmd, o, false)
	complete := func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.completeCollections(cmd.Context())
	}
	var file string
	create := &cobra.Command{
		Use:   "create NAME [-f FILE]",
		Short: "Create or replace a job collection (Standard, Enabled, when no file is given)",
		Args:  oneName("job collection"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(false); err != nil {
				return err
			}
			body := []byte(defaultCollection)
			if file != "" {
				var err error
				if body, err = readDefinition(cmd, file); err != nil {
					return err
				}
			}
			var c contracts.JobCollectionDefinition
			if err := o.call(cmd.Context(), http.MethodPut, o.collectionsPath(args[0]), nil, body, &c); err != nil {
				return err
			}
			return o.printCollections(cmd, []contracts.JobCollectionDefinition{c}, true)
		},
	}
	create.Flags().StringVarP(&file, "file", "f", "", "JSON definition of the collection (- for stdin)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the job collections",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(false); err != nil {
				return err
			}
			var l contracts.JobCollectionListResult
			if err := o.call(cmd.Context(), http.MethodGet, o.collectionsPath(), nil, nil, &l); err != nil {
				return err
			}
			return o.printCollections(cmd, l.Value, false)
		},
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a job collection", Args: oneName("job collection"), ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(false); err != nil {
				return err
			}
			var c contracts.JobCollectionDefinition
			if err := o.call(cmd.Context(), http.MethodGet, o.collectionsPath(args[0]), nil, nil, &c); err != nil {
				return err
			}
			return o.printCollections(cmd, []contracts.JobCollectionDefinition{c}, true)
		},
	}
	request := func(use, short, method, suffix, done string) *cobra.Command {
		return o.requestCommand(requestSpec{use: use, short: short, kind: "job collection", method: method, done: done,
			path: func(name string) string { return o.collectionsPath(name) + suffix }}, complete)
	}
	cmd.AddCommand(create, list, get,
		request("enable", "Enable a job collection and its disabled jobs", http.MethodPost, "/enable", "enabled"),
		request("disable", "Disable a job collection and its enabled jobs", http.MethodPost, "/disable", "disabled"),
		request("delete", "Delete a job collection, its jobs and their history", http.MethodDelete, "", "deleted"))
	for _, c := range cmd.Commands() {
		silenceFlagErrors(c)
	}
	return cmd
}

// printCollections prints collections as a table, or as JSON (one
// resource alone, unless a table was asked for).
func (o *clientOptions) printCollections(cmd *cobra.Command, cs []contracts.JobCollectionDefinition, one bool) error {
	return printResources(o, cmd, cs, one, "NAME\tSTATE\tPLAN\tMAX JOBS", func(w io.Writer, c contracts.JobCollectionDefinition) {
		state, plan, maxJobs := "", "", "-"
		if p := c.Properties; p != nil {
			state = string(p.State)
			if p.Sku != nil {
				plan = string(p.Sku.Name)
			}
			if p.Quota != nil && p.Quota.MaxJobCount != nil {
				maxJobs = strconv.Itoa(*p.Quota.MaxJobCount)
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Name, state, plan, maxJobs)
	})
}

func newJobsCommand() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Create, list, enable, disable, run, preview and delete jobs through the REST API",
		Long: `Manage the jobs of a job collection (--collection or SCHEDULER_COLLECTION)
through the scheduler's REST API (--server, --token, or the environment).

` + exitCodesHelp,
	}
	addClientFlags(cmd, o, true)
	complete := func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.completeJobs(cmd.Context())
	}
	var (
		file        string
		concurrency int
	)
	create := &cobra.Command{
		Use:   "create [NAME] -f FILE",
		Short: "Create or replace a job from its JSON definition (the Azure Scheduler job format), or many from a file",
		Long:  "Create or replace the job NAME from its JSON definition in FILE (- for stdin).\n\n" + jobsFileHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil // a file of many jobs
			}
			return oneName("job")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			if len(args) == 0 {
				return o.createMany(cmd, file, concurrency)
			}
			body, err := readDefinition(cmd, file)
			if err != nil {
				return err
			}
			var j contracts.JobDefinition
			if err := o.call(cmd.Context(), http.MethodPut, o.jobPath(args[0]), nil, body, &j); err != nil {
				return err
			}
			return o.printJobs(cmd, []contracts.JobDefinition{j}, true)
		},
	}
	create.Flags().StringVarP(&file, "file", "f", "", "JSON definition of the job, or without NAME a file of many jobs (- for stdin)")
	create.Flags().IntVar(&concurrency, "concurrency", defaultConcurrency, "how many jobs of a file of many are created at a time (1 to 256)")
	var state string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the collection's jobs with their state, next run and counters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			var jobs []contracts.JobDefinition
			q := url.Values{"$top": {"100"}}
			if state != "" {
				q.Set("$filter", "state eq "+state)
			}
			for skip := 0; ; skip += 100 {
				q.Set("$skip", strconv.Itoa(skip))
				var l contracts.JobListResult
				if err := o.call(cmd.Context(), http.MethodGet, o.jobPath(""), q, nil, &l); err != nil {
					return err
				}
				jobs = append(jobs, l.Value...)
				if l.NextLink == nil || len(l.Value) == 0 {
					break
				}
			}
			return o.printJobs(cmd, jobs, false)
		},
	}
	list.Flags().StringVar(&state, "state", "", "only jobs in this state: Enabled, Disabled, Completed or Faulted")
	_ = list.RegisterFlagCompletionFunc("state", cobra.FixedCompletions([]string{"Enabled", "Disabled", "Completed", "Faulted"}, cobra.ShellCompDirectiveNoFileComp))
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a job with its status, and its schedule in words on stderr", Args: oneName("job"), ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			var j contracts.JobDefinition
			if err := o.call(cmd.Context(), http.MethodGet, o.jobPath(args[0]), nil, nil, &j); err != nil {
				return err
			}
			return o.printJobs(cmd, []contracts.JobDefinition{j}, true)
		},
	}
	request := func(use, short, method, suffix string, body []byte, done string) *cobra.Command {
		return o.requestCommand(requestSpec{use: use, short: short, kind: "job", method: method, body: body, done: done,
			path: func(name string) string { return o.jobPath(name) + suffix }}, complete)
	}
	var count int
	preview := &cobra.Command{
		Use: "preview NAME", Short: "Show when a stored job runs next", Args: oneName("job"), ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			if count < 1 || count > 1000 {
				return &exitError{code: exitUsage, err: fmt.Errorf("--count must be from 1 to 1000, not %d", count)}
			}
			var p api.PreviewResult
			q := url.Values{"count": {strconv.Itoa(count)}}
			if err := o.call(cmd.Context(), http.MethodGet, o.jobPath(args[0], "preview"), q, nil, &p); err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd, p)
			}
			if len(p.Value) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "job %s is %s: it has no run to come\n", args[0], p.State)
			}
			if len(p.Occurrences) > 0 {
				return writeOccurrences(cmd.OutOrStdout(), p.Occurrences, "text")
			}
			for _, t := range p.Value {
				fmt.Fprintln(cmd.OutOrStdout(), t.UTC().Format(time.RFC3339))
			}
			return nil
		},
	}
	preview.Flags().IntVarP(&count, "count", "n", 5, "how many instants to show (1 to 1000)")
	cmd.AddCommand(create, list, get, preview, o.backfillCommand(complete),
		request("enable", "Enable a job (its schedule starts again from now)", http.MethodPatch, "", []byte(`{"properties": {"state": "Enabled"}}`), "enabled"),
		request("disable", "Disable a job", http.MethodPatch, "", []byte(`{"properties": {"state": "Disabled"}}`), "disabled"),
		request("run", "Run a job's action once now, outside its schedule", http.MethodPost, "/run", nil, "is running"),
		request("delete", "Delete a job and its history", http.MethodDelete, "", nil, "deleted"))
	for _, c := range cmd.Commands() {
		silenceFlagErrors(c)
	}
	return cmd
}

// printJobs prints jobs as a table, or as JSON. One job printed as JSON
// because no format was asked for is followed, on stderr, by a "schedule:"
// line saying when it runs: stdout stays JSON for scripts.
func (o *clientOptions) printJobs(cmd *cobra.Command, jobs []contracts.JobDefinition, one bool) error {
	if one && o.output == "" && len(jobs) == 1 {
		defer printJobSummary(cmd.ErrOrStderr(), jobs[0])
	}
	return printResources(o, cmd, jobs, one, "NAME\tSTATE\tSCHEDULE\tNEXT RUN\tRUNS\tFAILED\tFAULTED", func(w io.Writer, j contracts.JobDefinition) {
		_, name, _ := strings.Cut(j.Name, "/")
		next, runs, failed, faulted := "-", 0, 0, 0
		if st := j.Properties.Status; st != nil {
			if st.NextExecutionTime != nil {
				next = st.NextExecutionTime.UTC().Format(time.RFC3339)
			}
			runs, failed, faulted = st.ExecutionCount, st.FailureCount, st.FaultedCount
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\n", name, j.Properties.State, jobSchedule(j), next, runs, failed, faulted)
	})
}

// printResources prints resources as a table (header, then one row each)
// or as JSON: one resource alone prints as JSON unless a table was asked
// for, a list as a table unless JSON was.
func printResources[T any](o *clientOptions, cmd *cobra.Command, items []T, one bool, header string, row func(w io.Writer, item T)) error {
	if o.output == "json" || (one && o.output == "") {
		if one {
			return printJSON(cmd, items[0])
		}
		return printJSON(cmd, items)
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, header)
	for _, item := range items {
		row(w, item)
	}
	return w.Flush()
}

// requestSpec describes a client command that sends one request about the
// resource its argument names and says it is done.
type requestSpec struct {
	use, short string
	// kind is "job collection", "job" or "calendar"; all but a collection
	// need --collection.
	kind   string
	method string
	path   func(name string) string
	body   []byte
	done   string
}

// requestCommand builds the command spec describes.
func (o *clientOptions) requestCommand(spec requestSpec, complete cobra.CompletionFunc) *cobra.Command {
	return &cobra.Command{
		Use: spec.use + " NAME", Short: spec.short, Args: oneName(spec.kind), ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(spec.kind != "job collection"); err != nil {
				return err
			}
			if err := o.call(cmd.Context(), spec.method, spec.path(args[0]), nil, spec.body, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", spec.kind, args[0], spec.done)
			return nil
		},
	}
}

// printJobSummary says when a job runs, with its run policies, why the
// scheduler changed its state and its consecutive faults, when set.
func printJobSummary(w io.Writer, j contracts.JobDefinition) {
	fmt.Fprintln(w, "schedule: "+jobSchedule(j))
	if ps := runPolicies(&j.Properties); len(ps) > 0 {
		fmt.Fprintln(w, "policies: "+strings.Join(ps, "; "))
	}
	if st := j.Properties.Status; st != nil {
		if st.StateReason != "" {
			fmt.Fprintln(w, "state reason: "+st.StateReason)
		}
		if st.ConsecutiveFaults > 0 {
			fmt.Fprintf(w, "consecutive faults: %d\n", st.ConsecutiveFaults)
		}
	}
}

// jobSchedule says when a job runs: "every weekday at 09:00 Europe/Berlin".
func jobSchedule(j contracts.JobDefinition) string {
	return planner.Describe(j.Properties.StartTime, j.Properties.Recurrence)
}

func newHistoryCommand() *cobra.Command {
	o := &clientOptions{}
	var (
		top, skip int
		status    string
	)
	cmd := &cobra.Command{
		Use:   "history JOB",
		Short: "Show a job's history: every attempt, newest first, with what the target answered",
		Long: `Show a job's history through the scheduler's REST API: every attempt,
newest first, with its status and the message of the target's answer.

` + exitCodesHelp,
		Args: oneName("job"),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return o.completeJobs(cmd.Context())
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			if top < 1 || top > 100 || skip < 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("--top must be from 1 to 100 and --skip at least 0, not %d and %d", top, skip)}
			}
			q := url.Values{"$top": {strconv.Itoa(top)}, "$skip": {strconv.Itoa(skip)}}
			if status != "" {
				v, ok := contracts.ParseEnum(status, contracts.ExecutionStatuses)
				if !ok {
					return &exitError{code: exitUsage, err: fmt.Errorf("--status must be one of %s, not %q", contracts.EnumList(contracts.ExecutionStatuses), status)}
				}
				q.Set("$filter", "status eq "+string(v))
			}
			var l contracts.JobHistoryListResult
			if err := o.call(cmd.Context(), http.MethodGet, o.jobPath(args[0], "history"), q, nil, &l); err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd, l.Value)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "START\tEXPECTED\tACTION\tSTATUS\tREPEAT\tRETRY\tMESSAGE")
			for _, h := range l.Value {
				p := h.Properties
				st := string(p.Status)
				if st == "" {
					st = string(contracts.StatusCompleted)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", timeOrDash(p.StartTime), timeOrDash(p.ExpectedExecutionTime),
					p.ActionName, st, p.RepeatCount, p.RetryCount, oneLine(p.Message, 100))
			}
			return w.Flush()
		},
	}
	addClientFlags(cmd, o, true)
	cmd.Flags().IntVar(&top, "top", 20, "how many entries to show (1 to 100)")
	cmd.Flags().IntVar(&skip, "skip", 0, "how many of the newest entries to skip")
	cmd.Flags().StringVar(&status, "status", "", "only entries with this status: Completed, Failed or Postponed")
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions([]string{"Completed", "Failed", "Postponed"}, cobra.ShellCompDirectiveNoFileComp))
	silenceFlagErrors(cmd)
	return cmd
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// oneLine flattens a message to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// backfillCommand is `jobs backfill NAME --start … --end …`: POST
// …/backfill, which runs each instant of the job's schedule in the range,
// in order, at a bounded rate.
func (o *clientOptions) backfillCommand(complete cobra.CompletionFunc) *cobra.Command {
	var start, end string
	cmd := &cobra.Command{
		Use:   "backfill NAME --start DATE-TIME --end DATE-TIME",
		Short: "Run a job once for each instant of its schedule in a past range, in order, outside its schedule",
		Long: "Run a job once for each instant of its schedule from --start to --end (ISO 8601 date-times, UTC without an offset),\n" +
			"in order and at a bounded rate, each with its instant as its expected time. The runs are outside the schedule:\n" +
			"the job's next run and counters do not change. At most 10000 instants; one backfill of a job at a time.",
		Args: oneName("job"), ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			if start == "" || end == "" {
				return &exitError{code: exitUsage, err: errors.New("--start and --end are required")}
			}
			body, err := json.Marshal(map[string]string{"start": start, "end": end})
			if err != nil {
				return err
			}
			var answer api.BackfillAnswer
			if err := o.call(cmd.Context(), http.MethodPost, o.jobPath(args[0], "backfill"), nil, body, &answer); err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd, answer)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s is backfilling %d runs from %s to %s, one per %s: about %s\n", args[0], answer.Count,
				answer.First.UTC().Format(time.RFC3339), answer.Last.UTC().Format(time.RFC3339), answer.Pace, answer.Duration)
			return nil
		},
	}
	cmd.Flags().StringVar(&start, "start", "", "first instant of the range, ISO 8601 (required)")
	cmd.Flags().StringVar(&end, "end", "", "last instant of the range, ISO 8601, not after now (required)")
	return cmd
}
