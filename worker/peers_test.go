package worker

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/contracts"
)

// What the other workers say is kept until they say "0", or until their
// "1" is older than peerDueExpiry (a worker that died while it said "1");
// a worker ignores its own word.
func TestAWorkerHearsItsPeersExecutionsDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	p := &peers{self: contracts.WorkersDueSubjectPrefix + "me", now: func() time.Time { return now },
		open: map[string]time.Time{}, changed: make(chan struct{})}
	say := func(who, what string) {
		p.heard(&nats.Msg{Subject: contracts.WorkersDueSubjectPrefix + who, Data: []byte(what)})
	}

	say("me", "1")
	if p.waiting() != nil {
		t.Fatal("a worker waits for its own word")
	}
	say("a", "1")
	say("b", "1")
	wait := p.waiting()
	if wait == nil {
		t.Fatal("no wait while two peers have executions due")
	}
	say("a", "0")
	select {
	case <-wait:
	default:
		t.Fatal("a peer's \"0\" did not end the wait")
	}
	if p.waiting() == nil {
		t.Fatal("no wait while a peer still has executions due")
	}
	now = now.Add(peerDueExpiry - time.Millisecond)
	say("b", "1") // renewed
	now = now.Add(peerDueExpiry - time.Millisecond)
	if p.waiting() == nil {
		t.Fatal("a renewed \"1\" expired")
	}
	now = now.Add(time.Millisecond)
	if p.waiting() != nil {
		t.Fatal("a peer silent for peerDueExpiry is still waited for")
	}
	say("c", "0") // a "0" from a peer not waited for changes nothing
	if p.waiting() != nil {
		t.Fatal("a \"0\" made a wait")
	}
}
