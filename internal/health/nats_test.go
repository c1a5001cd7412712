package health

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// setup serves the checks of a watch on a connection to a server the test
// can stop and start again on its port, with a clock the test moves.
func setup(t *testing.T) (get func(path string) (int, string), nc *nats.Conn, clock *testkit.Clock, restart func(stop bool)) {
	t.Helper()
	dir, port := t.TempDir(), testkit.FreePort(t)
	ns := testkit.NATSOn(t, dir, port, true)
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	clock = testkit.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w := WatchNATS(nc, NATSConfig{Limit: 30 * time.Second, Now: clock.Now})
	t.Cleanup(w.Stop)
	mux := http.NewServeMux()
	Register(mux, Checks{Alive: w.Alive, Ready: w.Ready})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	get = func(path string) (int, string) { return testkit.Call(t, "GET", srv.URL+path, "") }
	restart = func(stop bool) {
		if stop {
			ns.Shutdown()
			ns.WaitForShutdown()
			return
		}
		ns = testkit.NATSOn(t, dir, port, true)
	}
	return get, nc, clock, restart
}

func TestHealthFollowsTheNATSConnection(t *testing.T) {
	t.Parallel()
	t.Run("a connection down for less than the limit is alive, and not ready", func(t *testing.T) {
		t.Parallel()
		get, nc, clock, restart := setup(t)
		if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("/healthz connected: %d %q", code, body)
		}
		restart(true)
		testkit.Eventually(t, 10*time.Second, func() bool { return !nc.IsConnected() }, "still connected")
		get("/healthz") // the outage may start being timed here, at the latest
		clock.Advance(30 * time.Second)
		if code, body := get("/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz down for the limit: %d %q", code, body)
		}
		if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready: NATS: RECONNECTING for 30s") {
			t.Fatalf("/readyz down: %d %q", code, body)
		}
	})
	t.Run("a connection down for longer than the limit fails /healthz, until it is back", func(t *testing.T) {
		t.Parallel()
		get, nc, clock, restart := setup(t)
		restart(true)
		testkit.Eventually(t, 10*time.Second, func() bool { return !nc.IsConnected() }, "still connected")
		get("/healthz") // the outage may start being timed here, at the latest
		clock.Advance(31 * time.Second)
		code, body := get("/healthz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "not alive: NATS: RECONNECTING for 31s, longer than the limit of 30s") {
			t.Fatalf("/healthz down past the limit: %d %q", code, body)
		}
		restart(false)
		testkit.Eventually(t, 15*time.Second, nc.IsConnected, "did not reconnect")
		if code, body := get("/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz reconnected: %d %q", code, body)
		}
		if code, body := get("/readyz"); code != http.StatusOK || body != "ready\n" {
			t.Fatalf("/readyz reconnected: %d %q", code, body)
		}
		// A new outage is timed from its own start.
		restart(true)
		testkit.Eventually(t, 10*time.Second, func() bool { return !nc.IsConnected() }, "still connected")
		get("/healthz")
		clock.Advance(10 * time.Second)
		if code, body := get("/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz 10s into a second outage: %d %q", code, body)
		}
	})
	t.Run("a connection closed for good fails /healthz at once", func(t *testing.T) {
		t.Parallel()
		get, nc, _, _ := setup(t)
		nc.Close()
		code, body := get("/healthz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "not alive: NATS: CLOSED for good") {
			t.Fatalf("/healthz closed: %d %q", code, body)
		}
		if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "NATS: CLOSED") {
			t.Fatalf("/readyz closed: %d %q", code, body)
		}
	})
}

// A protocol error closes a connection for good (nats.go does not
// reconnect after the server's "maximum control line exceeded"): /healthz
// fails at once and says why.
func TestAConnectionClosedByAProtocolErrorFailsHealth(t *testing.T) {
	t.Parallel()
	get, nc, _, _ := setup(t)
	_ = nc.Publish("too."+strings.Repeat("long.", 1000)+"subject", nil)
	testkit.Eventually(t, 10*time.Second, nc.IsClosed, "the server did not close the connection")
	code, body := get("/healthz")
	if code != http.StatusServiceUnavailable || body != "not alive: NATS: CLOSED for good (last error: nats: maximum control line exceeded)\n" {
		t.Fatalf("/healthz after the protocol error: %d %q", code, body)
	}
}

// Without checks, both endpoints answer 200.
func TestRegisterWithoutChecks(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	Register(mux, Checks{Ready: func(context.Context) []string { return nil }})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := testkit.Call(t, "GET", srv.URL+path, ""); code != http.StatusOK {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
}
