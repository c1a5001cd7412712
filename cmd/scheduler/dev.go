package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobscheduler/scheduler/internal/dev"
)

func newDevCommand() *cobra.Command {
	var cfg dev.Config
	cmd := &cobra.Command{
		Use:   "dev [--listen 127.0.0.1:8080] [--data-dir DIR]",
		Short: "Run everything in one process with embedded NATS and Redis",
		Long: `Run the whole scheduler in one process: an embedded NATS server with
JetStream (data under --data-dir, so collections, jobs and history survive a
restart), an embedded Redis-protocol server (rebuilt from NATS at every
start), the planner with its REST API, a worker and the history consumer.
The API needs no token on loopback, and HTTP actions may call endpoints on
loopback.

The embedded NATS server writes every message to disk (fsync) before it
acknowledges it (JetStream's sync_interval: always, as in the deploy files),
so what the API accepted survives a crash of the machine, not only of the
process. One process at a time uses a data directory: a second scheduler
dev on the same --data-dir stops at once, naming the directory and the
process holding it (the lock file scheduler-dev.lock in it).`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "address of the REST API")
	cmd.Flags().StringVar(&cfg.DataDir, "data-dir", "scheduler-data", "directory for the embedded servers' data and the encryption key")
	cmd.Flags().StringVar(&cfg.TokensFile, "api-tokens-file", "", "YAML file of scoped bearer tokens the API then asks for (by default it needs none)")
	var senders workerFlags
	vars := map[string]string{"api-tokens-file": envAPITokensFile}
	senders.add(cmd.Flags(), vars, true)
	otlpFlag(cmd.Flags(), vars, &cfg.OTLPEndpoint)
	bindEnv(cmd, vars)
	logger := logFlags(cmd, "text")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		log, err := logger()
		if err != nil {
			return err
		}
		cfg.Logger = log
		wc, err := senders.config()
		if err != nil {
			return err
		}
		cfg.Actions = wc.Actions
		env, err := dev.Start(cmd.Context(), cfg)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		printWelcome(cmd, env)
		<-cmd.Context().Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		env.Stop(ctx)
		return nil
	}
	return cmd
}

func printWelcome(cmd *cobra.Command, env *dev.Env) {
	api := "http://" + env.APIAddr()
	base := api + "/subscriptions/dev/resourceGroups/dev/providers/Microsoft.Scheduler/jobCollections/demo"
	fmt.Fprintf(cmd.OutOrStdout(), `scheduler dev is running.
  Console    %s/
  REST API   %s (Azure Scheduler 2016-03-01 paths; no token needed on loopback)
  NATS       %s (embedded, JetStream; every write on disk before it is acknowledged)
  Health     %s/healthz   %s/readyz   Metrics %s/metrics

Create a job collection and a job that calls an endpoint every minute, 5 times:
  curl -X PUT '%s?api-version=2016-03-01' -H 'Content-Type: application/json' -d '{"properties": {"sku": {"name": "Standard"}}}'
  curl -X PUT '%s/jobs/hello?api-version=2016-03-01' -H 'Content-Type: application/json' \
    -d '{"properties": {"action": {"type": "Http", "request": {"uri": "http://127.0.0.1:9000/hello", "method": "POST"}}, "recurrence": {"frequency": "Minute", "count": 5}}}'
  curl '%s/jobs/hello?api-version=2016-03-01'
  curl '%s/jobs/hello/history?api-version=2016-03-01'

Stop with Ctrl-C.
`, api, api, env.NATSURL(), api, api, api, base, base, base, base)
}
