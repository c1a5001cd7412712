package testkit

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATSOn is NATSIn listening on port, so that a test can start a server
// after its clients, or stop one and start another where it was; with
// jetStream false the server runs without JetStream.
func NATSOn(t testing.TB, dir string, port int, jetStream bool) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, JetStream: jetStream, StoreDir: dir,
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatalf("starting NATS: %v", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatalf("NATS did not become ready on port %d", port)
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// Logs collects what a logger writes, for a test to wait for a line.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Logger returns a text logger, at debug level, that writes to l.
func (l *Logs) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Contains reports whether a line written so far contains every one of
// parts.
func (l *Logs) Contains(parts ...string) bool {
	for _, line := range strings.Split(l.String(), "\n") {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(line, p)
		}
		if found {
			return true
		}
	}
	return false
}

// InBackground runs start (a role's Start, against servers that are not up
// yet) in the background and returns a function that waits until it
// returned, at most 30 s, and gives its result; an error fails the test.
func InBackground[S any](t testing.TB, start func() (S, error)) (wait func() S) {
	t.Helper()
	type started struct {
		v   S
		err error
	}
	done := make(chan started, 1)
	go func() {
		v, err := start()
		done <- started{v, err}
	}()
	return func() S {
		t.Helper()
		select {
		case s := <-done:
			if s.err != nil {
				t.Fatal(s.err)
			}
			return s.v
		case <-time.After(30 * time.Second):
			t.Fatal("the start did not return once its servers were up")
		}
		var zero S
		return zero
	}
}

// HealthFollowsNATS checks a role's endpoints at base: /healthz answers
// 200, then, once closeNATS closed its NATS connection for good, 503 naming
// it.
func HealthFollowsNATS(t testing.TB, base string, closeNATS func()) {
	t.Helper()
	if code, body := Call(t, "GET", base+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	closeNATS()
	if code, body := Call(t, "GET", base+"/healthz", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "NATS: CLOSED") {
		t.Fatalf("/healthz with the connection closed: %d %s", code, body)
	}
}
