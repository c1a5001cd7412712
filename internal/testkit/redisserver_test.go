//go:build unix

package testkit

import (
	"context"
	"testing"
	"time"
)

// The test's redis-server can be flushed, paused, and killed: it comes
// back empty on the same port.
func TestARedisServerOfTheTestsOwn(t *testing.T) {
	FaultsMode(t)
	t.Parallel()
	r := RedisServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := func() int64 {
		t.Helper()
		n, err := r.DBSize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	set := func() {
		t.Helper()
		if err := r.client.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set()
	if err := r.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := keys(); n != 0 {
		t.Fatalf("%d keys after FLUSHALL", n)
	}

	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	err := r.WaitUp(short)
	stop()
	if err == nil {
		t.Fatal("a paused server answered")
	}
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}

	set()
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	if r.Running() {
		t.Fatal("running after Kill")
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	if n := keys(); n != 0 {
		t.Fatalf("%d keys after a restart", n)
	}
	if exits := r.SelfExits(); len(exits) != 0 {
		t.Errorf("exits not asked for: %v", exits)
	}
}
