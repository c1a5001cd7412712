package timer

import (
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

func TestRunningMarks(t *testing.T) {
	t.Parallel()
	first := Occurrence{Number: 1, Expected: t0}
	second := Occurrence{Number: 2, Expected: t0.Add(time.Minute)}
	third := Occurrence{Number: 3, Expected: t0.Add(2 * time.Minute)}
	buffer := func(o Occurrence, due time.Time) *Entry {
		e := entry("a", "b", due)
		e.Expected, e.Occurrence = o.Expected, o.Number
		return &e
	}

	t.Run("an occurrence runs when none is in flight, and again when it is its own", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		for range 2 {
			if a, err := ix.Admit(t.Context(), keyOf("a"), first, t0, time.Hour, nil); err != nil || a != Run {
				t.Fatalf("admitted %v, %v", a, err)
			}
		}
		got, expiry, ok, err := ix.Running(t.Context(), keyOf("a"), t0)
		if err != nil || !ok || got.Number != 1 || !got.Expected.Equal(t0) || !expiry.Equal(t0.Add(time.Hour)) {
			t.Fatalf("running %+v until %v (%v, %v)", got, expiry, ok, err)
		}
	})

	t.Run("a job removed leaves no mark", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		if _, err := ix.Admit(t.Context(), keyOf("a"), first, t0, time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		if err := ix.RemoveJob(t.Context(), keyOf("a")); err != nil {
			t.Fatal(err)
		}
		if _, _, ok, err := ix.Running(t.Context(), keyOf("a"), t0); err != nil || ok {
			t.Fatalf("a removed job is still running (%v, %v)", ok, err)
		}
		if a, err := ix.Admit(t.Context(), keyOf("a"), second, t0, time.Hour, nil); err != nil || a != Run {
			t.Fatalf("a job created again under the name: %v, %v", a, err)
		}
	})

	t.Run("another is skipped, or buffered once", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		if _, err := ix.Admit(t.Context(), keyOf("a"), first, t0, time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		if a, err := ix.Admit(t.Context(), keyOf("a"), second, t0.Add(time.Minute), time.Hour, nil); err != nil || a != Skipped {
			t.Fatalf("without a buffer: %v, %v", a, err)
		}
		if a, err := ix.Admit(t.Context(), keyOf("a"), second, t0.Add(time.Minute), time.Hour, buffer(second, t0.Add(time.Hour))); err != nil || a != Buffered {
			t.Fatalf("with a buffer: %v, %v", a, err)
		}
		if a, err := ix.Admit(t.Context(), keyOf("a"), third, t0.Add(2*time.Minute), time.Hour, buffer(third, t0.Add(time.Hour))); err != nil || a != Skipped {
			t.Fatalf("with one buffered already: %v, %v", a, err)
		}
		got, ok, err := ix.Get(t.Context(), keyOf("a"), "b")
		if err != nil || !ok || got.Occurrence != 2 {
			t.Fatalf("buffered %+v (%v, %v)", got, ok, err)
		}
	})

	t.Run("an expired mark counts as none", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		if _, err := ix.Admit(t.Context(), keyOf("a"), first, t0, time.Minute, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, ok, _ := ix.Running(t.Context(), keyOf("a"), t0.Add(time.Minute)); ok {
			t.Fatal("the mark is running at its expiry")
		}
		if a, err := ix.Admit(t.Context(), keyOf("a"), second, t0.Add(time.Minute), time.Minute, nil); err != nil || a != Run {
			t.Fatalf("admitted %v, %v", a, err)
		}
	})

	t.Run("the end of the occurrence in flight frees the job and makes the buffered one due, its expected time kept", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		if _, err := ix.Admit(t.Context(), keyOf("a"), first, t0, time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.Admit(t.Context(), keyOf("a"), second, t0.Add(time.Minute), time.Hour, buffer(second, t0.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		// Another occurrence's end leaves the mark.
		if due, err := ix.Over(t.Context(), keyOf("a"), third, t0.Add(90*time.Second), "b"); err != nil || due {
			t.Fatalf("over %v, %v", due, err)
		}
		now := t0.Add(2 * time.Minute)
		if due, err := ix.Over(t.Context(), keyOf("a"), first, now, "b"); err != nil || !due {
			t.Fatalf("over %v, %v", due, err)
		}
		if _, _, ok, _ := ix.Running(t.Context(), keyOf("a"), now); ok {
			t.Fatal("still running")
		}
		got, ok, err := ix.Get(t.Context(), keyOf("a"), "b")
		if err != nil || !ok || !got.Due.Equal(now) || !got.Expected.Equal(second.Expected) || got.Occurrence != 2 || got.Action != contracts.MainAction {
			t.Fatalf("buffered %+v (%v, %v)", got, ok, err)
		}
		// Told again, nothing changes.
		if due, err := ix.Over(t.Context(), keyOf("a"), first, now.Add(time.Second), "b"); err != nil || due {
			t.Fatalf("over again %v, %v", due, err)
		}
	})

	t.Run("a buffered occurrence that starts takes the mark", func(t *testing.T) {
		t.Parallel()
		ix, _ := setup(t, Config{})
		if _, err := ix.Admit(t.Context(), keyOf("a"), first, t0, time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		if err := ix.Hold(t.Context(), keyOf("a"), second, t0.Add(time.Minute), time.Hour); err != nil {
			t.Fatal(err)
		}
		if got, _, ok, err := ix.Running(t.Context(), keyOf("a"), t0.Add(time.Minute)); err != nil || !ok || got.Number != 2 {
			t.Fatalf("running %+v (%v, %v)", got, ok, err)
		}
	})
}

func TestConsecutiveFaults(t *testing.T) {
	t.Parallel()
	ix, b := setup(t, Config{})
	record := func(n int, faulted bool, status string) {
		t.Helper()
		r := Record{JobKey: keyOf("a"), AttemptID: attemptID(n), Executions: 1, Started: t0.Add(time.Duration(n) * time.Minute), Status: status}
		if faulted {
			r.Failures, r.Faulted = 1, 1
		}
		if _, err := ix.Record(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	record(1, true, contracts.LastFaulted)
	record(2, true, contracts.LastFaulted)
	if got, _ := mustStatus(t, ix, keyOf("a")); got.ConsecutiveFaults != 2 {
		t.Fatalf("after two faults: %d", got.ConsecutiveFaults)
	}
	record(3, false, contracts.LastFailed) // a failure with a retry to come changes nothing
	if got, _ := mustStatus(t, ix, keyOf("a")); got.ConsecutiveFaults != 2 {
		t.Fatalf("after a failure: %d", got.ConsecutiveFaults)
	}
	record(4, false, contracts.LastSucceeded)
	if got, _ := mustStatus(t, ix, keyOf("a")); got.ConsecutiveFaults != 0 {
		t.Fatalf("after a success: %d", got.ConsecutiveFaults)
	}
	record(5, true, contracts.LastFaulted)
	if err := ix.ResetFaults(t.Context(), keyOf("a")); err != nil {
		t.Fatal(err)
	}
	if got, _ := mustStatus(t, ix, keyOf("a")); got.ConsecutiveFaults != 0 || got.Faulted != 3 {
		t.Fatalf("after a reset: %+v", got)
	}

	// A status stored before consecutive faults were kept reads as none,
	// and counts from there.
	k := ix.keysOf(keyOf("old"))
	if err := b.rdb.HSet(t.Context(), k[keyStatus], jobID(keyOf("old")), "1|1000|2|1|1|1000||Faulted|2000").Err(); err != nil {
		t.Fatal(err)
	}
	if got, ok := mustStatus(t, ix, keyOf("old")); !ok || got.ConsecutiveFaults != 0 || got.Faulted != 1 {
		t.Fatalf("old status %+v (%v)", got, ok)
	}
	if _, err := ix.Record(t.Context(), Record{JobKey: keyOf("old"), AttemptID: attemptID(9), Executions: 1, Failures: 1, Faulted: 1, Status: contracts.LastFaulted}); err != nil {
		t.Fatal(err)
	}
	if got, _ := mustStatus(t, ix, keyOf("old")); got.ConsecutiveFaults != 1 || got.Faulted != 2 {
		t.Fatalf("old status after a fault %+v", got)
	}
}
