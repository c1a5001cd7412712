// Package service assembles the history role: it connects to NATS, runs
// the history consumer, and serves /healthz and /readyz.
package service

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/history"
	"github.com/jobscheduler/scheduler/internal/health"
	"github.com/jobscheduler/scheduler/internal/metrics"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/internal/tlsfiles"
)

// Config configures the history role.
type Config struct {
	// NATSURL is the NATS server to connect to. Required.
	NATSURL string
	// NATS says how the role proves itself to NATS and checks the server.
	// Defaults to what NATSURL says.
	NATS streams.ConnectOptions
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
	// History configures the consumer and the stream's retention.
	History history.Config
	// Metrics receives the role's metrics, served on /metrics. Defaults to
	// a registry of the role's own.
	Metrics *metrics.Registry
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Service is a running history role.
type Service struct {
	nc       *nats.Conn
	watch    *health.NATSWatch
	consumer *history.Consumer
	http     *health.Server
	stopOnce sync.Once
}

// Start connects and starts the history consumer. While NATS is not
// answering it waits, logging why, until ctx ends (see streams.Retry).
func Start(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.NATSURL == "" {
		return nil, errors.New("the NATS URL is required (--nats-url or SCHEDULER_NATS_URL)")
	}
	if err := tlsfiles.CheckBoth(tlsfiles.Serving(cfg.TLSCertFile, cfg.TLSKeyFile, nil)); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewRegistry()
	}
	s := &Service{}
	if err := s.start(ctx, cfg); err != nil {
		s.Stop(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *Service) start(ctx context.Context, cfg Config) error {
	cert, err := tlsfiles.LoadOptionalKeyPair(tlsfiles.Serving(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.Logger))
	if err != nil {
		return err
	}
	ctx = streams.WithLogger(ctx, cfg.Logger)
	var js jetstream.JetStream
	s.nc, js, err = streams.Connect(ctx, cfg.NATSURL, "history", cfg.Logger, cfg.NATS)
	if err != nil {
		return err
	}
	s.watch = health.WatchNATS(s.nc, health.NATSConfig{})
	reg := cfg.Metrics
	hc := cfg.History
	hc.Logger, hc.Stored = cfg.Logger, reg.History().Stored
	if s.consumer, err = history.Start(ctx, js, hc); err != nil {
		return err
	}
	reg.WatchConsumer(js, contracts.ResultsStream, contracts.HistoryConsumer)
	if cfg.Listen != "" {
		checks := health.Checks{Alive: s.watch.Alive, Ready: s.watch.Ready}
		if s.http, err = health.ListenRole(cfg.Listen, checks, reg.Handler(), cfg.Limits, cert.Listener); err != nil {
			return err
		}
	}
	cfg.Logger.Info("history consumer started")
	return nil
}

// Addr returns the address of the health endpoints, "" when none.
func (s *Service) Addr() string { return s.http.Addr() }

// Stop stores the results already fetched, then closes the connection. It
// is idempotent.
func (s *Service) Stop(ctx context.Context) {
	s.stopOnce.Do(func() {
		if s.consumer != nil {
			s.consumer.Stop()
		}
		s.http.Shutdown(ctx)
		if s.watch != nil {
			s.watch.Stop()
		}
		if s.nc != nil {
			s.nc.Close()
		}
	})
}
