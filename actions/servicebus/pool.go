package servicebus

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
)

// closeTimeout bounds closing one client or sender in the background.
const closeTimeout = 10 * time.Second

// errPoolClosed is what an attempt gets after Close.
var errPoolClosed = errors.New("the Service Bus sender is closed")

// damage is what a failed send says about the sender and client it used.
type damage int

const (
	// intact: the failure was the message's or the caller's; keep both.
	intact damage = iota
	// senderBroken: the entity refused the link (a refused key, a missing
	// or disabled entity); close the sender, keep the connection.
	senderBroken
	// clientBroken: the connection is lost or in doubt; close the client
	// and every sender on it.
	clientBroken
)

// clientKey identifies a client: a hash of its endpoint, key name and key,
// so that the pool holds no key in its maps.
type clientKey [sha256.Size]byte

func newClientKey(endpoint, keyName, key string) clientKey {
	h := sha256.New()
	for _, s := range []string{endpoint, keyName, key} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return clientKey(h.Sum(nil))
}

// senderKey identifies an entity sender: its client and queue or topic.
type senderKey struct {
	client clientKey
	entity string
}

// pooledClient is a client (one AMQP connection) and the senders made
// from it.
type pooledClient struct {
	key      clientKey
	endpoint string
	client   *azservicebus.Client
	live     map[string]*pooledSender // by entity; the evicted ones are not here
	inUse    int                      // attempts under way over any of its senders
	evicted  bool                     // no new attempt gets it
	closed   bool
}

// pooledSender is an entity sender.
type pooledSender struct {
	key     senderKey
	client  *pooledClient
	sender  *azservicebus.Sender
	elem    *list.Element // in pool.lru while not evicted
	inUse   int
	evicted bool
	closed  bool
}

// pool keeps the clients and entity senders a Sender reuses. At most
// maxSenders senders are live; the least recently used one is evicted
// first, and a client is evicted with its last sender. An evicted sender
// or client is closed once no attempt is using it.
type pool struct {
	newClient  func(connectionString string) (*azservicebus.Client, error)
	maxSenders int
	logger     *slog.Logger

	mu      sync.Mutex
	closed  bool
	clients map[clientKey]*pooledClient // the live ones
	senders map[senderKey]*pooledSender
	lru     *list.List                 // of *pooledSender, the most recently used first
	open    map[*pooledClient]struct{} // live or evicted, not yet closed

	closing sync.WaitGroup // closes under way in the background
}

func newPool(maxSenders int, logger *slog.Logger, newClient func(string) (*azservicebus.Client, error)) *pool {
	return &pool{
		newClient:  newClient,
		maxSenders: maxSenders,
		logger:     logger,
		clients:    map[clientKey]*pooledClient{},
		senders:    map[senderKey]*pooledSender{},
		lru:        list.New(),
		open:       map[*pooledClient]struct{}{},
	}
}

// acquire returns the sender to entity of the client for endpoint, keyName
// and key, making them as needed (neither connects before its first send).
// The caller must release it.
func (p *pool) acquire(endpoint, keyName, key, connectionString, entity string) (*pooledSender, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	ck := newClientKey(endpoint, keyName, key)
	if s, ok := p.senders[senderKey{ck, entity}]; ok {
		p.lru.MoveToFront(s.elem)
		s.inUse++
		s.client.inUse++
		return s, nil
	}
	c, ok := p.clients[ck]
	if !ok {
		client, err := p.newClient(connectionString)
		if err != nil {
			return nil, err
		}
		c = &pooledClient{key: ck, endpoint: endpoint, client: client, live: map[string]*pooledSender{}}
		p.clients[ck] = c
		p.open[c] = struct{}{}
	}
	sender, err := c.client.NewSender(entity, nil)
	if err != nil {
		if len(c.live) == 0 {
			p.evictClientLocked(c)
			p.reapClientLocked(c)
		}
		return nil, err
	}
	s := &pooledSender{key: senderKey{ck, entity}, client: c, sender: sender, inUse: 1}
	s.elem = p.lru.PushFront(s)
	p.senders[s.key] = s
	c.live[entity] = s
	c.inUse++
	for p.lru.Len() > p.maxSenders {
		victim := p.lru.Back().Value.(*pooledSender)
		p.evictSenderLocked(victim)
		p.reapLocked(victim)
	}
	return s, nil
}

// release ends an attempt with s, evicting s or its client as d says.
// reason names the failure for the log.
func (p *pool) release(s *pooledSender, d damage, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.inUse--
	s.client.inUse--
	switch {
	case d == senderBroken && !s.evicted:
		p.logger.Info("servicebus: closing the entity sender after a failure",
			slog.String("endpoint", s.client.endpoint), slog.String("entity", s.key.entity), slog.String("reason", reason))
		p.evictSenderLocked(s)
	case d == clientBroken && !s.client.evicted:
		p.logger.Info("servicebus: closing the connection after a failure",
			slog.String("endpoint", s.client.endpoint), slog.String("entity", s.key.entity), slog.String("reason", reason))
		p.evictClientLocked(s.client)
	}
	p.reapLocked(s)
}

// evictSenderLocked takes s out of reuse, and its client with it when s
// was its last live sender.
func (p *pool) evictSenderLocked(s *pooledSender) {
	if s.evicted {
		return
	}
	s.evicted = true
	p.lru.Remove(s.elem)
	delete(p.senders, s.key)
	delete(s.client.live, s.key.entity)
	if len(s.client.live) == 0 {
		p.evictClientLocked(s.client)
	}
}

// evictClientLocked takes c and every sender made from it out of reuse.
func (p *pool) evictClientLocked(c *pooledClient) {
	if c.evicted {
		return
	}
	c.evicted = true
	delete(p.clients, c.key)
	for _, s := range c.live {
		s.evicted = true
		p.lru.Remove(s.elem)
		delete(p.senders, s.key)
	}
	clear(c.live)
}

// reapLocked closes s, or its client, if evicted and no longer in use.
// Closing a client closes every sender made from it.
func (p *pool) reapLocked(s *pooledSender) {
	if s.client.evicted {
		p.reapClientLocked(s.client)
		return
	}
	if s.evicted && s.inUse == 0 && !s.closed {
		s.closed = true
		p.closeLater(s.sender.Close)
	}
}

func (p *pool) reapClientLocked(c *pooledClient) {
	if c.evicted && c.inUse == 0 {
		p.closeClientLocked(c)
	}
}

func (p *pool) closeClientLocked(c *pooledClient) {
	if !c.closed {
		c.closed = true
		delete(p.open, c)
		p.closeLater(c.client.Close)
	}
}

// closeLater runs close in the background, within closeTimeout.
func (p *pool) closeLater(close func(context.Context) error) {
	p.closing.Add(1)
	go func() {
		defer p.closing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := close(ctx); err != nil {
			p.logger.Debug("servicebus: closing a client or sender failed", slog.String("error", err.Error()))
		}
	}()
}

// close closes every client, those in use included (their attempts fail),
// and waits for the closes to end. Later attempts get errPoolClosed.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.open {
		p.evictClientLocked(c)
		p.closeClientLocked(c)
	}
	p.mu.Unlock()
	p.closing.Wait()
}

// live returns how many clients and senders are kept for reuse.
func (p *pool) live() (clients, senders int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients), len(p.senders)
}
