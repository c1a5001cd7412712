package dispatch

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// overlapJob is a job due each minute from t0+1m whose attempts fail at
// once (no retry), with the overlap policy given ("" for none).
func overlapJob(policy contracts.OverlapPolicy) string {
	field := ""
	if policy != "" {
		field = fmt.Sprintf(`, "overlap": %q`, policy)
	}
	return fmt.Sprintf(`{"startTime": %q, "action": {"type": "Http", "request": {"uri": "https://example.com/hook", "method": "POST"},
		"retryPolicy": {"retryType": "None"}}, "recurrence": {"frequency": "Minute"}%s}`, t0.Add(time.Minute).Format(time.RFC3339), field)
}

// skips records the occurrences skipped.
type skips struct {
	mu  sync.Mutex
	got []events.Skipped
}

func (s *skips) Dispatched(events.Dispatched) {}
func (s *skips) Skipped(k events.Skipped) {
	s.mu.Lock()
	s.got = append(s.got, k)
	s.mu.Unlock()
}
func (s *skips) list() []events.Skipped {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]events.Skipped(nil), s.got...)
}

// due sets the clock to at and waits until the job's schedule has moved
// past the occurrence due then: it was dispatched, buffered or skipped.
func (e *env) due(t *testing.T, d *Engine, ix *timer.Index, j store.Job, at time.Time) {
	t.Helper()
	e.clock.Set(at)
	d.Wake()
	testkit.Eventually(t, 30*time.Second, func() bool {
		next, ok, err := ix.Get(t.Context(), j.Ref.KVKey(), scheduleSlot)
		return err == nil && ok && next.Expected.After(at)
	}, "the occurrence due at %v was not claimed", at)
}

// over tells the timer that the occurrence due at expected is over, as the
// feedback loop does when its result comes.
func over(t *testing.T, ix *timer.Index, j store.Job, occurrence int64, expected, now time.Time) {
	t.Helper()
	if _, err := ix.Over(t.Context(), j.Ref.KVKey(), timer.Occurrence{Number: occurrence, Expected: expected}, now, BufferSlot); err != nil {
		t.Fatal(err)
	}
}

func TestOverlapPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy contracts.OverlapPolicy
		// dispatched is how many executions the second occurrence, due
		// while the first is in flight, leaves; skipped whether it counts
		// as skipped.
		dispatched int
		skipped    bool
		buffered   bool
	}{
		{"", 2, false, false},
		{contracts.OverlapAllow, 2, false, false},
		{contracts.OverlapSkip, 1, true, false},
		{contracts.OverlapBufferOne, 1, false, true},
	}
	for _, tt := range tests {
		name := string(tt.policy)
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			obs := &skips{}
			d := e.planner(t, func(c *Config) { c.Observer = obs })
			ix := e.index(t)
			j := e.addJob(t, "j", overlapJob(tt.policy))

			e.due(t, d, ix, j, t0.Add(time.Minute))
			e.waitCount(t, 1)
			e.due(t, d, ix, j, t0.Add(2*time.Minute)) // the first is still in flight
			if tt.dispatched == 2 {
				e.waitCount(t, 2)
			} else if got := e.count(t); got != tt.dispatched {
				t.Fatalf("%d executions, want %d", got, tt.dispatched)
			}
			if got := len(obs.list()); (got == 1) != tt.skipped {
				t.Errorf("%d skipped, want skipped %v: %+v", got, tt.skipped, obs.list())
			}
			if tt.skipped && obs.list()[0].Reason != events.SkipOverlap {
				t.Errorf("skipped for %q", obs.list()[0].Reason)
			}
			_, buffered, err := ix.Get(t.Context(), j.Ref.KVKey(), BufferSlot)
			if err != nil || buffered != tt.buffered {
				t.Fatalf("buffered %v (%v), want %v", buffered, err, tt.buffered)
			}
			if !tt.buffered {
				return
			}

			// A third occurrence while one waits is skipped.
			e.due(t, d, ix, j, t0.Add(3*time.Minute))
			if got := e.count(t); got != 1 {
				t.Fatalf("%d executions, want 1", got)
			}
			if got := obs.list(); len(got) != 1 || got[0].Occurrence != 3 || got[0].Reason != events.SkipOverlap {
				t.Fatalf("skipped %+v, want occurrence 3 for overlap", got)
			}

			// The first is over: the one waiting runs now, with its own
			// expected time, and is in flight in its turn.
			e.clock.Set(t0.Add(3*time.Minute + 10*time.Second))
			over(t, ix, j, 1, t0.Add(time.Minute), e.clock.Now())
			d.Wake()
			e.waitCount(t, 2)
			x, _ := e.lastExecution(t)
			if x.Occurrence != 2 || !x.ExpectedTime.Equal(t0.Add(2*time.Minute)) || x.Attempt != 0 || x.ActionName != contracts.MainAction {
				t.Fatalf("the buffered execution %+v", x)
			}
			if id, _ := AttemptIdentity(j.Ref, 2, t0.Add(2*time.Minute), contracts.MainAction, 0); x.OccurrenceID != id {
				t.Errorf("occurrence id %s, want %s", x.OccurrenceID, id)
			}
			testkit.Eventually(t, 10*time.Second, func() bool {
				_, ok, err := ix.Get(t.Context(), j.Ref.KVKey(), BufferSlot)
				return err == nil && !ok
			}, "the buffer slot was not emptied")
			running, _, ok, err := ix.Running(t.Context(), j.Ref.KVKey(), e.clock.Now())
			if err != nil || !ok || running.Number != 2 {
				t.Fatalf("running %+v %v %v, want occurrence 2", running, ok, err)
			}
		})
	}
}

// A result that never comes blocks a job with an overlap policy only until
// its in-flight mark expires: every attempt's timeout and the retry
// intervals, and a margin.
func TestALostResultBlocksAJobUntilItsMarkExpires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	d := e.planner(t, func(c *Config) { c.ActionTimeout = 10 * time.Second })
	ix := e.index(t)
	j := e.addJob(t, "j", overlapJob(contracts.OverlapSkip))
	ttl := InFlightTTL(j.Properties.Action, 10*time.Second)
	if ttl != 10*time.Second+inFlightMargin {
		t.Fatalf("ttl %v, want the timeout and the margin", ttl)
	}

	e.due(t, d, ix, j, t0.Add(time.Minute))
	e.waitCount(t, 1)
	e.due(t, d, ix, j, t0.Add(2*time.Minute))
	if got := e.count(t); got != 1 {
		t.Fatalf("%d executions while the first is in flight, want 1", got)
	}
	// Past the mark's expiry the next occurrence runs (late, once).
	e.due(t, d, ix, j, t0.Add(time.Minute).Add(ttl).Add(time.Second))
	e.waitCount(t, 2)
}

func TestInFlightTTLCoversEveryAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy *contracts.RetryPolicy
		want   time.Duration
	}{
		{"no retry", &contracts.RetryPolicy{RetryType: contracts.RetryNone}, time.Minute + inFlightMargin},
		{"two retries a minute apart", &contracts.RetryPolicy{RetryType: contracts.RetryFixed, RetryInterval: "PT1M", RetryCount: ptr(2)},
			3*time.Minute + 2*time.Minute + inFlightMargin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := InFlightTTL(&contracts.JobAction{RetryPolicy: tt.policy}, time.Minute); got != tt.want {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The occurrence waiting in the buffer is in Redis, not in a planner: one
// that starts after the planner that buffered it stopped runs it once the
// occurrence before it is over.
func TestABufferedOccurrenceRunsAfterAPlannerRestart(t *testing.T) {
	t.Parallel()
	e := setup(t)
	first := e.planner(t, nil)
	ix := e.index(t)
	j := e.addJob(t, "j", overlapJob(contracts.OverlapBufferOne))
	e.due(t, first, ix, j, t0.Add(time.Minute))
	e.waitCount(t, 1)
	e.due(t, first, ix, j, t0.Add(2*time.Minute))
	if _, ok, err := ix.Get(t.Context(), j.Ref.KVKey(), BufferSlot); err != nil || !ok {
		t.Fatalf("nothing buffered (%v)", err)
	}
	// Kept in the follow-ups bucket too, for a Redis that loses it.
	bucket, err := store.OpenFollowUps(t.Context(), e.js, 1)
	if err != nil {
		t.Fatal(err)
	}
	if kept, _, ok, err := bucket.Get(t.Context(), j.Ref.KVKey(), BufferSlot); err != nil || !ok || kept.Occurrence != 2 {
		t.Fatalf("bucket holds %+v (%v, %v)", kept, ok, err)
	}
	first.Stop()

	second := e.planner(t, nil)
	over(t, ix, j, 1, t0.Add(time.Minute), e.clock.Now())
	second.Wake()
	e.waitCount(t, 2)
	if x, _ := e.lastExecution(t); x.Occurrence != 2 || !x.ExpectedTime.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("execution %+v, want the buffered occurrence 2", x)
	}
	if _, _, ok, err := bucket.Get(t.Context(), j.Ref.KVKey(), BufferSlot); err != nil || ok {
		t.Fatalf("the bucket still holds the buffered occurrence (%v)", err)
	}
}

// A Redis that loses its data loses the running mark: no job is left
// stuck, at worst one occurrence overlaps; the occurrence buffered is
// restored from the follow-ups bucket and runs by its wait's bound.
func TestAFlushedRedisLeavesNoJobStuck(t *testing.T) {
	t.Parallel()
	e := setup(t)
	d := e.planner(t, func(c *Config) { c.Lease = time.Second; c.ActionTimeout = 10 * time.Second })
	ix := e.index(t)
	j := e.addJob(t, "j", overlapJob(contracts.OverlapBufferOne))
	e.due(t, d, ix, j, t0.Add(time.Minute))
	e.waitCount(t, 1)
	e.due(t, d, ix, j, t0.Add(2*time.Minute))
	buffered, ok, err := ix.Get(t.Context(), j.Ref.KVKey(), BufferSlot)
	if err != nil || !ok {
		t.Fatalf("nothing buffered (%v)", err)
	}

	testkit.FlushPrefix(e.rdb, e.prefix)
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, ok, err := ix.Get(t.Context(), j.Ref.KVKey(), BufferSlot)
		return err == nil && ok
	}, "the buffered occurrence was not restored")
	// By then the schedule's next occurrence, no longer held back by a
	// mark, runs too: the one overlap a lost mark allows.
	e.clock.Set(buffered.Due)
	d.Wake()
	testkit.Eventually(t, 30*time.Second, func() bool {
		for _, x := range e.executions(t) {
			if x.Occurrence == 2 && x.ExpectedTime.Equal(t0.Add(2*time.Minute)) {
				return true
			}
		}
		return false
	}, "the buffered occurrence did not run")
}
