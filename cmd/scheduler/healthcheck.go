package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCommand checks a role's health endpoint, for container
// health checks in images that have no HTTP client of their own.
func newHealthcheckCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck [URL]",
		Short: "Exit 0 when a role's health endpoint answers 200 (default http://127.0.0.1:8080/readyz), 1 otherwise",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url := "http://127.0.0.1:8080/readyz"
			if len(args) == 1 {
				url = args[0]
			}
			client := &http.Client{Timeout: timeout}
			res, err := client.Get(url)
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("%s: %v", url, err)}
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return &exitError{code: 1, err: fmt.Errorf("%s answered %s", url, res.Status)}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}
