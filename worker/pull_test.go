package worker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// A worker paused for longer than its ack wait (SIGSTOP) used to perform,
// when it resumed, the executions it had pulled before the pause, which
// JetStream had given to another worker meanwhile. It now skips a delivery
// whose ack wait may have run out, without handing it back, and the other
// worker performs each execution once.
func TestAWorkerSkipsDeliveriesWhoseAckWaitMayHaveRunOut(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	const ackWait = 2 * time.Second
	// The paused worker's clock reads an ack wait later at every reading,
	// as if the process stopped for that long between any two steps.
	var paused atomic.Int64
	pausedClock := func() time.Time { return time.Now().Add(time.Duration(paused.Add(int64(ackWait)))) }
	late, obs := newRecorder(), newObserver()
	w, _ := e.worker(t, late, func(c *Config) { c.AckWait, c.Observer, c.clock = ackWait, obs, pausedClock })
	const n = 3
	for i := range n {
		e.execution(t, i+1, nil)
	}
	testkit.Eventually(t, 10*time.Second, func() bool { return obs.skips(SkipStale)+late.count() >= n },
		"%d stale deliveries skipped and %d performed, of %d", obs.skips(SkipStale), late.count(), n)
	skippedAt := time.Now()
	w.Stop(context.Background())
	if late.count() != 0 {
		t.Fatalf("the paused worker performed %d stale deliveries", late.count())
	}

	rec := newRecorder()
	e.worker(t, rec, func(c *Config) { c.AckWait = ackWait })
	testkit.Eventually(t, 20*time.Second, func() bool { return len(e.results(t)) == n }, "%d results of %d", len(e.results(t)), n)
	testkit.Eventually(t, 10*time.Second, func() bool { return e.pendingExecutions(t) == 0 }, "executions left unacknowledged")
	seen := map[string]int{}
	for _, id := range rec.ids() {
		seen[id]++
	}
	if len(seen) != n || rec.count() != n {
		t.Fatalf("%d executions performed %d times by the other worker, want %d once each", len(seen), rec.count(), n)
	}
	if got := obs.skips(SkipStale); got != n {
		t.Errorf("%d stale deliveries skipped, want %d", got, n)
	}
	// Not handed back: JetStream delivered them again only when their ack
	// wait ran out, not as soon as the other worker asked.
	if waited := rec.first().Sub(skippedAt); waited < ackWait/2 {
		t.Errorf("the skipped executions were delivered again %s after the skip: they were handed back", waited)
	}
}

func TestTheStaleGuardLeavesMostOfTheAckWait(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ackWait, wait, guard, hb time.Duration }{
		{time.Second, 200 * time.Millisecond, 200 * time.Millisecond, 0},
		{10 * time.Second, 2 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{90 * time.Second, 5 * time.Second, 5 * time.Second, 1250 * time.Millisecond},
	} {
		wait, guard, hb := pullWait(c.ackWait), staleGuard(c.ackWait), pullHeartbeat(pullWait(c.ackWait))
		if wait != c.wait || guard != c.guard || hb != c.hb {
			t.Errorf("AckWait %s: pull wait %s, guard %s, heartbeat %s; want %s, %s, %s", c.ackWait, wait, guard, hb, c.wait, c.guard, c.hb)
		}
		// A message delivered at the very end of a pull request still has
		// more than half its ack wait to be started in.
		if left := c.ackWait - guard - wait; left < c.ackWait/2 {
			t.Errorf("AckWait %s: %s left to start a delivery", c.ackWait, left)
		}
	}
}

// A pull request ends on JetStream's statuses: expired or nothing to
// deliver is not a fault; a leader change, a deleted consumer or no
// JetStream at all is one, reported; an idle heartbeat keeps it open.
func TestAPullRequestEndsOnJetStreamsStatuses(t *testing.T) {
	t.Parallel()
	status := func(code, description string) *nats.Msg {
		m := nats.NewMsg("_INBOX.x")
		m.Header.Set("Status", code)
		m.Header.Set("Description", description)
		return m
	}
	for _, c := range []struct {
		name                 string
		msg                  *nats.Msg
		execution, done, err bool
	}{
		{"an execution", &nats.Msg{Subject: "EXEC.x", Data: []byte("{}")}, true, false, false},
		{"an idle heartbeat", status("100", "Idle Heartbeat"), false, false, false},
		{"nothing to deliver", status("404", "No Messages"), false, true, false},
		{"expired", status("408", "Request Timeout"), false, true, false},
		{"a leader change", status("409", "Leadership Change"), false, true, true},
		{"a deleted consumer", status("409", "Consumer Deleted"), false, true, true},
		{"no JetStream", status("503", ""), false, true, true},
	} {
		execution, done, err := pullStatus(c.msg)
		if execution != c.execution || done != c.done || (err != nil) != c.err {
			t.Errorf("%s: execution %t, done %t, error %v; want %t, %t, an error %t", c.name, execution, done, err, c.execution, c.done, c.err)
		}
	}
}

// A delivery received on the worker's own pull request answers JetStream
// on its ack subject with the bodies JetStream reads.
func TestADeliveryAnswersOnItsAckSubject(t *testing.T) {
	t.Parallel()
	e := setup(t)
	nc, _ := testkit.JetStream(t, e.ns)
	acks, err := nc.SubscribeSync("$JS.ACK.EXEC.workers.>")
	if err != nil {
		t.Fatal(err)
	}
	m := pulledMsg{nc: nc, msg: &nats.Msg{Reply: "$JS.ACK.EXEC.workers.2.7.9.1764182400000000000.0", Sub: acks}}
	for _, c := range []struct {
		send func() error
		want string
	}{
		{m.Ack, "+ACK"},
		{m.Nak, "-NAK"},
		{func() error { return m.NakWithDelay(time.Second) }, `-NAK {"delay": 1000000000}`},
		{m.InProgress, "+WPI"},
		{func() error { return m.TermWithReason("invalid execution") }, "+TERM invalid execution"},
	} {
		if err := c.send(); err != nil {
			t.Fatal(err)
		}
		got, err := acks.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("nothing on the ack subject for %q: %v", c.want, err)
		}
		if string(got.Data) != c.want {
			t.Errorf("sent %q, want %q", got.Data, c.want)
		}
	}
	meta, err := m.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	if meta.NumDelivered != 2 || meta.Sequence.Stream != 7 || meta.Sequence.Consumer != 9 || meta.Stream != "EXEC" {
		t.Errorf("metadata %+v, want delivery 2 of stream sequence 7, consumer sequence 9, on EXEC", meta)
	}
	if err := (pulledMsg{nc: nc, msg: &nats.Msg{}}).Ack(); err == nil {
		t.Error("a message without an ack subject was acknowledged")
	}
}

// The pull requests go to the consumer's API subject, under the JetStream
// domain when there is one.
func TestPullRequestsGoToTheConsumersNextSubject(t *testing.T) {
	t.Parallel()
	e := setup(t)
	nc, _ := testkit.JetStream(t, e.ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nextSubject(js, "EXEC", "workers"), "$JS.API.CONSUMER.MSG.NEXT.EXEC.workers"; got != want {
		t.Errorf("subject %q, want %q", got, want)
	}
	hub, err := jetstream.NewWithDomain(nc, "hub")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nextSubject(hub, "EXEC", "workers"), "$JS.hub.API.CONSUMER.MSG.NEXT.EXEC.workers"; got != want {
		t.Errorf("with a domain: subject %q, want %q", got, want)
	}
}
