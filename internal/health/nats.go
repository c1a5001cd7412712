package health

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// NATSDownLimit is how long a role's NATS connection may stay down
// (disconnected, reconnecting) before /healthz fails: long enough to ride
// out a server's restart or a cluster electing a leader, which the
// connection survives by reconnecting, and short enough that a role which
// cannot get back to NATS is restarted by its orchestrator within a minute
// (the probes in deploy/ fail after three checks ten seconds apart). A
// connection closed for good fails /healthz at once: it never comes back.
const NATSDownLimit = 30 * time.Second

// NATSConfig configures a NATSWatch.
type NATSConfig struct {
	// Limit is how long the connection may stay down before Alive reports
	// it. Defaults to NATSDownLimit.
	Limit time.Duration
	// Now is the clock that times an outage. Defaults to time.Now.
	Now func() time.Time
}

// NATSWatch follows a NATS connection's state for /healthz and /readyz:
// since when it has been down, and whether it is closed for good.
type NATSWatch struct {
	nc     *nats.Conn
	limit  time.Duration
	now    func() time.Time
	events chan nats.Status
	done   chan struct{}
	stop   sync.Once

	mu        sync.Mutex
	downSince time.Time // zero while connected
}

// WatchNATS starts following nc. Stop ends it; closing nc ends it too.
func WatchNATS(nc *nats.Conn, cfg NATSConfig) *NATSWatch {
	if cfg.Limit <= 0 {
		cfg.Limit = NATSDownLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &NATSWatch{nc: nc, limit: cfg.Limit, now: cfg.Now, events: nc.StatusChanged(), done: make(chan struct{})}
	w.observe()
	go func() {
		defer close(w.done)
		// An event only says that the state changed: the connection's
		// own status is the truth, read at each.
		for range w.events {
			if w.observe() == nats.CLOSED {
				return
			}
		}
	}()
	return w
}

// observe notes the connection's current state and returns it.
func (w *NATSWatch) observe() nats.Status {
	st := w.nc.Status()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case st == nats.CONNECTED:
		w.downSince = time.Time{}
	case w.downSince.IsZero():
		w.downSince = w.now()
	}
	return st
}

// down returns the connection's state and, when it is not connected, how
// long it has been down.
func (w *NATSWatch) down() (nats.Status, time.Duration) {
	st := w.observe()
	if st == nats.CONNECTED {
		return st, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return st, w.now().Sub(w.downSince)
}

// Alive reports the connection when it is closed for good, or has been
// down for longer than the limit: the role needs a restart.
func (w *NATSWatch) Alive(context.Context) []string {
	switch st, d := w.down(); {
	case st == nats.CLOSED:
		return []string{w.describe(st, d, "")}
	case st != nats.CONNECTED && d > w.limit:
		return []string{w.describe(st, d, fmt.Sprintf(", longer than the limit of %s", w.limit))}
	}
	return nil
}

// Ready reports the connection when it is not connected.
func (w *NATSWatch) Ready(context.Context) []string {
	if st, d := w.down(); st != nats.CONNECTED {
		return []string{w.describe(st, d, "")}
	}
	return nil
}

// describe says the connection's state, for how long (and more), and its
// last error.
func (w *NATSWatch) describe(st nats.Status, d time.Duration, more string) string {
	s := fmt.Sprintf("NATS: %s for %s%s", st, d.Round(time.Second), more)
	if st == nats.CLOSED {
		s = "NATS: CLOSED for good"
	}
	if err := w.nc.LastError(); err != nil {
		s += fmt.Sprintf(" (last error: %v)", err)
	}
	return s
}

// Stop stops following the connection. It is idempotent.
func (w *NATSWatch) Stop() {
	w.stop.Do(func() {
		w.nc.RemoveStatusListener(w.events)
		<-w.done
	})
}
