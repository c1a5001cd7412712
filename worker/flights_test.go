package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// next fetches one delivery from cons, waiting up to 10s for it.
func next(t *testing.T, cons jetstream.Consumer) jetstream.Msg {
	t.Helper()
	m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatalf("no delivery: %v", err)
	}
	return m
}

// A worker once performed the same attempt twice, milliseconds apart: its
// own pull received a redelivery while the first copy was in flight. A
// second delivery of an attempt in flight is now skipped, and the first
// one's acknowledgement settles both.
func TestASecondDeliveryOfAnAttemptInFlightIsNotPerformed(t *testing.T) {
	t.Parallel()

	t.Run("a redelivery of the same message", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.ensureStreams(t)
		rec, obs := newRecorder(), newObserver()
		rec.block = make(chan struct{})
		w, cons := e.idle(t, rec, func(c *Config) { c.AckWait, c.Observer = time.Second, obs })
		x := e.execution(t, 1, nil)
		first := next(t, cons)
		again := next(t, cons) // delivered again once the ack wait ran out
		if meta, _ := again.Metadata(); meta.NumDelivered != 2 {
			t.Fatalf("delivered %d times, want a redelivery", meta.NumDelivered)
		}

		w.hand(first, time.Now())
		<-rec.started
		w.hand(again, time.Now())
		testkit.Eventually(t, 5*time.Second, func() bool { return obs.skips(SkipDuplicate) == 1 || rec.count() > 1 }, "the second delivery was neither skipped nor performed")
		close(rec.block)
		testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result")
		// The first delivery's Ack acknowledged the stream message, although
		// it was delivered again since.
		testkit.Eventually(t, 10*time.Second, func() bool { return e.pendingExecutions(t) == 0 }, "the execution was not acknowledged")
		if ids := rec.ids(); len(ids) != 1 || ids[0] != x.OccurrenceID {
			t.Fatalf("performed %v, want %s once", ids, x.OccurrenceID)
		}
		if n := obs.skips(SkipDuplicate); n != 1 {
			t.Fatalf("%d duplicate deliveries skipped, want 1", n)
		}
	})

	t.Run("another message of the same attempt, acknowledged with it", func(t *testing.T) {
		t.Parallel()
		e := setup(t)
		e.ensureStreams(t)
		rec, obs := newRecorder(), newObserver()
		rec.block = make(chan struct{})
		w, cons := e.idle(t, rec, func(c *Config) { c.Observer = obs })
		x := e.execution(t, 1, nil)
		// The attempt published a second time, outside the duplicate window.
		data, _ := json.Marshal(x)
		msg := nats.NewMsg(contracts.ExecSubjectPrefix + testJob.Tokens())
		msg.Data = data
		if _, err := e.js.PublishMsg(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
		first, twin := next(t, cons), next(t, cons)

		w.hand(first, time.Now())
		<-rec.started
		w.hand(twin, time.Now())
		testkit.Eventually(t, 5*time.Second, func() bool { return obs.skips(SkipDuplicate) == 1 || rec.count() > 1 }, "the copy was neither skipped nor performed")
		close(rec.block)
		testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result")
		if rec.count() != 1 {
			t.Fatalf("performed %d times, want once", rec.count())
		}
		testkit.Eventually(t, 10*time.Second, func() bool { return e.pendingExecutions(t) == 0 }, "%d executions left", e.pendingExecutions(t))
		if rec.count() != 1 || len(e.results(t)) != 1 {
			t.Fatalf("performed %d times, %d results; want 1", rec.count(), len(e.results(t)))
		}
	})
}
