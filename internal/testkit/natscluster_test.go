//go:build unix

package testkit

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveNATSServerBinary()
	os.Exit(code)
}

// The lead of a stream can be moved to a chosen node; that node, killed
// with -9, hands the lead to another; started again on its ports and
// store, it comes back into the cluster and its replica catches up.
func TestANATSClusterSurvivesTheLossOfItsLeader(t *testing.T) {
	FaultsMode(t)
	t.Parallel()
	c := NATSCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, js, err := c.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	leader, err := c.LeaderOf(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	// The test's own connection is on one node; the lead moves to another.
	for _, n := range c.Nodes {
		if clients, err := n.Clients(ctx, "test"); err != nil {
			t.Fatal(err)
		} else if clients == 0 && n != leader {
			if err := c.MoveLeader(ctx, "T", n); err != nil {
				t.Fatal(err)
			}
			leader = n
			break
		}
	}
	if clients, _ := leader.Clients(ctx, "test"); clients != 0 {
		t.Fatalf("%s, which leads T, holds the test's connection", leader.ServerName)
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, func() bool {
		next, err := c.LeaderOf(ctx, "T")
		return err == nil && next != leader
	}, "no other node took the lead of T from %s", leader.ServerName)
	Eventually(t, 30*time.Second, func() bool {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.Publish(pctx, "t.2", []byte("two"))
		return err == nil
	}, "publishing with a node down failed")

	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, func() bool { return c.StreamCurrent(ctx, "T") == nil }, "a replica of T is behind")
	info, err := c.StreamInfo(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 2 {
		t.Errorf("last sequence %d, want 2", info.State.LastSeq)
	}
}
