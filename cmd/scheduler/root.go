package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// exitError carries the exit status a command's error should end the
// process with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 2 // usage and other errors
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "scheduler",
		Short: "A job scheduler in the shape of Azure Scheduler, on NATS JetStream and Redis",
		Long: `A job scheduler in the shape of Azure Scheduler, on NATS JetStream and Redis.

"dev" runs everything in one process; "serve" runs one role against real
NATS and Redis servers. "collections", "jobs", "calendars", "history" and
"upcoming" manage a running scheduler through its REST API: --server
(default http://127.0.0.1:8080), --token, --subscription and
--resource-group (both "dev" by default, as "scheduler dev" prints them),
and --collection for jobs, calendars, history and upcoming, each
also from its environment variable (SCHEDULER_SERVER, SCHEDULER_TOKEN,
SCHEDULER_SUBSCRIPTION, SCHEDULER_RESOURCE_GROUP, SCHEDULER_COLLECTION).
"bench" measures a running scheduler with a load of HTTP jobs, through the
same API and flags.
"completion bash|zsh|fish|powershell" prints a shell completion script that
completes collection and job names from the server.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPreviewCommand(), newDevCommand(), newServeCommand(), newKeygenCommand(), newTokenCommand(),
		newCollectionsCommand(), newJobsCommand(), newCalendarsCommand(), newHistoryCommand(), newHealthcheckCommand(),
		newUpcomingCommand(), newBenchCommand())
	return root
}
