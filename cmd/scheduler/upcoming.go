package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobscheduler/scheduler/planner/api"
)

func newUpcomingCommand() *cobra.Command {
	o := &clientOptions{}
	var hours, top int
	cmd := &cobra.Command{
		Use:   "upcoming [--hours H] [-c COLLECTION] [--top N]",
		Short: "List the runs due in the next hours across the job collections you may read",
		Long: `List the runs due in the next hours (6 by default, at most 168) of the
enabled jobs of the resource group's enabled job collections, or of one
collection with --collection, earliest first, through the scheduler's REST
API (--server, --token, or the environment). Each run shows whether it is
an occurrence of the job's schedule or a pending retry, error action or
run now; a job with a time zone shows the local time there too.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(false); err != nil {
				return err
			}
			if hours < 1 || hours > 168 {
				return &exitError{code: exitUsage, err: fmt.Errorf("--hours must be from 1 to 168 (7 days), not %d", hours)}
			}
			if top < 1 || top > 10000 {
				return &exitError{code: exitUsage, err: fmt.Errorf("--top must be from 1 to 10000, not %d", top)}
			}
			path := "/subscriptions/" + url.PathEscape(o.subscription) + "/resourceGroups/" + url.PathEscape(o.resourceGroup) +
				"/providers/Microsoft.Scheduler/upcoming"
			if o.collection != "" {
				path = o.collectionsPath(o.collection) + "/upcoming"
			}
			q := url.Values{"hours": {strconv.Itoa(hours)}, "$top": {strconv.Itoa(top)}}
			var l api.UpcomingResult
			if err := o.call(cmd.Context(), http.MethodGet, path, q, nil, &l); err != nil {
				return err
			}
			if l.NextLink != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "more runs are due in the window: raise --top (now %d) or lower --hours\n", top)
			}
			if o.output == "json" {
				return printJSON(cmd, l.Value)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "DUE\tLOCAL TIME\tCOLLECTION\tJOB\tACTION\tKIND")
			for _, r := range l.Value {
				local := "-"
				if r.LocalTime != "" {
					local = r.LocalTime + " " + r.TimeZone
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Due.UTC().Format(time.RFC3339), local, r.JobCollection, r.Job, r.ActionType, r.Kind)
			}
			return w.Flush()
		},
	}
	addClientFlags(cmd, o, true)
	cmd.Flags().IntVar(&hours, "hours", 6, "how many hours from now to list (1 to 168)")
	cmd.Flags().IntVar(&top, "top", 1000, "how many runs to list at most (1 to 10000)")
	silenceFlagErrors(cmd)
	return cmd
}
