// Package service assembles the worker role: it connects to NATS, builds
// the action senders, runs a worker on the shared execution consumer, and
// serves /healthz and /readyz.
package service

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/builtin"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/health"
	"github.com/jobscheduler/scheduler/internal/metrics"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/internal/tlsfiles"
	"github.com/jobscheduler/scheduler/internal/tracing"
	"github.com/jobscheduler/scheduler/worker"
)

// Config configures the worker role.
type Config struct {
	// NATSURL is the NATS server to connect to. Required.
	NATSURL string
	// NATS says how the role proves itself to NATS and checks the server.
	// Defaults to what NATSURL says.
	NATS streams.ConnectOptions
	// EncryptionKey opens the secrets the planners sealed (32 bytes, the
	// planners' key). Required.
	EncryptionKey []byte
	// Listen is the address of /healthz and /readyz; empty serves none.
	// Defaults to none.
	Listen string
	// Limits bound the connections of Listen. Defaults to
	// health.DefaultLimits.
	Limits health.Limits
	// TLSCertFile and TLSKeyFile hold the certificate and key the
	// endpoints serve HTTPS with, read again when they change. Both or
	// neither. Defaults to none: plain HTTP.
	TLSCertFile, TLSKeyFile string
	// Worker configures the worker; its Sender and Sealer are built here.
	Worker worker.Config
	// Actions configures the senders.
	Actions builtin.Config
	// Tracing exports the workers' spans when it names an OTLP endpoint.
	// Defaults to none.
	Tracing tracing.Config
	// Metrics receives the role's metrics, served on /metrics. Defaults to
	// a registry of the role's own.
	Metrics *metrics.Registry
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) validate() error {
	var errs []error
	if c.NATSURL == "" {
		errs = append(errs, errors.New("the NATS URL is required (--nats-url or SCHEDULER_NATS_URL)"))
	}
	if err := tlsfiles.CheckBoth(tlsfiles.Serving(c.TLSCertFile, c.TLSKeyFile, nil)); err != nil {
		errs = append(errs, err)
	}
	if len(c.EncryptionKey) != seal.KeySize {
		errs = append(errs, errors.New("the encryption key is required: the planners' 32 bytes, base64 (--encryption-key-file or SCHEDULER_ENCRYPTION_KEY)"))
	}
	return errors.Join(errs...)
}

// Service is a running worker role.
type Service struct {
	cfg      Config
	nc       *nats.Conn
	watch    *health.NATSWatch
	senders  actions.Sender
	worker   *worker.Worker
	http     *health.Server
	tracer   *tracing.Tracer
	stopOnce sync.Once
}

// Start connects and starts the worker. While NATS is not answering it
// waits, logging why, until ctx ends (see streams.Retry).
func Start(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewRegistry()
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg}
	if err := s.start(ctx); err != nil {
		s.Stop(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *Service) start(ctx context.Context) error {
	cfg := s.cfg
	sealer, err := seal.New(cfg.EncryptionKey)
	if err != nil {
		return err
	}
	if cfg.Actions.ServiceBus.Logger == nil {
		cfg.Actions.ServiceBus.Logger = cfg.Logger
	}
	if s.senders, err = builtin.New(cfg.Actions); err != nil {
		return err
	}
	cert, err := tlsfiles.LoadOptionalKeyPair(tlsfiles.Serving(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.Logger))
	if err != nil {
		return err
	}
	ctx = streams.WithLogger(ctx, cfg.Logger)
	var js jetstream.JetStream
	s.nc, js, err = streams.Connect(ctx, cfg.NATSURL, "worker", cfg.Logger, cfg.NATS)
	if err != nil {
		return err
	}
	s.watch = health.WatchNATS(s.nc, health.NATSConfig{})
	wc := cfg.Worker
	reg := cfg.Metrics
	wc.Sender, wc.Sealer, wc.Logger, wc.Observer = s.senders, sealer, cfg.Logger, reg.Worker()
	tc := cfg.Tracing
	tc.Service, tc.Logger = "scheduler-worker", cfg.Logger
	if s.tracer, err = tracing.Start(ctx, tc); err != nil {
		return err
	}
	if s.tracer != nil {
		wc.Tracer = s.tracer
	}
	if s.worker, err = worker.Start(ctx, js, wc); err != nil {
		return err
	}
	reg.WatchConsumer(js, contracts.ExecStream, contracts.WorkersConsumer)
	if cfg.Listen != "" {
		checks := health.Checks{Alive: s.watch.Alive, Ready: s.watch.Ready}
		if s.http, err = health.ListenRole(cfg.Listen, checks, reg.Handler(), cfg.Limits, cert.Listener); err != nil {
			return err
		}
	}
	return nil
}

// Addr returns the address of the health endpoints, "" when none.
func (s *Service) Addr() string { return s.http.Addr() }

// Stop stops the worker (finishing or handing back the actions in flight,
// see worker.Worker.Stop), then closes the senders and the connection. It
// is idempotent.
func (s *Service) Stop(ctx context.Context) {
	s.stopOnce.Do(func() {
		if s.worker != nil {
			s.worker.Stop(ctx)
		}
		s.tracer.Shutdown(ctx)
		s.http.Shutdown(ctx)
		if s.senders != nil {
			_ = s.senders.Close()
		}
		if s.watch != nil {
			s.watch.Stop()
		}
		if s.nc != nil {
			s.nc.Close()
		}
	})
}
