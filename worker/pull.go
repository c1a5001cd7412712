package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The pull loop asks JetStream for executions in batches sized to the free
// slots, one pull request at a time, and remembers when it sent each
// request. JetStream starts an execution's ack wait when it delivers it,
// which is never before the request that asked for it was sent: a message
// answering a request sent at T is redelivered elsewhere no earlier than
// T + AckWait. The worker starts it only while that moment is further away
// than a guard (see fresh), and tells JetStream that it is in progress,
// which restarts its ack wait, from T + AckWait/3 on (see progress): at
// once when it starts later than that. The delivery time cannot be read
// from the message: the timestamp in its ack subject is when the stream
// stored it, and an InProgress sent for a stale delivery would restart the
// ack wait of the copy another worker holds.

// maxPullWait bounds how long one pull request waits for executions.
const maxPullWait = 5 * time.Second

// pullWait is how long one pull request waits for executions: a fifth of
// AckWait, at most maxPullWait. A message delivered at the end of the
// request still has most of its ack wait ahead of it, and a consumer leader
// that died is noticed within that time.
func pullWait(ackWait time.Duration) time.Duration {
	return min(ackWait/5, maxPullWait)
}

// pullHeartbeat is the idle heartbeat asked of long pull requests (none for
// those shorter than 2s), so that a consumer leader that died is noticed
// before the request expires.
func pullHeartbeat(wait time.Duration) time.Duration {
	if wait < 2*time.Second {
		return 0
	}
	return wait / 4
}

// staleGuard is how much of the ack wait must be left for a delivery to be
// started: a fifth of AckWait, at most 5s. It covers the time the
// InProgress sent at the start takes to reach the consumer leader.
func staleGuard(ackWait time.Duration) time.Duration {
	return min(ackWait/5, 5*time.Second)
}

// fresh reports whether a message delivered in answer to a pull request
// sent at pulledAt is certainly still within its ack wait, with the guard
// to spare.
func (w *Worker) fresh(pulledAt time.Time) bool {
	return w.cfg.clock().Sub(pulledAt) < w.cfg.AckWait-staleGuard(w.cfg.AckWait)
}

// pull fetches executions until ctx ends, then closes w.pulled. Whatever
// arrives once the worker is stopping is handed back by receive.
func (w *Worker) pull(ctx context.Context, cons jetstream.Consumer) {
	defer close(w.pulled)
	wait := pullWait(w.cfg.AckWait)
	backoff := newBackoff()
	for {
		n, ok := w.reserve(ctx)
		if !ok {
			return
		}
		pulledAt := w.cfg.clock()
		err := w.fetch(ctx, cons, n, wait, pulledAt)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			backoff.reset()
			continue
		case errors.Is(err, jetstream.ErrNoHeartbeat):
			w.cfg.Logger.Warn("fetching executions: no heartbeat from the consumer", slog.String("error", err.Error()))
		default:
			w.cfg.Logger.Warn("fetching executions", slog.String("error", err.Error()))
		}
		if !backoff.wait(ctx) {
			return
		}
	}
}

// reserve waits for at least one free slot and takes every free one, at
// most Concurrency; false when ctx ended first.
func (w *Worker) reserve(ctx context.Context) (int, bool) {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, false
	}
	n := 1
	for n < w.cfg.Concurrency {
		select {
		case w.slots <- struct{}{}:
			n++
		default:
			return n, true
		}
	}
	return n, true
}

// fetch sends one pull request for n executions, holding n slots, and
// hands each message to receive with one of them; the slots left over are
// given back. The request ends after wait, or at once when ctx ends.
func (w *Worker) fetch(ctx context.Context, cons jetstream.Consumer, n int, wait time.Duration, pulledAt time.Time) error {
	received := 0
	defer func() {
		for range n - received {
			<-w.slots
		}
	}()
	// FetchContext sets the request's expiry to 90% of the time left, so
	// that the server ends it before the client gives up on it.
	fctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	opts := []jetstream.FetchOpt{jetstream.FetchContext(fctx)}
	if hb := pullHeartbeat(wait); hb > 0 {
		opts = append(opts, jetstream.FetchHeartbeat(hb))
	}
	batch, err := cons.Fetch(n, opts...)
	if err != nil {
		return err
	}
	// The messages received before the request ended stay readable after:
	// each goes to receive, which hands it back if the worker is stopping.
	for m := range batch.Messages() {
		received++
		w.receive(m, pulledAt)
	}
	err = batch.Error()
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, nats.ErrTimeout) {
		return nil // the request expired, or the worker is stopping
	}
	return err
}

// backoff spaces the pull requests that fail, from 100ms doubling to 2s.
type backoff struct{ next time.Duration }

func newBackoff() *backoff { return &backoff{next: 100 * time.Millisecond} }

func (b *backoff) reset() { b.next = 100 * time.Millisecond }

// wait sleeps for the current delay, or until ctx ends (false).
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.next)
	defer t.Stop()
	b.next = min(2*b.next, 2*time.Second)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
