package worker

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/contracts"
)

// Workers tell each other when executions they held came due and wait to
// be sent, so that every worker, not only the one holding them, keeps its
// results back meanwhile (see report): the calls due at one instant go
// first, on whichever worker they are. Each worker publishes "1" on its own
// subject under contracts.WorkersDueSubjectPrefix when that starts, again
// every peerDueRenewal while it lasts (a worker started meanwhile hears it
// too), and "0" when its last one was sent; nothing is stored. A worker
// that dies while it said "1" is forgotten after peerDueExpiry, and no
// result waits more than maxReportDelay anyway.

// peerDueRenewal is how often a worker says "1" again while executions
// due wait to be sent; a peer's "1" counts for peerDueExpiry.
const (
	peerDueRenewal = 200 * time.Millisecond
	peerDueExpiry  = 5 * peerDueRenewal
)

// peers is what the other workers said about their executions due now.
type peers struct {
	nc      *nats.Conn // nil: the worker neither listens nor tells
	self    string     // this worker's subject
	sub     *nats.Subscription
	now     func() time.Time
	mu      sync.Mutex
	open    map[string]time.Time // by peer subject: when it said "1"
	changed chan struct{}        // closed, and replaced, at each "0"
	due     bool                 // what this worker said last
	renewal *time.Timer          // says "1" again while due
}

// listen subscribes to the other workers' announcements and lets this
// worker make its own, as name.
func (p *peers) listen(nc *nats.Conn, name string, now func() time.Time) error {
	p.mu.Lock()
	p.nc, p.self, p.now = nc, contracts.WorkersDueSubjectPrefix+contracts.Token(name), now
	p.open, p.changed = map[string]time.Time{}, make(chan struct{})
	p.mu.Unlock()
	sub, err := nc.Subscribe(contracts.WorkersDueSubjectPrefix+"*", p.heard)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.sub = sub
	p.mu.Unlock()
	return nil
}

// heard notes one announcement.
func (p *peers) heard(m *nats.Msg) {
	if m.Subject == p.self {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if string(m.Data) == "1" {
		p.open[m.Subject] = p.now()
		return
	}
	if _, ok := p.open[m.Subject]; ok {
		delete(p.open, m.Subject)
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// announce tells the other workers whether executions this worker held
// came due and wait to be sent.
func (p *peers) announce(due bool) {
	if p.nc == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.due = due
	if !due {
		if p.renewal != nil {
			p.renewal.Stop()
		}
		_ = p.nc.Publish(p.self, []byte("0"))
		return
	}
	_ = p.nc.Publish(p.self, []byte("1"))
	if p.renewal == nil {
		p.renewal = time.AfterFunc(peerDueRenewal, p.renew)
	} else {
		p.renewal.Reset(peerDueRenewal)
	}
}

// renew says "1" again while executions due wait to be sent.
func (p *peers) renew() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.due {
		return
	}
	_ = p.nc.Publish(p.self, []byte("1"))
	p.renewal.Reset(peerDueRenewal)
}

// waiting returns a channel closed when a peer says its executions due
// were sent, or nil when no peer has executions due waiting.
func (p *peers) waiting() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.open) == 0 {
		return nil
	}
	now := p.now()
	for subject, since := range p.open {
		if now.Sub(since) >= peerDueExpiry {
			delete(p.open, subject)
		}
	}
	if len(p.open) == 0 {
		return nil
	}
	return p.changed
}

// stop ends the subscription and the renewals; what it said last stands
// until it expires.
func (p *peers) stop() {
	p.mu.Lock()
	sub := p.sub
	p.due = false
	if p.renewal != nil {
		p.renewal.Stop()
	}
	p.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
}
