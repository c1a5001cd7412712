package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// Open waits for JetStream: against a server without it (a cluster not
// ready yet) it retries, logging why, and binds the bucket once a server
// with JetStream answers on the address.
func TestOpenWaitsForJetStream(t *testing.T) {
	t.Parallel()
	port := testkit.FreePort(t)
	early := testkit.NATSOn(t, t.TempDir(), port, false)
	var logs testkit.Logs
	ctx := streams.WithLogger(context.Background(), logs.Logger())
	nc, js, err := streams.Connect(ctx, early.ClientURL(), "test", logs.Logger(), streams.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	wait := testkit.InBackground(t, func() (*Store, error) { return Open(ctx, js, Config{Sealer: newSealer(t)}) })
	testkit.Eventually(t, 10*time.Second, func() bool {
		return logs.Contains("level=WARN", "not available yet", "the KV bucket "+contracts.JobsBucket)
	}, "the wait was not logged:\n%s", logs.String())
	early.Shutdown()
	early.WaitForShutdown()
	testkit.NATSOn(t, t.TempDir(), port, true)
	wait()
}

// A stream that takes the bucket's subjects is a configuration error: Open
// fails at once and says so.
func TestOpenFailsAtOnceOnAMisconfiguration(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	_, js := testkit.JetStream(t, ns)
	var logs testkit.Logs
	ctx, cancel := context.WithTimeout(streams.WithLogger(context.Background(), logs.Logger()), 20*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{fmt.Sprintf("$KV.%s.>", contracts.JobsBucket)}}); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, js, Config{Sealer: newSealer(t)})
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "KV bucket "+contracts.JobsBucket) {
		t.Fatalf("Open: %v, want a configuration error at once", err)
	}
	if logs.Contains("not available yet") {
		t.Errorf("a configuration error was retried:\n%s", logs.String())
	}
}
