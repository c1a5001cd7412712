// Command scheduler is the one binary of the scheduler: `dev` runs everything
// in one process, `preview` shows when a job would run, and later roles and
// client commands join it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(exitCode(err))
	}
}
