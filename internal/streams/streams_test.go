package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// A role started before its NATS server waits for it: Connect retries,
// logging why, and returns once a server listens on the address.
func TestConnectWaitsForAServerStartedLater(t *testing.T) {
	t.Parallel()
	port := testkit.FreePort(t)
	var logs testkit.Logs
	wait := testkit.InBackground(t, func() (*nats.Conn, error) {
		nc, _, err := Connect(context.Background(), fmt.Sprintf("nats://127.0.0.1:%d", port), "test", logs.Logger(), ConnectOptions{})
		return nc, err
	})
	testkit.Eventually(t, 10*time.Second, func() bool { return logs.Contains("level=WARN", "not available yet", "NATS at") },
		"no failed attempt was logged:\n%s", logs.String())
	testkit.NATSOn(t, t.TempDir(), port, true)
	nc := wait()
	defer nc.Close()
	if !nc.IsConnected() {
		t.Fatalf("returned a connection in state %s", nc.Status())
	}
}

// The connection comes back by itself after its server restarts, and says
// so in the logs, with the server's address but never its credentials.
func TestTheConnectionReconnectsAndLogsWithoutCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := testkit.FreePort(t)
	ns := testkit.NATSOn(t, dir, port, true)
	var logs testkit.Logs
	nc, _, err := Connect(context.Background(), fmt.Sprintf("nats://someone:hunter2@127.0.0.1:%d", port), "test", logs.Logger(), ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	testkit.Eventually(t, 10*time.Second, func() bool { return logs.Contains("level=WARN", "disconnected from NATS") },
		"the disconnection was not logged:\n%s", logs.String())
	// While it reconnects, nothing is held back to be sent later: a write
	// fails now, so that one reported failed never lands afterwards.
	if err := nc.Publish("anything", []byte("x")); err == nil {
		t.Error("a publish while reconnecting was buffered, to be sent later")
	}
	testkit.NATSOn(t, dir, port, true)
	testkit.Eventually(t, 15*time.Second, nc.IsConnected, "did not reconnect")
	testkit.Eventually(t, 10*time.Second, func() bool {
		return logs.Contains("level=INFO", "reconnected to NATS", fmt.Sprintf("server=nats://127.0.0.1:%d", port))
	}, "the reconnection was not logged with the server:\n%s", logs.String())
	if strings.Contains(logs.String(), "hunter2") || strings.Contains(logs.String(), "someone") {
		t.Errorf("the logs show the credentials:\n%s", logs.String())
	}
}

// Credentials the server refuses are a configuration error: Connect fails
// at once, without the password in its error.
func TestConnectFailsAtOnceOnRefusedCredentials(t *testing.T) {
	t.Parallel()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Username: "scheduler", Password: "right", NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	var logs testkit.Logs
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err = Connect(ctx, strings.Replace(ns.ClientURL(), "nats://", "nats://scheduler:wrong@", 1), "test", logs.Logger(), ConnectOptions{})
	if !errors.Is(err, nats.ErrAuthorization) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want an authorization error at once", err)
	}
	if strings.Contains(err.Error(), "wrong") || strings.Contains(logs.String(), "wrong") {
		t.Errorf("the password shows: %v\n%s", err, logs.String())
	}
}

// A role started while its server runs without JetStream (a cluster not
// ready yet) waits: EnsureExec retries until a server with JetStream
// answers on the address, then creates the stream.
func TestEnsureWaitsForJetStream(t *testing.T) {
	t.Parallel()
	port := testkit.FreePort(t)
	early := testkit.NATSOn(t, t.TempDir(), port, false)
	var logs testkit.Logs
	ctx := WithLogger(context.Background(), logs.Logger())
	nc, js, err := Connect(ctx, early.ClientURL(), "test", logs.Logger(), ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	done := make(chan error, 1)
	go func() { done <- EnsureExec(ctx, js, 1, time.Minute) }()
	testkit.Eventually(t, 10*time.Second, func() bool {
		return logs.Contains("level=WARN", "not available yet", "the EXEC stream", "no responders")
	}, "the missing JetStream was not logged:\n%s", logs.String())
	early.Shutdown()
	early.WaitForShutdown()
	testkit.NATSOn(t, t.TempDir(), port, true)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("EnsureExec did not return once JetStream was there:\n%s", logs.String())
	}
	if _, err := js.Stream(context.Background(), contracts.ExecStream); err != nil {
		t.Fatalf("the stream: %v", err)
	}
}

// A real misconfiguration is not waited out: a stream that already takes
// the EXEC subjects makes EnsureExec and ExecStream fail at once, with
// JetStream's reason, and nothing logged as a retry.
func TestAMisconfigurationFailsAtOnce(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	var logs testkit.Logs
	ctx, cancel := context.WithTimeout(WithLogger(context.Background(), logs.Logger()), 20*time.Second)
	defer cancel()
	_, js := testkit.JetStream(t, ns)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{contracts.ExecSubjectPrefix + ">"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := EnsureExec(ctx, js, 1, time.Minute)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "subjects overlap") {
		t.Fatalf("EnsureExec: %v, want the overlap at once", err)
	}
	if _, err := ExecStream(ctx, js, 1); err == nil || !strings.Contains(err.Error(), "subjects overlap") {
		t.Fatalf("ExecStream: %v, want the overlap at once", err)
	}
	if logs.Contains("not available yet") {
		t.Errorf("a configuration error was retried:\n%s", logs.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}
