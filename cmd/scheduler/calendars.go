package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jobscheduler/scheduler/contracts"
)

// calendarPath is the path of the collection's calendars, or of the one
// named.
func (o *clientOptions) calendarPath(name string) string {
	p := o.collectionsPath(o.collection, "calendars")
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

func newCalendarsCommand() *cobra.Command {
	o := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "calendars",
		Short: "List, show, create, import and delete the holiday calendars jobs exclude",
		Long: `Manage the holiday calendars of a job collection (--collection or
SCHEDULER_COLLECTION) through the scheduler's REST API (--server, --token,
or the environment). A job excludes them in recurrence.excludedCalendars.

` + exitCodesHelp,
	}
	addClientFlags(cmd, o, true)
	complete := func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.completeNames(cmd.Context(), true, o.calendarPath(""))
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the collection's calendars with what they hold",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			var l struct {
				Value []contracts.CalendarDefinition `json:"value"`
			}
			if err := o.call(cmd.Context(), http.MethodGet, o.calendarPath(""), nil, nil, &l); err != nil {
				return err
			}
			return o.printCalendars(cmd, l.Value, false)
		},
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a calendar", Args: oneName("calendar"), ValidArgsFunction: complete,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			var c contracts.CalendarDefinition
			if err := o.call(cmd.Context(), http.MethodGet, o.calendarPath(args[0]), nil, nil, &c); err != nil {
				return err
			}
			return o.printCalendars(cmd, []contracts.CalendarDefinition{c}, true)
		},
	}
	// put sends the file as a calendar of the content type.
	put := func(cmd *cobra.Command, name string, body []byte, contentType string) error {
		var c contracts.CalendarDefinition
		if err := o.callAs(cmd.Context(), http.MethodPut, o.calendarPath(name), nil, body, contentType, &c); err != nil {
			return err
		}
		return o.printCalendars(cmd, []contracts.CalendarDefinition{c}, true)
	}
	var putFile, importFile string
	putCmd := &cobra.Command{
		Use:   "put NAME -f FILE",
		Short: "Create or replace a calendar from its JSON definition",
		Args:  oneName("calendar"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			body, err := readDefinition(cmd, putFile)
			if err != nil {
				return err
			}
			return put(cmd, args[0], body, "application/json")
		},
	}
	putCmd.Flags().StringVarP(&putFile, "file", "f", "", "JSON definition of the calendar (- for stdin)")
	importCmd := &cobra.Command{
		Use:   "import NAME -f FILE.ics",
		Short: "Create or replace a calendar from an iCalendar (.ics) file of holidays",
		Long: `Create or replace the calendar NAME from an iCalendar file (- for stdin):
each event becomes a date, a range of dates, or a yearly rule
(RRULE:FREQ=YEARLY). An event the calendar cannot hold is refused with
its line.`,
		Args: oneName("calendar"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(true); err != nil {
				return err
			}
			body, err := readFileArg(cmd, importFile, "an iCalendar file is required: -f FILE.ics (- for stdin)", "the iCalendar file")
			if err != nil {
				return err
			}
			if !strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(string(body), "\uFEFF")), "BEGIN:VCALENDAR") {
				return &exitError{code: exitUsage, err: fmt.Errorf("%s is not an iCalendar file: it does not begin with BEGIN:VCALENDAR", orStdin(importFile))}
			}
			return put(cmd, args[0], body, "text/calendar; charset=utf-8")
		},
	}
	importCmd.Flags().StringVarP(&importFile, "file", "f", "", "the iCalendar file (- for stdin)")
	del := o.requestCommand(requestSpec{use: "delete", short: "Delete a calendar no job excludes", kind: "calendar",
		method: http.MethodDelete, done: "deleted", path: o.calendarPath}, complete)
	cmd.AddCommand(list, get, putCmd, importCmd, del)
	for _, c := range cmd.Commands() {
		silenceFlagErrors(c)
	}
	return cmd
}

// printCalendars prints calendars as a table, or as JSON.
func (o *clientOptions) printCalendars(cmd *cobra.Command, cs []contracts.CalendarDefinition, one bool) error {
	return printResources(o, cmd, cs, one, "NAME\tDATES\tRANGES\tYEARLY\tDESCRIPTION", func(w io.Writer, c contracts.CalendarDefinition) {
		_, name, _ := strings.Cut(c.Name, "/")
		p := c.Properties
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", name, len(p.Dates), len(p.Ranges), len(p.Yearly), oneLine(p.Description, 60))
	})
}
