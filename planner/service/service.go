// Package service assembles the planner role: it connects to NATS and
// Redis, opens the job store and the timer, runs the dispatcher and the NATS
// intake, and serves the REST API with /healthz and /readyz.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/history"
	"github.com/jobscheduler/scheduler/internal/health"
	"github.com/jobscheduler/scheduler/internal/metrics"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/internal/tlsfiles"
	"github.com/jobscheduler/scheduler/internal/tracing"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/console"
	"github.com/jobscheduler/scheduler/planner/dispatch"
	"github.com/jobscheduler/scheduler/planner/feedback"
	"github.com/jobscheduler/scheduler/planner/intake"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Config configures the planner role.
type Config struct {
	// NATSURL is the NATS server to connect to. Required.
	NATSURL string
	// NATS says how the planner proves itself to NATS and checks the
	// server. Defaults to what NATSURL says.
	NATS streams.ConnectOptions
	// RedisURL is the Redis server (redis:// or rediss://). Required.
	RedisURL string
	// RedisCluster says RedisURL names a node of a Redis Cluster; more
	// seed nodes may follow as addr= query parameters. Defaults to false.
	RedisCluster bool
	// RedisTLS names the authorities that verify a rediss:// server and
	// the planner's client certificate. Defaults to the system's
	// authorities and no certificate.
	RedisTLS RedisTLS
	// Listen is the address of the REST API. Defaults to 127.0.0.1:8080.
	Listen string
	// Limits bound the connections of Listen. Defaults to
	// health.DefaultLimits.
	Limits health.Limits
	// Hosts are the host names the API is served as; a request naming
	// another in its Host header is refused. Defaults to the host of
	// PublicURL, and to localhost, 127.0.0.1 and ::1 when the API listens
	// on loopback with no PublicURL; empty beyond loopback serves every
	// Host.
	Hosts []string
	// PublicURL is the URL clients reach the API at, such as
	// https://scheduler.example.com: the base of the nextLink of listings
	// and a host the API is served as. Defaults to the address it listens
	// on.
	PublicURL string
	// MetricsListen, when set, is the address /metrics is served on
	// instead of the API's, with no token. Defaults to none: /metrics is
	// served beside the API and asks for a token when the API does.
	MetricsListen string
	// TLSCertFile and TLSKeyFile hold the certificate and key the API
	// serves HTTPS with (TLS 1.2 or later), read again when they change.
	// Both or neither. Defaults to none: plain HTTP.
	TLSCertFile, TLSKeyFile string
	// Tokens are the accepted bearer tokens. Required unless Listen is a
	// loopback address. Defaults to none.
	Tokens []string
	// TokensFile names the file of scoped tokens (see api.TokenEntry),
	// read again when it changes. Beyond loopback, Tokens (each an
	// operator over everything, of api.MinTokenLength characters or
	// more), TokensFile or OIDC is required. Defaults to none.
	TokensFile string
	// TokensFileInterval is how often the token file is read again.
	// Defaults to 5s.
	TokensFileInterval time.Duration
	// OIDC verifies OpenID Connect bearer tokens when its Issuer is set.
	// Defaults to none.
	OIDC api.OIDCConfig
	// OIDCClient is the console's client of the OIDC issuer: when its ID
	// is set, viewers sign in to the console through the provider, which
	// sends them back to <PublicURL>/login/oidc/callback (or to the
	// scheme and host of their request when PublicURL is empty). Defaults
	// to none.
	OIDCClient console.OIDCClient
	// Ceilings bound the quotas and collections a principal below
	// operator may give itself. Defaults to api.Ceilings' defaults.
	Ceilings api.Ceilings
	// DisableIntake turns the NATS intake off: no planner of this
	// configuration answers scheduler.api.jobs.> or consumes the INTAKE
	// stream. Defaults to false (the intake runs).
	DisableIntake bool
	// DisableConsole turns the web console off: / and its pages answer as
	// any path the API does not know.
	DisableConsole bool
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
	// ActionTimeout is the deadline of one attempt of an action, sent with
	// each execution. Defaults to 60s.
	ActionTimeout time.Duration
	// EndedRetention is how long a Completed or Faulted job is kept before
	// it is deleted. Defaults to 60 days.
	EndedRetention time.Duration
	// Lookahead is how far ahead of their due time occurrences are claimed
	// and their messages built. Defaults to 2s (dispatch.DefaultLookahead).
	Lookahead time.Duration
	// PublishAhead is how far ahead of its due time an execution is
	// published, at most Lookahead, a burst as soon as it is claimed; the
	// worker holds it until it is due. Defaults to 500ms; negative
	// publishes each at its due time.
	PublishAhead time.Duration
	// MaxIdle is the longest the dispatcher waits between looks at the
	// timer. Defaults to 1s.
	MaxIdle time.Duration
	// PublishTimeout is how long the dispatcher waits for JetStream to
	// store an execution before it publishes it again. Defaults to 5s.
	PublishTimeout time.Duration
	// Metrics receives the planner's metrics, served on /metrics beside
	// the API. Defaults to a registry of the planner's own.
	Metrics *metrics.Registry
	// Tracing exports the dispatch spans when it names an OTLP endpoint.
	// Defaults to none.
	Tracing tracing.Config
	// Now is the planner's clock. Defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Listen = cmp.Or(c.Listen, "127.0.0.1:8080")
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = metrics.NewRegistry()
	}
	if c.Now == nil {
		c.Now = time.Now
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
	if err := tlsfiles.CheckBoth(tlsfiles.Serving(c.TLSCertFile, c.TLSKeyFile, nil)); err != nil {
		errs = append(errs, err)
	}
	if err := c.RedisTLS.check(c.RedisURL); err != nil {
		errs = append(errs, err)
	}
	if len(c.Tokens) == 0 && c.TokensFile == "" && c.OIDC.Issuer == "" && !Loopback(c.Listen) {
		errs = append(errs, fmt.Errorf("the API listens on %s, beyond loopback: configure bearer tokens (--api-tokens-file, --oidc-issuer or --api-tokens)", c.Listen))
	}
	if _, err := c.publicURL(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, c.validateAccess()...)...)
}

// publicURL parses PublicURL: nil when it is empty.
func (c Config) publicURL() (*url.URL, error) {
	if c.PublicURL == "" {
		return nil, nil
	}
	u, err := url.Parse(c.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("the public URL (--public-url or SCHEDULER_PUBLIC_URL) must be an absolute http or https URL with a host and no user, query or fragment, such as https://scheduler.example.com")
	}
	return u, nil
}

// hosts returns the host names the API is served as (see Config.Hosts).
func (c Config) hosts(public *url.URL) []string {
	if len(c.Hosts) == 0 && public == nil && Loopback(c.Listen) {
		return []string{"localhost", "127.0.0.1", "::1"}
	}
	return c.Hosts
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
	cfg      Config
	nc       *nats.Conn
	watch    *health.NATSWatch
	rdb      timer.Conn
	engine   *dispatch.Engine
	feedback *feedback.Consumer
	intake   *intake.Intake
	http     *health.Server
	metrics  *health.Server
	tracer   *tracing.Tracer
	cert     *tlsfiles.KeyPair // of the API; nil serves plain HTTP
	tokens   *api.TokenFile
	stopOnce sync.Once
	console  *console.Console
}

// Start connects, opens and starts everything, and serves the API. While
// NATS or Redis is not answering it waits, logging why, until ctx ends
// (see streams.Retry).
func Start(ctx context.Context, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
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
	// The files load before any connection, so that one that does not
	// load fails at once rather than after waiting for the servers.
	if s.cert, err = tlsfiles.LoadOptionalKeyPair(tlsfiles.Serving(cfg.TLSCertFile, cfg.TLSKeyFile, cfg.Logger)); err != nil {
		return err
	}
	redisTLS, err := cfg.RedisTLS.load(cfg.Logger)
	if err != nil {
		return err
	}
	authenticators, err := s.authenticators(ctx)
	if err != nil {
		return err
	}
	ctx = streams.WithLogger(ctx, cfg.Logger)
	var js jetstream.JetStream
	s.nc, js, err = streams.Connect(ctx, cfg.NATSURL, "planner", cfg.Logger, cfg.NATS)
	if err != nil {
		return err
	}
	s.watch = health.WatchNATS(s.nc, health.NATSConfig{})
	if s.rdb, err = timer.Dial(cfg.RedisURL, cfg.RedisCluster, redisTLS.apply); err != nil {
		return err
	}
	if err := streams.RetryWhile(ctx, "Redis", redisTransient, func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }); err != nil {
		return fmt.Errorf("connecting to Redis: %w", err)
	}
	st, err := store.Open(ctx, js, store.Config{Replicas: cfg.Replicas, Sealer: sealer, Now: cfg.Now})
	if err != nil {
		return err
	}
	resealJobs(ctx, st, cfg.Logger)
	ix, err := timer.New(s.rdb, timer.Config{Prefix: cfg.RedisPrefix, Partitions: cfg.Partitions})
	if err != nil {
		return err
	}
	hist := history.NewReader(js)
	reg := cfg.Metrics
	observe := reg.Planner()
	observers := dispatch.Observers{observe}
	tc := cfg.Tracing
	tc.Service, tc.Logger = "scheduler-planner", cfg.Logger
	if s.tracer, err = tracing.Start(ctx, tc); err != nil {
		return err
	}
	if s.tracer != nil {
		observers = append(observers, s.tracer)
	}
	followUps, err := store.OpenFollowUps(ctx, js, cfg.Replicas)
	if err != nil {
		return err
	}
	dc := dispatch.Config{
		Lease: cfg.Lease, Replicas: cfg.Replicas, Sealer: sealer, Logger: cfg.Logger,
		ActionTimeout: cfg.ActionTimeout, EndedRetention: cfg.EndedRetention, History: hist,
		Lookahead: cfg.Lookahead, PublishAhead: cfg.PublishAhead, MaxIdle: cfg.MaxIdle, PublishTimeout: cfg.PublishTimeout, Now: cfg.Now, Observer: observers,
	}
	if s.engine, err = dispatch.New(js, st, followUps, ix, dc); err != nil {
		return err
	}
	if err := s.engine.Start(ctx); err != nil {
		return err
	}
	s.feedback, err = feedback.Start(ctx, js, s.engine.Jobs(), s.engine.FollowUps(), s.engine.Wake, st, ix,
		feedback.Config{Replicas: cfg.Replicas, Now: cfg.Now, Logger: cfg.Logger, Observer: observe})
	if err != nil {
		return err
	}
	public, _ := cfg.publicURL() // checked by validate
	server := api.New(st, s.engine.Scheduling(), api.Config{
		Tokens: cfg.Tokens, Authenticators: authenticators, Ceilings: cfg.Ceilings,
		History: hist, Now: cfg.Now, Logger: cfg.Logger,
		Hosts: cfg.hosts(public), PublicURL: public,
	})
	if cfg.DisableIntake {
		cfg.Logger.Info("the NATS intake is off")
	} else if s.intake, err = intake.Start(ctx, s.nc, js, server, intake.Config{Replicas: cfg.Replicas, Logger: cfg.Logger}); err != nil {
		return err
	}
	reg.WatchConsumer(js, contracts.ResultsStream, contracts.PlannerConsumer)
	reg.WatchConsumer(js, contracts.ExecStream, contracts.WorkersConsumer)
	reg.GaugeFuncs(func(ctx context.Context) ([]float64, error) {
		due, claimed, err := ix.Backlog(ctx, cfg.Now())
		return []float64{float64(due), float64(claimed)}, err
	}, []string{"occurrences_due", "occurrences_claimed"}, []string{
		"Occurrences in the Redis timer whose due time has passed and that no planner has claimed yet: the dispatch backlog.",
		"Occurrences claimed by a planner and not yet committed: being published, or left by a stopped planner until their lease ends.",
	})
	mux := http.NewServeMux()
	health.Register(mux, health.Checks{Alive: s.watch.Alive, Ready: s.ready})
	if cfg.MetricsListen != "" {
		if s.metrics, err = health.ListenRole(cfg.MetricsListen, health.Checks{}, reg.Handler(), cfg.Limits); err != nil {
			return err
		}
		cfg.Logger.Info("metrics served", slog.String("metrics", "http://"+s.metrics.Addr()+"/metrics"))
	} else {
		mux.Handle("GET /metrics", server.Authenticated(reg.Handler()))
	}
	root := observe.API(server, api.RouteOf)
	if !cfg.DisableConsole {
		login := console.OIDCLogin{Issuer: cfg.OIDC.Issuer, Client: cfg.OIDCClient, PublicURL: public, HTTPClient: cfg.OIDC.Client}
		if s.console, err = console.New(console.Config{API: server, EncryptionKey: cfg.EncryptionKey, NATS: s.nc, Now: cfg.Now, Logger: cfg.Logger,
			Login: login}); err != nil {
			return err
		}
		root = console.Beside(s.console, root)
	}
	mux.Handle("/", root)
	if s.http, err = health.Listen(cfg.Listen, mux, cfg.Limits, s.cert.Listener); err != nil {
		return err
	}
	server.Listening(s.http.Addr(), s.cert != nil)
	cfg.Logger.Info("planner started", slog.String("api", s.URL()))
	return nil
}

// validateAccess checks the flat tokens, the OpenID Connect issuer and the
// ceilings, naming the flag of each problem and never a token.
func (c Config) validateAccess() []error {
	var errs []error
	for i, token := range c.Tokens {
		if err := api.CheckToken(token); err != nil {
			errs = append(errs, fmt.Errorf("--api-tokens (SCHEDULER_API_TOKENS): token %d of %d: %w", i+1, len(c.Tokens), err))
		}
	}
	if c.OIDC.Issuer != "" || c.OIDC.Audience != "" {
		if err := c.OIDC.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--oidc-issuer and --oidc-audience (SCHEDULER_OIDC_ISSUER, SCHEDULER_OIDC_AUDIENCE): %w", err))
		}
	}
	if c.OIDCClient.ID != "" && c.OIDC.Issuer == "" {
		errs = append(errs, errors.New("--oidc-client-id (SCHEDULER_OIDC_CLIENT_ID) needs --oidc-issuer: the console signs viewers in through the API's issuer"))
	}
	if c.OIDCClient.ID == "" && (c.OIDCClient.Secret != "" || len(c.OIDCClient.Params) > 0) {
		errs = append(errs, errors.New("--oidc-client-secret-file and --oidc-login-params need --oidc-client-id (SCHEDULER_OIDC_CLIENT_ID)"))
	}
	if err := c.OIDCClient.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--oidc-login-params (SCHEDULER_OIDC_LOGIN_PARAMS): %w", err))
	}
	if err := c.Ceilings.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("the ceilings (--max-jobs-per-collection, --min-recurrence-interval, --max-collections-per-subscription): %w", err))
	}
	return errs
}

// authenticators opens the token file, reading it again from now on, and
// the OpenID Connect verifier, as configured.
func (s *Service) authenticators(ctx context.Context) ([]api.Authenticator, error) {
	var out []api.Authenticator
	if s.cfg.TokensFile != "" {
		f, err := api.OpenTokenFile(api.TokenFileConfig{Path: s.cfg.TokensFile, Interval: s.cfg.TokensFileInterval, Logger: s.cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("--api-tokens-file (SCHEDULER_API_TOKENS_FILE): %w", err)
		}
		if err := f.Start(ctx); err != nil {
			return nil, err
		}
		s.tokens = f
		out = append(out, f)
	}
	if s.cfg.OIDC.Issuer != "" {
		oc := s.cfg.OIDC
		oc.Logger = cmp.Or(oc.Logger, s.cfg.Logger)
		o, err := api.NewOIDC(oc)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// redisTransient reports whether a failed Redis ping is worth repeating:
// no answer (yet), or a server loading its data or a cluster without a
// quorum. Credentials or certificates refused are not.
func redisTransient(err error) bool {
	if tlsfiles.Refused(err) {
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	for _, prefix := range []string{"LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "max number of clients"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

// ready reports what keeps the planner from being ready: NATS or Redis not
// connected, or the stored jobs not all scheduled yet.
func (s *Service) ready(ctx context.Context) []string {
	problems := s.watch.Ready(ctx)
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		problems = append(problems, "Redis: "+err.Error())
	}
	return append(problems, s.engine.Problems()...)
}

// Addr returns the address the API listens on.
func (s *Service) Addr() string {
	if s.http == nil {
		return s.cfg.Listen
	}
	return s.http.Addr()
}

// URL returns the base URL of the API: https:// when it serves TLS.
func (s *Service) URL() string {
	if s.cert != nil {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// Wake makes the dispatcher look at the timer at once, as when the clock
// jumped.
func (s *Service) Wake() { s.engine.Wake() }

// Ready reports whether every stored job has been scheduled.
func (s *Service) Ready() bool { return s.engine != nil && s.engine.Ready() }

// Stop stops serving (letting requests finish until ctx ends), stops the
// dispatcher and closes the connections. It is idempotent.
func (s *Service) Stop(ctx context.Context) {
	s.stopOnce.Do(func() {
		if s.console != nil {
			s.console.Stop()
		}
		s.http.Shutdown(ctx)
		s.metrics.Shutdown(ctx)
		if s.intake != nil {
			s.intake.Stop()
		}
		if s.tokens != nil {
			s.tokens.Stop()
		}
		if s.feedback != nil {
			s.feedback.Stop()
		}
		if s.engine != nil {
			s.engine.Stop()
		}
		s.tracer.Shutdown(ctx)
		if s.rdb != nil {
			s.rdb.Close()
		}
		if s.watch != nil {
			s.watch.Stop()
		}
		if s.nc != nil {
			s.nc.Close()
		}
	})
}

// resealJobs seals again the secrets that planners before format v2 of
// internal/seal sealed, bound to where they are sent (store.ResealJobs).
// A failure is logged and start goes on: the store still reads those
// secrets, and the next start tries again.
func resealJobs(ctx context.Context, st *store.Store, log *slog.Logger) {
	n, err := st.ResealJobs(ctx)
	switch {
	case err != nil:
		log.Warn("sealing the secrets of jobs of an earlier format again", slog.Int("jobs", n), slog.String("error", err.Error()))
	case n > 0:
		log.Info("sealed the secrets of jobs of an earlier format again, bound to where they are sent", slog.Int("jobs", n))
	}
}
