package testpeers

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// serviceBusStartTimeout bounds how long the Service Bus peer may take to
// listen.
const serviceBusStartTimeout = 30 * time.Second

// ServiceBusPeer is a running servicebus-peer.js: an AMQP 1.0 peer on
// loopback that plays Service Bus for a sender in development-emulator mode
// (plain AMQP, no TLS). It accepts every message and records what it
// received, the audiences of the tokens it was given and the connections
// made to it.
type ServiceBusPeer struct {
	proc *Process
	addr string

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced whenever a line is recorded
	messages    []ServiceBusMessage
	tokens      []ServiceBusToken
	connections int
	open        int
}

// ServiceBusMessage is one message the peer received, as its AMQP sections
// carried it.
type ServiceBusMessage struct {
	// Connection is the 1-based number of the connection it came over.
	Connection int `json:"connection"`
	// Entity is the address of the link it came over: the queue or topic.
	Entity string `json:"entity"`
	// BodyType is "data" for data sections, "value" for an AMQP value,
	// "sequence" or "none".
	BodyType string `json:"body_type"`
	// Body is the body as text (data sections decoded as UTF-8).
	Body string `json:"body"`

	// MessageID to GroupID are the properties section; GroupID is the
	// Service Bus session id and ReplyToGroupID the reply-to session id.
	MessageID          string     `json:"message_id"`
	CorrelationID      string     `json:"correlation_id"`
	ContentType        string     `json:"content_type"`
	Subject            string     `json:"subject"`
	ReplyTo            string     `json:"reply_to"`
	ReplyToGroupID     string     `json:"reply_to_group_id"`
	GroupID            string     `json:"group_id"`
	To                 string     `json:"to"`
	AbsoluteExpiryTime *time.Time `json:"absolute_expiry_time"`
	CreationTime       *time.Time `json:"creation_time"`

	// TTL is the header's time to live, 0 when the header has none.
	TTL time.Duration `json:"-"`
	// Durable is the header's durable flag.
	Durable bool `json:"durable"`

	// MessageAnnotations holds the message annotations as JSON values
	// (timestamps as RFC 3339 text); ScheduledEnqueueTime, PartitionKey and
	// ViaPartitionKey are the Service Bus ones.
	MessageAnnotations    map[string]any `json:"message_annotations"`
	ScheduledEnqueueTime  *time.Time     `json:"-"`
	PartitionKey          string         `json:"-"`
	ViaPartitionKey       string         `json:"-"`
	ApplicationProperties map[string]any `json:"application_properties"`
}

// ServiceBusToken is one $cbs put-token request the peer answered.
type ServiceBusToken struct {
	Connection int    `json:"connection"`
	Audience   string `json:"audience"`
	TokenType  string `json:"token_type"`
	// Status is what the peer answered: 202, or 401 when it refuses tokens.
	Status int `json:"status"`
}

// ServiceBusOption changes how the peer behaves.
type ServiceBusOption struct{ args []string }

// RefuseTokens makes the peer answer every put-token request with 401, so
// that every send fails as unauthorized.
func RefuseTokens() ServiceBusOption {
	return ServiceBusOption{[]string{"--refuse-tokens"}}
}

// MissingEntities makes the peer refuse links to the named queues and
// topics with amqp:not-found, as Service Bus does for an entity that does
// not exist.
func MissingEntities(names ...string) ServiceBusOption {
	return ServiceBusOption{[]string{"--missing", strings.Join(names, ",")}}
}

// ServiceBus starts the Service Bus peer on a free loopback port and stops
// it when the test ends. Without Node.js or rhea the test is skipped (or
// fails when RequiredEnv says peers are required).
func ServiceBus(t testing.TB, opts ...ServiceBusOption) *ServiceBusPeer {
	t.Helper()
	args := []string{"servicebus-peer.js", "--port", "0"}
	for _, opt := range opts {
		args = append(args, opt.args...)
	}
	p := &ServiceBusPeer{proc: start(t, "rhea", args...), changed: make(chan struct{})}
	listening := make(chan int, 1)
	go p.read(listening)
	select {
	case port, ok := <-listening:
		if !ok {
			t.Fatalf("the Service Bus peer exited before listening:\n%s", p.proc.Output())
		}
		p.addr = "127.0.0.1:" + strconv.Itoa(port)
	case <-time.After(serviceBusStartTimeout):
		t.Fatalf("the Service Bus peer did not listen within %s:\n%s", serviceBusStartTimeout, p.proc.Output())
	}
	return p
}

// Endpoint returns the host:port the peer listens on.
func (p *ServiceBusPeer) Endpoint() string { return p.addr }

// ConnectionString returns a development-emulator connection string for the
// peer with the given key name and key (the peer accepts any).
func (p *ServiceBusPeer) ConnectionString(keyName, key string) string {
	return fmt.Sprintf("Endpoint=sb://%s;SharedAccessKeyName=%s;SharedAccessKey=%s;UseDevelopmentEmulator=true", p.addr, keyName, key)
}

// Message waits up to within for the peer to have received n messages and
// returns the nth (1-based), failing the test with the peer's output when
// they do not arrive.
func (p *ServiceBusPeer) Message(t testing.TB, n int, within time.Duration) ServiceBusMessage {
	t.Helper()
	var m ServiceBusMessage
	p.waitFor(t, within, fmt.Sprintf("message %d", n), func() bool {
		if len(p.messages) < n {
			return false
		}
		m = p.messages[n-1]
		return true
	})
	return m
}

// Messages returns the messages received so far.
func (p *ServiceBusPeer) Messages() []ServiceBusMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ServiceBusMessage(nil), p.messages...)
}

// Tokens returns the put-token requests answered so far.
func (p *ServiceBusPeer) Tokens() []ServiceBusToken {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ServiceBusToken(nil), p.tokens...)
}

// Audiences returns the audiences of the put-token requests answered so
// far, in order: a sender's entity ("amqp://host:port/queue") and its
// management node (".../queue/$management").
func (p *ServiceBusPeer) Audiences() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	audiences := make([]string, len(p.tokens))
	for i, tok := range p.tokens {
		audiences[i] = tok.Audience
	}
	return audiences
}

// Connections returns how many AMQP connections were opened to the peer so
// far. The peer reports a connection before anything sent over it, so after
// Message returns, the connections that carried the messages are counted.
func (p *ServiceBusPeer) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connections
}

// WaitOpenConnections waits up to within until exactly n connections are
// open, failing the test when they are not.
func (p *ServiceBusPeer) WaitOpenConnections(t testing.TB, n int, within time.Duration) {
	t.Helper()
	p.waitFor(t, within, fmt.Sprintf("%d open connections", n), func() bool { return p.open == n })
}

// waitFor waits until cond, called with p.mu held, is true.
func (p *ServiceBusPeer) waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		ok, changed := cond(), p.changed
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("the Service Bus peer did not see %s within %s:\n%s", what, within, p.proc.Output())
		}
	}
}

// peerLine is what every line the peer writes has; the rest is decoded
// by event.
type peerLine struct {
	Event string  `json:"event"`
	Port  int     `json:"port"`
	TTL   float64 `json:"ttl"`
}

// read records the peer's lines until it exits, sending the port on
// listening when the peer reports it and closing listening if it exits
// first. Lines that are not JSON are left to Output.
func (p *ServiceBusPeer) read(listening chan<- int) {
	reported := false
	defer func() {
		if !reported {
			close(listening)
		}
	}()
	for line := range p.proc.Lines() {
		var l peerLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			continue
		}
		p.mu.Lock()
		switch l.Event {
		case "listening":
			if !reported {
				reported = true
				listening <- l.Port
			}
		case "connection":
			p.connections++
			p.open++
		case "disconnected":
			p.open--
		case "token":
			var tok ServiceBusToken
			if json.Unmarshal([]byte(line), &tok) == nil {
				p.tokens = append(p.tokens, tok)
			}
		case "message":
			var m ServiceBusMessage
			if json.Unmarshal([]byte(line), &m) == nil {
				p.messages = append(p.messages, completeMessage(m, l.TTL))
			}
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
}

// completeMessage fills the fields of m that need more than JSON decoding:
// the header's time to live (ttlMillis) and the Service Bus annotations.
func completeMessage(m ServiceBusMessage, ttlMillis float64) ServiceBusMessage {
	m.TTL = time.Duration(ttlMillis) * time.Millisecond
	m.PartitionKey, _ = m.MessageAnnotations["x-opt-partition-key"].(string)
	m.ViaPartitionKey, _ = m.MessageAnnotations["x-opt-via-partition-key"].(string)
	if s, ok := m.MessageAnnotations["x-opt-scheduled-enqueue-time"].(string); ok {
		if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
			m.ScheduledEnqueueTime = &at
		}
	}
	return m
}
