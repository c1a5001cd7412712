package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Environment variables; each flag of the serve commands falls back to one.
const (
	envNATSURL       = "SCHEDULER_NATS_URL"
	envRedisURL      = "SCHEDULER_REDIS_URL"
	envListen        = "SCHEDULER_LISTEN"
	envAPITokens     = "SCHEDULER_API_TOKENS" // comma-separated
	envEncryptionKey = "SCHEDULER_ENCRYPTION_KEY"
	envKeyFile       = "SCHEDULER_ENCRYPTION_KEY_FILE"
	envLogFormat     = "SCHEDULER_LOG_FORMAT"
)

// env returns the variable's value, or def when it is unset.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
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
