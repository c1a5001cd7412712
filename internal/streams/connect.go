package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/internal/tlsfiles"
)

// How a role's connection notices a dead server and comes back.
const (
	// PingInterval and MaxPingsOutstanding: the connection pings its
	// server every PingInterval and counts it dead after
	// MaxPingsOutstanding pings without an answer, so a server that went
	// silent (a machine or network gone, no TCP reset) is noticed within
	// 6–9 s, and the connection moves to another server of the cluster.
	PingInterval        = 3 * time.Second
	MaxPingsOutstanding = 2
	// ReconnectFirstWait and ReconnectMaxWait: after trying every server
	// it knows once, the connection waits ReconnectFirstWait, doubled
	// after each further round up to ReconnectMaxWait (each with up to a
	// quarter more at random), and never gives up.
	ReconnectFirstWait = 250 * time.Millisecond
	ReconnectMaxWait   = 5 * time.Second
)

// Connect connects a role to NATS at url (a comma-separated list of a
// cluster's servers works), proving itself and checking the server as opts
// say, and returns the connection and its JetStream context. While no
// server answers it waits and tries again, as Retry does, until ctx ends;
// an error that waiting does not cure (a URL that does not parse, a file of
// opts that does not load, credentials or a certificate refused) fails at
// once. The connection then reconnects for ever after a loss, with
// backoff, and logs its disconnections, reconnections and closing to log
// with the server's address and never its credentials.
func Connect(ctx context.Context, url, role string, log *slog.Logger, opts ConnectOptions) (*nats.Conn, jetstream.JetStream, error) {
	if log == nil {
		log = slog.Default()
	}
	auth, err := opts.natsOptions(log)
	if err != nil {
		return nil, nil, err
	}
	var nc *nats.Conn
	err = RetryWhile(WithLogger(ctx, log), "NATS at "+RedactURL(url), connectTransient, func(context.Context) error {
		var err error
		nc, err = nats.Connect(url, append(connectOptions(role, log), auth...)...)
		return err
	})
	if closedAfterHandshake(err) {
		err = fmt.Errorf("%w (the server closed the connection once TLS was set up: it most likely refused this role's client certificate, "+
			"or its lack of one; see --nats-cert-file and --nats-key-file)", err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to NATS at %s: %w", RedactURL(url), hideURL(err))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("JetStream: %w", err)
	}
	log.Info("connected to NATS", slog.String("server", RedactURL(nc.ConnectedUrl())), slog.String("server_name", nc.ConnectedServerName()))
	return nc, js, nil
}

// connectOptions are the options of every role's connection.
func connectOptions(role string, log *slog.Logger) []nats.Option {
	// The handlers run after the connection changed state, when it no
	// longer says which server it was connected to.
	var server atomic.Value
	server.Store("")
	return []nats.Option{
		nats.Name("scheduler " + role),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.PingInterval(PingInterval),
		nats.MaxPingsOutstanding(MaxPingsOutstanding),
		// Nothing is held back while reconnecting: a write reaches a server
		// now or fails now, so that a caller told it failed (an API 503, a
		// publish given back) never sees it land later.
		nats.ReconnectBufSize(-1),
		nats.ConnectHandler(func(nc *nats.Conn) { server.Store(RedactURL(nc.ConnectedUrl())) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil when the role closes it
				log.Warn("disconnected from NATS, reconnecting", slog.String("server", server.Load().(string)), slog.String("error", err.Error()))
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("reconnecting to NATS failed, trying again", slog.String("error", hideURL(err).Error()))
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			server.Store(RedactURL(nc.ConnectedUrl()))
			log.Info("reconnected to NATS", slog.String("server", server.Load().(string)), slog.String("server_name", nc.ConnectedServerName()))
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if err := nc.LastError(); err != nil {
				log.Error("the NATS connection is closed for good; /healthz fails until the role is restarted",
					slog.String("server", server.Load().(string)), slog.String("error", err.Error()))
			}
		}),
		nats.LameDuckModeHandler(func(nc *nats.Conn) {
			log.Info("the NATS server is shutting down (lame duck mode); moving to another soon", slog.String("server", RedactURL(nc.ConnectedUrl())))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			attrs := []any{slog.String("error", err.Error())}
			if sub != nil {
				attrs = append(attrs, slog.String("subject", sub.Subject))
			}
			log.Warn("NATS reported an error", attrs...)
		}),
	}
}

// reconnectDelay is the wait before the n-th round of reconnection
// attempts (n from 1).
func reconnectDelay(n int) time.Duration {
	d := ReconnectFirstWait
	for i := 1; i < n && d < ReconnectMaxWait; i++ {
		d *= 2
	}
	d = min(d, ReconnectMaxWait)
	return d + rand.N(d/4+1)
}

// connectTransient reports whether a failed connection attempt is worth
// repeating: no server answered, or not yet. Credentials refused, TLS
// required or refused, or a URL that does not parse are not.
func connectTransient(err error) bool {
	var urlErr *url.Error
	switch {
	case closedAfterHandshake(err):
		return false
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		errors.Is(err, nats.ErrAccountAuthExpired), errors.Is(err, nats.ErrSecureConnRequired),
		errors.Is(err, nats.ErrSecureConnWanted), errors.As(err, &urlErr), tlsfiles.Refused(err):
		return false
	}
	return Transient(err)
}

// closedAfterHandshake reports a server that completed the TLS handshake
// and then closed the connection: under TLS 1.3 that is how a refused
// client certificate often shows, when the client's first write meets the
// closed connection before it reads the server's alert. nats.go marks the
// case (ErrTLS, "after TLS handshake"); a handshake that failed or timed
// out is not this case and stays transient.
func closedAfterHandshake(err error) bool {
	return errors.Is(err, nats.ErrTLS) && strings.Contains(err.Error(), "after TLS handshake")
}

// RedactURL returns the NATS URL (or comma-separated URLs) without user
// information: a password, or a token in the user name, is never logged.
func RedactURL(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			parts[i] = p
			continue
		}
		if !strings.Contains(p, "://") {
			p = "nats://" + p
		}
		u, err := url.Parse(p)
		if err != nil {
			parts[i] = "(a URL that does not parse)"
			continue
		}
		u.User = nil
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// hideURL replaces an error that quotes a URL (url.Parse's, which would
// show its credentials) with one that does not.
func hideURL(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return fmt.Errorf("the URL does not parse: %w", urlErr.Err)
	}
	return err
}
