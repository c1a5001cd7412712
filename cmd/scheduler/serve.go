package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/planner/service"
)

func newServeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve ROLE",
		Short: "Run one role against real NATS and Redis servers",
	}
	cmd.AddCommand(newServePlannerCommand())
	return cmd
}

func newServePlannerCommand() *cobra.Command {
	var (
		cfg     service.Config
		tokens  string
		keyFile string
	)
	cmd := &cobra.Command{
		Use:   "planner",
		Short: "Run the planner: the REST API, NATS intake, the Redis timer and dispatch",
		Args:  cobra.NoArgs,
	}
	flags := cmd.Flags()
	flags.StringVar(&cfg.NATSURL, "nats-url", env(envNATSURL, ""), "NATS server URL (env "+envNATSURL+")")
	flags.StringVar(&cfg.RedisURL, "redis-url", env(envRedisURL, ""), "Redis URL, redis:// or rediss:// (env "+envRedisURL+")")
	flags.StringVar(&cfg.Listen, "listen", env(envListen, "127.0.0.1:8080"), "address of the REST API, /healthz and /readyz (env "+envListen+")")
	flags.StringVar(&tokens, "api-tokens", env(envAPITokens, ""), "comma-separated bearer tokens the API accepts; required beyond loopback (env "+envAPITokens+")")
	flags.StringVar(&keyFile, "encryption-key-file", env(envKeyFile, ""), "file holding the base64 key that encrypts secrets (env "+envKeyFile+", or the key itself in "+envEncryptionKey+")")
	flags.IntVar(&cfg.Partitions, "partitions", 16, "timer partitions (Redis hash slots); all planners must agree")
	flags.StringVar(&cfg.RedisPrefix, "redis-prefix", "sched", "prefix of the planners' Redis keys; all planners must agree")
	flags.IntVar(&cfg.Replicas, "replicas", 1, "replicas of the KV bucket and streams (3 in a NATS cluster)")
	flags.DurationVar(&cfg.Lease, "lease", 30*time.Second, "how long a claimed occurrence stays with its planner")
	logger := logFlags(cmd, "json")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		log, err := logger()
		if err != nil {
			return err
		}
		cfg.Logger = log
		cfg.Tokens = splitList(tokens)
		if cfg.EncryptionKey, err = loadKey(keyFile); err != nil {
			return err
		}
		svc, err := service.Start(cmd.Context(), cfg)
		if err != nil {
			return &exitError{code: 1, err: err}
		}
		<-cmd.Context().Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		svc.Stop(ctx)
		return nil
	}
	return cmd
}

// loadKey reads the encryption key from the file, or else from the
// environment.
func loadKey(file string) ([]byte, error) {
	text := os.Getenv(envEncryptionKey)
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, &exitError{code: 1, err: fmt.Errorf("reading the encryption key: %w", err)}
		}
		text = string(data)
	}
	if text == "" {
		return nil, &exitError{code: 1, err: fmt.Errorf("an encryption key is required: --encryption-key-file or %s (generate one with `scheduler keygen`)", envEncryptionKey)}
	}
	key, err := seal.ParseKey(text)
	if err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("the encryption key: %w", err)}
	}
	return key, nil
}

func newKeygenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "Print a new random encryption key (base64) for " + envEncryptionKey,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), seal.GenerateKey())
			return err
		},
	}
}
