package timer

import (
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

func TestLock(t *testing.T) {
	t.Parallel()

	t.Run("one owner holds a lease until it unlocks", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		lock := func(owner string) bool {
			t.Helper()
			ok, err := ix.TryLock(b.ctx, "rebuild", owner, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !lock("a") {
			t.Fatal("a did not get a free lease")
		}
		if lock("b") {
			t.Fatal("b took a's lease")
		}
		if !lock("a") {
			t.Fatal("a could not renew its lease")
		}
		if err := ix.Unlock(b.ctx, "rebuild", "b"); err != nil {
			t.Fatal(err)
		}
		if lock("b") {
			t.Fatal("b's unlock released a's lease")
		}
		if err := ix.Unlock(b.ctx, "rebuild", "a"); err != nil {
			t.Fatal(err)
		}
		if !lock("b") {
			t.Fatal("b did not get the lease a released")
		}
		if ok, err := ix.TryLock(b.ctx, "retention", "a", time.Minute); err != nil || !ok {
			t.Errorf("a lease of another name: %v, %v", ok, err)
		}
	})

	t.Run("a lease expires after its time to live", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		const ttl = 100 * time.Millisecond
		if ok, err := ix.TryLock(b.ctx, "rebuild", "a", ttl); err != nil || !ok {
			t.Fatalf("TryLock = %v, %v", ok, err)
		}
		if b.mr != nil {
			b.mr.FastForward(ttl) // miniredis's TTLs do not count down by themselves
		}
		testkit.Eventually(t, 5*time.Second, func() bool {
			ok, err := ix.TryLock(b.ctx, "rebuild", "b", time.Minute)
			return err == nil && ok
		}, "b never got the expired lease")
	})

	t.Run("odd arguments are rejected", func(t *testing.T) {
		t.Parallel()
		ix, b := setup(t, Config{})
		if _, err := ix.TryLock(b.ctx, "", "a", time.Minute); err == nil {
			t.Error("an empty name was accepted")
		}
		if _, err := ix.TryLock(b.ctx, "x", "", time.Minute); err == nil {
			t.Error("an empty owner was accepted")
		}
		if _, err := ix.TryLock(b.ctx, "x", "a", time.Microsecond); err == nil {
			t.Error("a time to live under a millisecond was accepted")
		}
		if err := ix.Unlock(b.ctx, "x", ""); err == nil {
			t.Error("an empty owner was accepted")
		}
	})
}
