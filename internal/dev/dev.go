// Package dev runs the whole scheduler in one process for `scheduler dev`:
// an embedded NATS server with JetStream (file store under the data
// directory, written to disk before each write is acknowledged, so
// collections, jobs and history survive a restart and a crash), an
// embedded Redis-protocol server (miniredis, rebuilt from NATS at every
// start), and the three roles: the planner with its API, a worker and the
// history consumer. One process at a time uses a data directory.
package dev

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/jobscheduler/scheduler/actions/builtin"
	historyservice "github.com/jobscheduler/scheduler/history/service"
	"github.com/jobscheduler/scheduler/internal/metrics"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/tracing"
	"github.com/jobscheduler/scheduler/planner/service"
	"github.com/jobscheduler/scheduler/worker"
	workerservice "github.com/jobscheduler/scheduler/worker/service"
)

// Config configures the development environment.
type Config struct {
	// Listen is the API's address. Defaults to 127.0.0.1:8080.
	Listen string
	// DataDir holds the NATS store and the encryption key; one process at
	// a time uses it (see LockFile). Defaults to ./scheduler-data.
	DataDir string
	// Actions configures the worker's senders. Actions may always reach
	// loopback addresses in dev, so that a job can call a local endpoint,
	// Azurite or a Service Bus emulator.
	Actions builtin.Config
	// OTLPEndpoint is where the planner and the worker export traces.
	// Defaults to none.
	OTLPEndpoint string
	// TokensFile, when set, names a file of scoped tokens the API asks
	// for (see api.TokenEntry), as a planner's --api-tokens-file: to try
	// scoped access locally. Defaults to none: no token is needed.
	TokensFile string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Env is a running development environment.
type Env struct {
	lock    *dirLock
	nats    natsServer
	redis   *miniredis.Miniredis
	planner *service.Service
	worker  *workerservice.Service
	history *historyservice.Service
}

// natsServer is what an Env does with its embedded NATS server after
// starting it. Env holds this rather than a *server.Server because a
// package that uses a type naming the server's has the compiler generate
// the server's generic types again (hundreds of functions), and the
// command uses Env.
type natsServer interface {
	ClientURL() string
	Shutdown()
	WaitForShutdown()
}

// Start starts the embedded servers and the planner. It fails with
// ErrDataDirInUse when another process runs on the data directory.
func Start(ctx context.Context, cfg Config) (*Env, error) {
	cfg.Listen = cmp.Or(cfg.Listen, "127.0.0.1:8080")
	cfg.DataDir = cmp.Or(cfg.DataDir, "scheduler-data")
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the data directory: %w", err)
	}
	lock, err := lockDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	e := &Env{lock: lock}
	key, err := seal.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, "encryption.key"))
	if err != nil {
		e.Stop(context.Background())
		return nil, err
	}
	store := filepath.Join(cfg.DataDir, "nats")
	// SyncAlways: JetStream writes each message to disk (fsync) before it
	// acknowledges it, as the deploy files' servers do; by default it
	// would sync every two minutes, and a crash of the machine would lose
	// what was acknowledged since. docs/benchmarks.md measures the cost.
	ns, err := server.NewServer(&server.Options{
		ServerName: "scheduler-dev", Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: store, SyncAlways: true, NoLog: true, NoSigs: true,
	})
	if err != nil {
		e.Stop(context.Background())
		return nil, fmt.Errorf("starting the embedded NATS server: %w", err)
	}
	e.nats = ns
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		e.Stop(context.Background())
		return nil, errors.New("the embedded NATS server did not start")
	}
	cfg.Logger.Info("embedded NATS server started", slog.String("url", e.nats.ClientURL()), slog.String("store", store),
		slog.String("sync", "always: each write is on disk before it is acknowledged"))
	e.redis = miniredis.NewMiniRedis()
	if err := e.redis.StartAddr("127.0.0.1:0"); err != nil {
		e.Stop(context.Background())
		return nil, fmt.Errorf("starting the embedded Redis server: %w", err)
	}
	reg := metrics.NewRegistry()
	e.history, err = historyservice.Start(ctx, historyservice.Config{NATSURL: e.nats.ClientURL(), Logger: cfg.Logger, Metrics: reg})
	if err != nil {
		e.Stop(context.Background())
		return nil, err
	}
	e.planner, err = service.Start(ctx, service.Config{
		Metrics: reg, Tracing: tracing.Config{Endpoint: cfg.OTLPEndpoint},
		NATSURL: e.nats.ClientURL(), RedisURL: "redis://" + e.redis.Addr(),
		Listen: cfg.Listen, EncryptionKey: key, Logger: cfg.Logger, TokensFile: cfg.TokensFile,
	})
	if err != nil {
		e.Stop(context.Background())
		return nil, err
	}
	actions := cfg.Actions
	actions.AllowLoopback = true
	e.worker, err = workerservice.Start(ctx, workerservice.Config{
		Metrics: reg, Tracing: tracing.Config{Endpoint: cfg.OTLPEndpoint},
		NATSURL: e.nats.ClientURL(), EncryptionKey: key, Actions: actions, Logger: cfg.Logger,
		Worker: worker.Config{DrainTimeout: 5 * time.Second},
	})
	if err != nil {
		e.Stop(context.Background())
		return nil, err
	}
	return e, nil
}

// APIAddr is the address the API listens on.
func (e *Env) APIAddr() string { return e.planner.Addr() }

// NATSURL is the embedded NATS server's client URL.
func (e *Env) NATSURL() string { return e.nats.ClientURL() }

// Ready reports whether every stored job has been scheduled.
func (e *Env) Ready() bool { return e.planner != nil && e.planner.Ready() }

// Stop stops the roles and the embedded servers, and releases the data
// directory.
func (e *Env) Stop(ctx context.Context) {
	if e.worker != nil {
		e.worker.Stop(ctx)
	}
	if e.planner != nil {
		e.planner.Stop(ctx)
	}
	if e.history != nil {
		e.history.Stop(ctx)
	}
	if e.redis != nil {
		e.redis.Close()
	}
	if e.nats != nil {
		e.nats.Shutdown()
		e.nats.WaitForShutdown()
	}
	e.lock.release()
}
