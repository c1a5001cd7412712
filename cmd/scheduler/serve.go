package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/actions/servicebus"
	"github.com/jobscheduler/scheduler/actions/storagequeue"
	historyservice "github.com/jobscheduler/scheduler/history/service"
	"github.com/jobscheduler/scheduler/internal/health"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/planner/dispatch"
	"github.com/jobscheduler/scheduler/planner/service"
	"github.com/jobscheduler/scheduler/worker"
	workerservice "github.com/jobscheduler/scheduler/worker/service"
)

func newServeCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve ROLE",
		Short: "Run one role (planner, worker or history) against real NATS and Redis servers",
	}
	cmd.AddCommand(newServePlannerCommand(), newServeWorkerCommand(), newServeHistoryCommand())
	return cmd
}

// stopper is a running role.
type stopper interface{ Stop(ctx context.Context) }

// runRole starts a role with the logger the flags ask for, waits for the
// command's context to end (SIGINT, SIGTERM), and stops the role within
// grace.
func runRole(cmd *cobra.Command, logger func() (*slog.Logger, error), grace time.Duration,
	start func(ctx context.Context, log *slog.Logger) (stopper, error)) error {
	log, err := logger()
	if err != nil {
		return err
	}
	role, err := start(cmd.Context(), log)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	<-cmd.Context().Done()
	log.Info("stopping")
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	role.Stop(ctx)
	return nil
}

// commonFlags adds the flags every role has: the NATS server, the address
// of its endpoints and the replicas of what it creates in JetStream.
func commonFlags(flags *pflag.FlagSet, natsURL, listen *string, limits *health.Limits, replicas *int, defaultListen, listenWhat string) map[string]string {
	flags.StringVar(natsURL, "nats-url", "", "NATS server URL")
	flags.StringVar(listen, "listen", defaultListen, "address of "+listenWhat)
	flags.IntVar(&limits.MaxConns, "max-connections", health.DefaultLimits.MaxConns, "most client connections served at once on --listen; more wait until one closes")
	flags.IntVar(replicas, "replicas", 1, "replicas of the KV bucket and streams (3 in a NATS cluster); all roles must agree")
	return map[string]string{"nats-url": envNATSURL, "listen": envListen, "max-connections": envMaxConns, "replicas": envReplicas}
}

// otlpFlag adds --otlp-endpoint, where the role exports its traces.
func otlpFlag(flags *pflag.FlagSet, vars map[string]string, endpoint *string) {
	flags.StringVar(endpoint, "otlp-endpoint", "", "OTLP/HTTP endpoint to export traces to, such as http://otel-collector:4318 (default: OTEL_EXPORTER_OTLP_ENDPOINT when set, else no tracing)")
	vars["otlp-endpoint"] = envOTLPEndpoint
}

func newServePlannerCommand() *cobra.Command {
	var (
		cfg     service.Config
		tokens  string
		hosts   string
		keyFile string
	)
	cmd := &cobra.Command{
		Use:   "planner",
		Short: "Run the planner: the REST API, NATS intake, the Redis timer, dispatch and the results feedback loop",
		Args:  cobra.NoArgs,
	}
	flags := cmd.Flags()
	vars := commonFlags(flags, &cfg.NATSURL, &cfg.Listen, &cfg.Limits, &cfg.Replicas, "127.0.0.1:8080", "the REST API, /healthz, /readyz and /metrics")
	flags.StringVar(&cfg.RedisURL, "redis-url", "", "Redis URL, redis:// or rediss://")
	flags.BoolVar(&cfg.RedisCluster, "redis-cluster", false, "the Redis URL names a node of a Redis Cluster (more seed nodes as ?addr=host:port)")
	flags.StringVar(&tokens, "api-tokens", "", "comma-separated bearer tokens of 32 characters or more, each an operator over everything")
	flags.StringVar(&keyFile, "encryption-key-file", "", "file holding the base64 key that encrypts secrets (or the key itself in "+envEncryptionKey+")")
	flags.StringVar(&hosts, "api-hosts", "", "comma-separated host names the API is served as; requests naming another Host are refused (default: the --public-url host, or localhost, 127.0.0.1 and ::1 on loopback)")
	flags.StringVar(&cfg.PublicURL, "public-url", "", "URL clients reach the API at, such as https://scheduler.example.com: the base of nextLink (default: the address it listens on)")
	flags.StringVar(&cfg.MetricsListen, "metrics-listen", "", "serve /metrics on this address, without a token, instead of beside the API (where it asks for a token when the API does)")
	vars["api-hosts"], vars["public-url"], vars["metrics-listen"] = envAPIHosts, envPublicURL, envMetricsListen
	flags.IntVar(&cfg.Partitions, "partitions", 16, "timer partitions (Redis hash slots); all planners must agree")
	flags.StringVar(&cfg.RedisPrefix, "redis-prefix", "sched", "prefix of the planners' Redis keys; all planners must agree")
	flags.DurationVar(&cfg.Lease, "lease", 30*time.Second, "how long a claimed occurrence stays with its planner")
	flags.DurationVar(&cfg.ActionTimeout, "action-timeout", 60*time.Second, "deadline of one attempt of an action")
	flags.DurationVar(&cfg.EndedRetention, "ended-retention", 60*24*time.Hour, "how long Completed and Faulted jobs are kept before they are deleted")
	flags.DurationVar(&cfg.PublishAhead, "publish-ahead", defaultPublishAhead, "how far ahead of its due time an execution is published, for the worker to hold until then (at most 2s, how far ahead occurrences are claimed; a burst of 5,000 claimed at once is published as soon as it is claimed); 0 publishes each at its due time, for workers of releases that do not hold executions")
	vars["redis-url"], vars["api-tokens"], vars["encryption-key-file"] = envRedisURL, envAPITokens, envKeyFile
	vars["redis-cluster"] = envRedisCluster
	vars["partitions"], vars["redis-prefix"], vars["lease"] = envPartitions, envRedisPrefix, envLease
	vars["action-timeout"], vars["ended-retention"], vars["publish-ahead"] = envActionTimeout, envEndedRetention, envPublishAhead
	otlpFlag(flags, vars, &cfg.Tracing.Endpoint)
	natsFlags(flags, vars, &cfg.NATS)
	tlsFlags(flags, vars, &cfg.TLSCertFile, &cfg.TLSKeyFile, "the REST API and its endpoints")
	redisTLSFlags(flags, vars, &cfg.RedisTLS)
	accessParsed := accessFlags(flags, vars, &cfg)
	logger := logFlags(cmd, "json")
	bindEnv(cmd, vars)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := offWhenZero(&cfg.PublishAhead, "publish-ahead"); err != nil {
			return err
		}
		cfg.Tokens, cfg.Hosts = splitList(tokens), splitList(hosts)
		key, err := loadKey(keyFile)
		if err != nil {
			return err
		}
		cfg.EncryptionKey = key
		if err := accessParsed(); err != nil {
			return err
		}
		return runRole(cmd, logger, 30*time.Second, func(ctx context.Context, log *slog.Logger) (stopper, error) {
			cfg.Logger = log
			return service.Start(ctx, cfg)
		})
	}
	return cmd
}

// offWhenZero checks the value of a flag whose 0 turns its feature off
// (--publish-ahead, --hold) and gives the role -1 for it, which turns it
// off there, where 0 takes the default. A negative value is a usage error
// naming the flag.
func offWhenZero[T ~int | ~int64](v *T, flag string) error {
	if *v < 0 {
		return usage("--%s must be 0 or more, not %v", flag, *v)
	}
	if *v == 0 {
		*v = -1
	}
	return nil
}

// The defaults of --publish-ahead and --hold.
const (
	defaultPublishAhead = dispatch.DefaultPublishAhead
	defaultHold         = worker.DefaultHold
)

// workerFlags are the flags of the worker's senders that dev shares.
type workerFlags struct {
	allowLoopback, allowPrivate bool
	caFile, oauthAuthority      string
	queueEndpoint, region       string
	busEndpoint                 string
	busEmulator                 bool
}

// add registers the flags into vars, the flags' environment variables.
// Dev always lets actions reach loopback: it has no --allow-loopback.
func (w *workerFlags) add(flags *pflag.FlagSet, vars map[string]string, dev bool) {
	if !dev {
		flags.BoolVar(&w.allowLoopback, "allow-loopback", false, "let every action (and the OAuth authority, storage queue and Service Bus endpoints) reach loopback addresses")
		vars["allow-loopback"] = envAllowLoopback
	}
	flags.BoolVar(&w.allowPrivate, "allow-private-networks", false, "let every action (and the OAuth authority, storage queue and Service Bus endpoints) reach private addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)")
	flags.StringVar(&w.caFile, "ca-file", "", "PEM file of extra certificate authorities trusted for HTTPS targets and the OAuth authority")
	flags.StringVar(&w.oauthAuthority, "oauth-authority", httpaction.DefaultOAuthAuthority, "authority that issues ActiveDirectoryOAuth tokens")
	flags.StringVar(&w.queueEndpoint, "storage-queue-endpoint", storagequeue.DefaultEndpointTemplate, "Storage queue endpoint; {account} is the storage account (Azurite: http://127.0.0.1:10001/{account})")
	flags.StringVar(&w.region, "region", storagequeue.DefaultRegion, "region name written in Storage queue messages")
	flags.StringVar(&w.busEndpoint, "service-bus-endpoint", servicebus.DefaultEndpointTemplate, "Service Bus endpoint; {namespace} is the action's namespace")
	flags.BoolVar(&w.busEmulator, "service-bus-emulator", false, "talk plain AMQP to a local Service Bus emulator (UseDevelopmentEmulator=true)")
	for flag, name := range map[string]string{
		"allow-private-networks": envAllowPrivate, "ca-file": envCAFile, "oauth-authority": envOAuthAuthority,
		"storage-queue-endpoint": envQueueEndpoint, "region": envRegion,
		"service-bus-endpoint": envBusEndpoint, "service-bus-emulator": envBusEmulator,
	} {
		vars[flag] = name
	}
}

// config returns the senders' configuration.
func (w *workerFlags) config() (cfg workerservice.Config, err error) {
	a := &cfg.Actions
	a.AllowLoopback, a.AllowPrivate, a.HTTP.OAuthAuthority = w.allowLoopback, w.allowPrivate, w.oauthAuthority
	if w.caFile != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		pem, err := os.ReadFile(w.caFile)
		if err != nil {
			return cfg, &exitError{code: 1, err: fmt.Errorf("--ca-file: %w", err)}
		}
		if !pool.AppendCertsFromPEM(pem) {
			return cfg, &exitError{code: 1, err: fmt.Errorf("--ca-file %s holds no PEM certificate", w.caFile)}
		}
		a.HTTP.RootCAs, a.StorageQueue.RootCAs = pool, pool
	}
	a.StorageQueue.EndpointTemplate, a.StorageQueue.Region = w.queueEndpoint, w.region
	a.ServiceBus.EndpointTemplate, a.ServiceBus.Emulator = w.busEndpoint, w.busEmulator
	return cfg, nil
}

func newServeWorkerCommand() *cobra.Command {
	var (
		natsURL, listen, keyFile string
		replicas                 int
		senders                  workerFlags
		wc                       workerservice.Config
	)
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker: perform the due executions and publish their results",
		Long: `Run a worker: it takes executions from the shared durable consumer of the
EXEC stream, performs each action (HTTP, Storage queue, Service Bus), and
publishes one result event per attempt. Run as many as the load needs; on
SIGTERM a worker stops fetching, finishes the actions in flight (or hands
them back after --drain-timeout) and exits.`,
		Args: cobra.NoArgs,
	}
	flags := cmd.Flags()
	vars := commonFlags(flags, &natsURL, &listen, &wc.Limits, &replicas, "127.0.0.1:8081", "/healthz, /readyz and /metrics")
	flags.StringVar(&keyFile, "encryption-key-file", "", "file holding the planners' base64 encryption key (or the key itself in "+envEncryptionKey+")")
	flags.IntVar(&wc.Worker.Concurrency, "concurrency", 128, "most actions performed at the same time")
	flags.IntVar(&wc.Worker.Hold, "hold", defaultHold, "most executions received ahead of their due time held until then beside --concurrency; 0 holds them in the --concurrency slots")
	flags.DurationVar(&wc.Worker.AckWait, "ack-wait", 90*time.Second, "how long an execution may go unacknowledged before it is delivered again; above the action timeout, and the same on every worker")
	flags.IntVar(&wc.Worker.MaxDeliveries, "max-deliveries", 5, "deliveries after which an execution is reported failed without being performed again")
	flags.DurationVar(&wc.Worker.DrainTimeout, "drain-timeout", 30*time.Second, "how long a stopping worker lets the actions in flight finish")
	flags.StringVar(&wc.Worker.Name, "name", "", "name of the worker in results (default: host name and process id)")
	vars["encryption-key-file"], vars["concurrency"], vars["ack-wait"] = envKeyFile, envConcurrency, envAckWait
	vars["max-deliveries"], vars["drain-timeout"], vars["name"] = envMaxDeliveries, envDrainTimeout, envWorkerName
	vars["hold"] = envHold
	senders.add(flags, vars, false)
	otlpFlag(flags, vars, &wc.Tracing.Endpoint)
	natsFlags(flags, vars, &wc.NATS)
	tlsFlags(flags, vars, &wc.TLSCertFile, &wc.TLSKeyFile, "/healthz, /readyz and /metrics")
	logger := logFlags(cmd, "json")
	bindEnv(cmd, vars)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := offWhenZero(&wc.Worker.Hold, "hold"); err != nil {
			return err
		}
		cfg, err := senders.config()
		if err != nil {
			return err
		}
		if cfg.EncryptionKey, err = loadKey(keyFile); err != nil {
			return err
		}
		cfg.NATSURL, cfg.Listen, cfg.Limits, cfg.Worker, cfg.Tracing = natsURL, listen, wc.Limits, wc.Worker, wc.Tracing
		cfg.Worker.Replicas = replicas
		cfg.NATS, cfg.TLSCertFile, cfg.TLSKeyFile = wc.NATS, wc.TLSCertFile, wc.TLSKeyFile
		return runRole(cmd, logger, wc.Worker.DrainTimeout+5*time.Second, func(ctx context.Context, log *slog.Logger) (stopper, error) {
			cfg.Logger = log
			return workerservice.Start(ctx, cfg)
		})
	}
	return cmd
}

func newServeHistoryCommand() *cobra.Command {
	var cfg historyservice.Config
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Run the history consumer: store every result as a job history entry",
		Args:  cobra.NoArgs,
	}
	flags := cmd.Flags()
	vars := commonFlags(flags, &cfg.NATSURL, &cfg.Listen, &cfg.Limits, &cfg.History.Retention.Replicas, "127.0.0.1:8082", "/healthz, /readyz and /metrics")
	flags.DurationVar(&cfg.History.Retention.MaxAge, "history-max-age", streams.DefaultHistoryMaxAge, "how long history entries are kept")
	flags.Int64Var(&cfg.History.Retention.MaxPerJob, "history-max-entries", streams.DefaultHistoryMaxPerJob, "how many history entries are kept per job")
	vars["history-max-age"], vars["history-max-entries"] = envHistoryMaxAge, envHistoryMaxJob
	natsFlags(flags, vars, &cfg.NATS)
	tlsFlags(flags, vars, &cfg.TLSCertFile, &cfg.TLSKeyFile, "/healthz, /readyz and /metrics")
	logger := logFlags(cmd, "json")
	bindEnv(cmd, vars)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if cfg.History.Retention.MaxAge <= 0 || cfg.History.Retention.MaxPerJob <= 0 {
			return fmt.Errorf("--history-max-age and --history-max-entries must be positive")
		}
		return runRole(cmd, logger, 30*time.Second, func(ctx context.Context, log *slog.Logger) (stopper, error) {
			cfg.Logger = log
			return historyservice.Start(ctx, cfg)
		})
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
