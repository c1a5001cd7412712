package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newDevCommand() *cobra.Command {
	var listen, dataDir string
	cmd := &cobra.Command{
		Use:   "dev [--listen 127.0.0.1:8080] [--data-dir DIR]",
		Short: "Run everything in one process with embedded NATS and Redis",
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "scheduler dev: the planner, its API and the embedded servers are not built yet.")
			fmt.Fprintln(out, "Meanwhile, check when a job would run with:")
			fmt.Fprintln(out, "  go run ./cmd/scheduler preview --count 5 docs/examples/weekday-morning.json")
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address of the REST API")
	cmd.Flags().StringVar(&dataDir, "data-dir", "scheduler-data", "directory for the embedded servers' data")
	return cmd
}
