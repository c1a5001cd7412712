// Package service assembles the planner role: it connects to NATS and
// Redis, opens the job store and the timer, runs the dispatcher and the NATS
// intake, and serves the REST API with /healthz and /readyz.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/dispatch"
	"github.com/jobscheduler/scheduler/planner/intake"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Config configures the planner role.
type Config struct {
	// NATSURL is the NATS server to connect to. Required.
	NATSURL string
	// RedisURL is the Redis server (redis:// or rediss://). Required.
	RedisURL string
	// Listen is the address of the REST API. Defaults to 127.0.0.1:8080.
	Listen string
	// Tokens are the accepted bearer tokens. Required unless Listen is a
	// loopback address. Defaults to none.
	Tokens []string
	// EncryptionKey seals secrets at rest and in execution messages (32
	// bytes). Required.
	EncryptionKey []byte
	// Partitions of the timer. Defaults to 16.
	Partitions int
	// RedisPrefix starts every key the planners keep in Redis, so that
	// several schedulers can share one server. Defaults to "sched".
	RedisPrefix string
	// Replicas of the KV bucket and streams. Defaults to 1.
	Replicas int
	// Lease of a claimed occurrence. Defaults to 30s.
	Lease time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Listen = cmp.Or(c.Listen, "127.0.0.1:8080")
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.NATSURL == "" {
		errs = append(errs, errors.New("the NATS URL is required (--nats-url or SCHEDULER_NATS_URL)"))
	}
	if c.RedisURL == "" {
		errs = append(errs, errors.New("the Redis URL is required (--redis-url or SCHEDULER_REDIS_URL)"))
	}
	if len(c.EncryptionKey) != 32 {
		errs = append(errs, errors.New("the encryption key is required: 32 bytes, base64 (--encryption-key-file or SCHEDULER_ENCRYPTION_KEY)"))
	}
	if len(c.Tokens) == 0 && !Loopback(c.Listen) {
		errs = append(errs, fmt.Errorf("the API listens on %s, beyond loopback: configure bearer tokens (--api-token or SCHEDULER_API_TOKENS)", c.Listen))
	}
	return errors.Join(errs...)
}

// Loopback reports whether addr (host:port) listens on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Service is a running planner.
type Service struct {
	cfg        Config
	nc         *nats.Conn
	rdb        *redis.Client
	dispatcher *dispatch.Dispatcher
	intake     *intake.Intake
	listener   net.Listener
	http       *http.Server
	stopOnce   sync.Once
	served     chan error
}

// Start connects, opens and starts everything, and serves the API.
func Start(ctx context.Context, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, served: make(chan error, 1)}
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
	s.nc, err = nats.Connect(cfg.NATSURL, nats.Name("scheduler planner"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connecting to NATS: %w", err)
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("JetStream: %w", err)
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("the Redis URL: %w", err)
	}
	s.rdb = redis.NewClient(opts)
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("connecting to Redis: %w", err)
	}
	st, err := store.Open(ctx, js, store.Config{Replicas: cfg.Replicas, Sealer: sealer})
	if err != nil {
		return err
	}
	ix, err := timer.New(s.rdb, timer.Config{Prefix: cfg.RedisPrefix, Partitions: cfg.Partitions})
	if err != nil {
		return err
	}
	s.dispatcher, err = dispatch.New(js, st, ix, dispatch.Config{
		Lease: cfg.Lease, Replicas: cfg.Replicas, Sealer: sealer, Logger: cfg.Logger,
	})
	if err != nil {
		return err
	}
	if err := s.dispatcher.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	server := api.New(st, s.dispatcher, api.Config{Tokens: cfg.Tokens, Logger: cfg.Logger})
	s.intake, err = intake.Start(ctx, s.nc, js, server, intake.Config{Replicas: cfg.Replicas, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("/", server)
	s.listener, err = net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.http.Serve(s.listener) }()
	cfg.Logger.Info("planner started", slog.String("api", "http://"+s.Addr()))
	return nil
}

// readyz answers 200 once NATS and Redis are connected and every job is
// scheduled, 503 before.
func (s *Service) readyz(w http.ResponseWriter, r *http.Request) {
	var problems []string
	if s.nc.Status() != nats.CONNECTED {
		problems = append(problems, "NATS: "+s.nc.Status().String())
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		problems = append(problems, "Redis: "+err.Error())
	}
	if !s.dispatcher.Ready() {
		problems = append(problems, "scheduling the stored jobs")
	}
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %v\n", problems)
		return
	}
	w.Write([]byte("ready\n"))
}

// Addr returns the address the API listens on.
func (s *Service) Addr() string {
	if s.listener == nil {
		return s.cfg.Listen
	}
	return s.listener.Addr().String()
}

// Ready reports whether every stored job has been scheduled.
func (s *Service) Ready() bool { return s.dispatcher != nil && s.dispatcher.Ready() }

// Stop stops serving (letting requests finish until ctx ends), stops the
// dispatcher and closes the connections. It is idempotent.
func (s *Service) Stop(ctx context.Context) {
	s.stopOnce.Do(func() {
		if s.http != nil {
			_ = s.http.Shutdown(ctx)
		}
		if s.intake != nil {
			s.intake.Stop()
		}
		if s.dispatcher != nil {
			s.dispatcher.Stop()
		}
		if s.rdb != nil {
			s.rdb.Close()
		}
		if s.nc != nil {
			s.nc.Close()
		}
	})
}
