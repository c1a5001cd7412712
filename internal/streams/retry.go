package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/internal/transient"
)

// How a role waits at start-up for what it opens (a connection, a stream, a
// bucket, a consumer): the first wait after a failure, doubled after each
// further failure up to the cap, each with up to a quarter more at random
// so that roles started together do not retry together. One attempt may
// take AttemptTimeout at most.
const (
	RetryFirstWait = 250 * time.Millisecond
	RetryMaxWait   = 5 * time.Second
	AttemptTimeout = 5 * time.Second
)

type loggerKey struct{}

// WithLogger returns a context whose start-up waits (Retry, and the Ensure
// functions that use it) log to log. Without one they log to slog.Default.
func WithLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

func loggerFrom(ctx context.Context) *slog.Logger {
	if log, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && log != nil {
		return log
	}
	return slog.Default()
}

// Retry calls open until it succeeds, fails with an error that waiting
// does not cure (see Transient), or ctx ends; each failure that it retries
// is logged at warn level with the error. what names what is being opened
// ("the EXEC stream"). A role's start-up uses it so that a cluster that is
// briefly unavailable (a node restarting, a leader being elected) delays
// the start instead of failing it, while a configuration error, such as a
// stream that exists with an incompatible configuration, fails at once.
func Retry(ctx context.Context, what string, open func(ctx context.Context) error) error {
	return RetryWhile(ctx, what, Transient, open)
}

// Open is Retry for an open that returns what it opened.
func Open[T any](ctx context.Context, what string, open func(ctx context.Context) (T, error)) (T, error) {
	var v T
	err := Retry(ctx, what, func(ctx context.Context) error {
		var err error
		v, err = open(ctx)
		return err
	})
	return v, err
}

// RetryWhile is Retry with another test of which errors are worth waiting
// out, for a system other than NATS.
func RetryWhile(ctx context.Context, what string, transient func(error) bool, open func(ctx context.Context) error) error {
	wait := RetryFirstWait
	var timer *time.Timer
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
		err := open(actx)
		cancel()
		switch {
		case err == nil:
			if attempt > 1 {
				loggerFrom(ctx).Info("opened after waiting", slog.String("what", what), slog.Int("attempts", attempt))
			}
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("stopped waiting for %s: %w (the last attempt failed with: %v)", what, ctx.Err(), err)
		case !transient(err):
			return err
		}
		pause := wait + rand.N(wait/4+1)
		loggerFrom(ctx).Warn("not available yet, retrying", slog.String("what", what), slog.String("error", err.Error()),
			slog.Int("attempt", attempt), slog.Duration("retry_in", pause))
		if timer == nil {
			timer = time.NewTimer(pause)
			defer timer.Stop()
		} else {
			timer.Reset(pause)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for %s: %w (the last attempt failed with: %v)", what, ctx.Err(), err)
		case <-timer.C:
		}
		wait = min(2*wait, RetryMaxWait)
	}
}

// Transient reports whether err is a condition of NATS that passes by
// itself (see transient.Is): a request that timed out or found no responder
// (JetStream not running yet), a connection being (re)established, a
// JetStream API error of a cluster without a leader or short of nodes.
// A connection closed for good is not: waiting does not reopen it. Nor is
// anything else, such as a stream that exists with another configuration
// or an authorization error.
func Transient(err error) bool {
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, jetstream.ErrConnectionClosed) {
		return false
	}
	return transient.Is(err)
}
