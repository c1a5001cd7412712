package main

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Environment variables; each flag of the serve commands falls back to one
// (see bindEnv).
const (
	envNATSURL        = "SCHEDULER_NATS_URL"
	envRedisURL       = "SCHEDULER_REDIS_URL"
	envRedisCluster   = "SCHEDULER_REDIS_CLUSTER"
	envListen         = "SCHEDULER_LISTEN"
	envMaxConns       = "SCHEDULER_MAX_CONNECTIONS"
	envAPIHosts       = "SCHEDULER_API_HOSTS" // comma-separated
	envPublicURL      = "SCHEDULER_PUBLIC_URL"
	envMetricsListen  = "SCHEDULER_METRICS_LISTEN"
	envAPITokens      = "SCHEDULER_API_TOKENS" // comma-separated
	envEncryptionKey  = "SCHEDULER_ENCRYPTION_KEY"
	envKeyFile        = "SCHEDULER_ENCRYPTION_KEY_FILE"
	envLogFormat      = "SCHEDULER_LOG_FORMAT"
	envReplicas       = "SCHEDULER_REPLICAS"
	envPartitions     = "SCHEDULER_PARTITIONS"
	envRedisPrefix    = "SCHEDULER_REDIS_PREFIX"
	envLease          = "SCHEDULER_LEASE"
	envActionTimeout  = "SCHEDULER_ACTION_TIMEOUT"
	envEndedRetention = "SCHEDULER_ENDED_RETENTION"
	envPublishAhead   = "SCHEDULER_PUBLISH_AHEAD"
	envConcurrency    = "SCHEDULER_CONCURRENCY"
	envHold           = "SCHEDULER_HOLD"
	envAckWait        = "SCHEDULER_ACK_WAIT"
	envMaxDeliveries  = "SCHEDULER_MAX_DELIVERIES"
	envDrainTimeout   = "SCHEDULER_DRAIN_TIMEOUT"
	envWorkerName     = "SCHEDULER_WORKER_NAME"
	envAllowLoopback  = "SCHEDULER_ALLOW_LOOPBACK"
	envAllowPrivate   = "SCHEDULER_ALLOW_PRIVATE_NETWORKS"
	envCAFile         = "SCHEDULER_CA_FILE"
	envOAuthAuthority = "SCHEDULER_OAUTH_AUTHORITY"
	envQueueEndpoint  = "SCHEDULER_STORAGE_QUEUE_ENDPOINT"
	envRegion         = "SCHEDULER_REGION"
	envBusEndpoint    = "SCHEDULER_SERVICE_BUS_ENDPOINT"
	envBusEmulator    = "SCHEDULER_SERVICE_BUS_EMULATOR"
	envHistoryMaxAge  = "SCHEDULER_HISTORY_MAX_AGE"
	envHistoryMaxJob  = "SCHEDULER_HISTORY_MAX_ENTRIES"
	envOTLPEndpoint   = "SCHEDULER_OTLP_ENDPOINT"
)

// env returns the variable's value, or def when it is unset.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// bindEnv makes each flag of cmd named in vars fall back to its
// environment variable: a flag not given on the command line takes the
// variable's value when it is set. A value that does not parse stops the
// command with an error naming the variable. The variables are named in
// the flags' help.
func bindEnv(cmd *cobra.Command, vars map[string]string) {
	for flag, name := range vars {
		cmd.Flags().Lookup(flag).Usage += " (env " + name + ")"
	}
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		for _, flag := range slices.Sorted(maps.Keys(vars)) {
			name := vars[flag]
			f := cmd.Flags().Lookup(flag)
			v, ok := os.LookupEnv(name)
			if !ok || f.Changed {
				continue
			}
			if err := f.Value.Set(v); err != nil {
				return &exitError{code: 2, err: fmt.Errorf("%s=%q: %v", name, v, err)}
			}
		}
		return nil
	}
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// logFlags adds --log-format and returns a function that builds the logger.
func logFlags(cmd *cobra.Command, def string) func() (*slog.Logger, error) {
	format := cmd.Flags().String("log-format", env(envLogFormat, def), "log format: text or json (env "+envLogFormat+")")
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return func() (*slog.Logger, error) {
		switch *format {
		case "text":
			return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)), nil
		case "json":
			return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil)), nil
		}
		return nil, fmt.Errorf("--log-format must be text or json, not %q", *format)
	}
}
