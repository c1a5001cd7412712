package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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

// pull fetches executions until ctx ends, then closes w.pulled. What the
// last request received goes to receive like the rest: Stop hands it back
// if it is held, or lets it finish if it started.
func (w *Worker) pull(ctx context.Context) {
	defer close(w.pulled)
	wait := pullWait(w.cfg.AckWait)
	backoff := newBackoff()
	for {
		n, ok := w.reserve(ctx)
		if !ok {
			return
		}
		pulledAt := w.cfg.clock()
		err := w.fetch(ctx, newPullRequest(n, wait), pulledAt)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			backoff.reset()
			continue
		case errors.Is(err, errNoHeartbeat):
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
// given back. The request ends when JetStream says it expired (after 90% of
// wait), after wait, or at once when ctx ends.
//
// The request has a subscription of its own, ended before fetch returns;
// what had arrived by then is handed to receive after it. A stopping
// worker hands executions back only once its pull loop has returned (see
// Stop): JetStream reads the unsubscription before those Naks, which come
// on the same connection, so it never delivers an execution handed back
// to a request of this worker that nobody reads any more, where it would
// wait out its ack wait.
func (w *Worker) fetch(ctx context.Context, req pullRequest, pulledAt time.Time) error {
	received := 0
	defer func() {
		for range req.Batch - received {
			<-w.slots
		}
	}()
	nc := w.js.Conn()
	// Room for the whole batch and the statuses that may come with it, so
	// that the connection never drops one for a slow reader.
	arrived := make(chan *nats.Msg, 2*req.Batch+8)
	sub, err := nc.ChanSubscribe(nc.NewInbox(), arrived)
	if err != nil {
		return err
	}
	take := func(m *nats.Msg) (bool, error) {
		execution, done, err := pullStatus(m)
		if execution && received < req.Batch {
			received++
			w.receive(pulledMsg{nc: nc, msg: m}, pulledAt)
			done = received == req.Batch
		}
		return done, err
	}
	err = w.await(ctx, nc, sub, req, arrived, take)
	_ = sub.Unsubscribe()
	for {
		select {
		case m := <-arrived:
			if _, err := take(m); err != nil {
				w.cfg.Logger.Debug("after a pull request ended", slog.String("status", err.Error()))
			}
		default:
			return err
		}
	}
}

// nextSubject is the subject of pull requests on a stream's consumer,
// under js's API prefix (or domain).
func nextSubject(js jetstream.JetStream, stream, consumer string) string {
	opts := js.Options()
	prefix := cmp.Or(opts.APIPrefix, jetstream.DefaultAPIPrefix)
	if opts.Domain != "" {
		prefix = "$JS." + opts.Domain + ".API."
	}
	if !strings.HasSuffix(prefix, ".") {
		prefix += "."
	}
	return prefix + "CONSUMER.MSG.NEXT." + stream + "." + consumer
}

// pullRequest is the body of a request for the next executions on the
// workers' consumer (JetStream's CONSUMER.MSG.NEXT API).
type pullRequest struct {
	Batch     int           `json:"batch"`
	Expires   time.Duration `json:"expires,omitempty"`
	Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
}

// newPullRequest asks for n executions for up to 90% of wait, so that
// JetStream ends the request before the worker gives up on it, with the
// idle heartbeat of pullHeartbeat.
func newPullRequest(n int, wait time.Duration) pullRequest {
	return pullRequest{Batch: n, Expires: wait * 9 / 10, Heartbeat: pullHeartbeat(wait)}
}

// errNoHeartbeat is returned for a pull request that heard nothing, not
// even an idle heartbeat, for two heartbeats: its consumer leader may be
// gone.
var errNoHeartbeat = errors.New("no heartbeat from the consumer")

// await sends req on sub and hands what arrives to take until take says
// the request is done, ctx ends, or wait (the request's expiry and 10%)
// runs out.
func (w *Worker) await(ctx context.Context, nc *nats.Conn, sub *nats.Subscription, req pullRequest, arrived <-chan *nats.Msg, take func(*nats.Msg) (bool, error)) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if err := nc.PublishRequest(w.next, sub.Subject, body); err != nil {
		return err
	}
	deadline := time.NewTimer(req.Expires * 10 / 9)
	defer deadline.Stop()
	var (
		hb     *time.Timer
		silent <-chan time.Time
	)
	if req.Heartbeat > 0 {
		hb = time.NewTimer(2 * req.Heartbeat)
		defer hb.Stop()
		silent = hb.C
	}
	for {
		select {
		case m := <-arrived:
			if hb != nil {
				hb.Reset(2 * req.Heartbeat)
			}
			if done, err := take(m); done || err != nil {
				return err
			}
		case <-silent:
			return errNoHeartbeat
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// pullStatus reads a message received on a pull request: an execution, or
// a status from JetStream. done says the request ended (it expired, or
// JetStream ended it); err says why, when that is a fault.
func pullStatus(m *nats.Msg) (execution, done bool, err error) {
	status := m.Header.Get("Status")
	if len(m.Data) > 0 || status == "" {
		return true, false, nil
	}
	description := m.Header.Get("Description")
	switch status {
	case "100": // idle heartbeat
		return false, false, nil
	case "404", "408": // no executions, or the request expired
		return false, true, nil
	case "503":
		return false, true, nats.ErrNoResponders
	default: // 409: the consumer's leader changed, it was deleted, the server shuts down; 400
		return false, true, fmt.Errorf("the pull request ended: %s %s", status, description)
	}
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
