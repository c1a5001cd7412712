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
		Use:           "scheduler",
		Short:         "A job scheduler in the shape of Azure Scheduler, on NATS JetStream and Redis",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newPreviewCommand(), newDevCommand(), newServeCommand(), newKeygenCommand(),
		newCollectionsCommand(), newJobsCommand(), newHistoryCommand(), newHealthcheckCommand())
	return root
}
