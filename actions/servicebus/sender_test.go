package servicebus

import (
	"context"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testpeers"
)

// testKey is the shared access key of the tests' actions; no outcome may
// show it.
const testKey = "c2VjcmV0LWtleS1ub3QtdG8tYmUtc2hvd24="

// within bounds every wait in these tests.
const within = 20 * time.Second

// setup starts a Service Bus peer and returns a Sender in emulator mode
// that is closed when the test ends.
func setup(t *testing.T, opts ...testpeers.ServiceBusOption) (*Sender, *testpeers.ServiceBusPeer) {
	t.Helper()
	peer := testpeers.ServiceBus(t, opts...)
	return newSender(t, Config{Emulator: true}), peer
}

// newSender returns a Sender, logging to the test, that is closed when the
// test ends.
func newSender(t *testing.T, cfg Config) *Sender {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	// The tests' peers and listeners are on loopback.
	cfg.AllowLoopback = true
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// queueAction returns a ServiceBusQueue action to queue of namespace with
// the tests' key and no properties.
func queueAction(namespace, queue string) *contracts.JobAction {
	return &contracts.JobAction{
		Type: contracts.ActionServiceBusQueue,
		ServiceBusQueueMessage: &contracts.ServiceBusQueueMessage{
			ServiceBusMessage: serviceBusMessage(namespace),
			QueueName:         queue,
		},
	}
}

// topicAction returns a ServiceBusTopic action like queueAction's.
func topicAction(namespace, topic string) *contracts.JobAction {
	return &contracts.JobAction{
		Type: contracts.ActionServiceBusTopic,
		ServiceBusTopicMessage: &contracts.ServiceBusTopicMessage{
			ServiceBusMessage: serviceBusMessage(namespace),
			TopicPath:         topic,
		},
	}
}

func serviceBusMessage(namespace string) contracts.ServiceBusMessage {
	return contracts.ServiceBusMessage{
		Authentication: &contracts.ServiceBusAuthentication{SASKeyName: "send", SASKey: testKey, Type: contracts.ServiceBusAuthSharedAccessKey},
		Message:        "Some message",
		Namespace:      namespace,
		TransportType:  contracts.TransportAMQP,
	}
}

// attempt returns an attempt with the given 32-hex-digit id.
func attempt(id string) actions.Attempt {
	return actions.Attempt{ID: id, Job: contracts.JobRef{}, Expected: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// send sends a within the tests' time limit.
func send(t *testing.T, s *Sender, a *contracts.JobAction, at actions.Attempt) actions.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return s.Send(ctx, a, at)
}

// assertNoKey fails the test if any field of o shows the tests' key.
func assertNoKey(t *testing.T, o actions.Outcome) {
	t.Helper()
	for name, text := range map[string]string{"Message": o.Message, "Error": o.Error, "Response": o.Response} {
		if strings.Contains(text, testKey) {
			t.Errorf("outcome %s shows the key: %q", name, text)
		}
	}
}

func TestSendToPeer(t *testing.T) {
	t.Parallel()

	t.Run("a queue message arrives with its body and every mapped property", func(t *testing.T) {
		t.Parallel()
		s, peer := setup(t)
		ns := peer.Endpoint()
		a := queueAction(ns, "orders")
		enqueueAt := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
		a.ServiceBusQueueMessage.BrokeredMessageProperties = &contracts.BrokeredMessageProperties{
			ContentType:             "application/json",
			CorrelationID:           "correlation-1",
			ForcePersistence:        new(bool),
			Label:                   "the label",
			PartitionKey:            "session-1",
			ReplyTo:                 "replies",
			ReplyToSessionID:        "reply-session",
			ScheduledEnqueueTimeUTC: &enqueueAt,
			SessionID:               "session-1",
			TimeToLive:              "PT1H30M",
			To:                      "the receiver",
			ViaPartitionKey:         "via-1",
		}
		a.ServiceBusQueueMessage.CustomMessageProperties = map[string]string{"appname": "FromScheduler", "n": "42"}
		a.ServiceBusQueueMessage.Message = `{"hello":"world"}`
		at := attempt("0123456789abcdef0123456789abcdef")
		at.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

		o := send(t, s, a, at)
		if !o.Succeeded {
			t.Fatalf("outcome = %+v, want success", o)
		}
		if want := "ServiceBusQueue Action - The message was sent to queue 'orders' of namespace '" + ns + "'"; o.Message != want {
			t.Errorf("message = %q, want %q", o.Message, want)
		}
		m := peer.Message(t, 1, within)
		checks := []struct {
			field     string
			got, want any
		}{
			{"entity", m.Entity, "orders"},
			{"body type", m.BodyType, "data"},
			{"body", m.Body, `{"hello":"world"}`},
			{"message id", m.MessageID, at.ID},
			{"correlation id", m.CorrelationID, "correlation-1"},
			{"content type", m.ContentType, "application/json"},
			{"subject", m.Subject, "the label"},
			{"reply to", m.ReplyTo, "replies"},
			{"reply to session id", m.ReplyToGroupID, "reply-session"},
			{"session id", m.GroupID, "session-1"},
			{"partition key", m.PartitionKey, "session-1"},
			{"via partition key", m.ViaPartitionKey, "via-1"},
			{"to", m.To, "the receiver"},
			{"time to live", m.TTL, 90 * time.Minute},
			{"application properties", len(m.ApplicationProperties), 3},
			{"appname", m.ApplicationProperties["appname"], "FromScheduler"},
			{"n", m.ApplicationProperties["n"], "42"},
			{"Diagnostic-Id", m.ApplicationProperties["Diagnostic-Id"], at.TraceParent},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
			}
		}
		if m.ScheduledEnqueueTime == nil || !m.ScheduledEnqueueTime.Equal(enqueueAt) {
			t.Errorf("scheduled enqueue time = %v, want %v", m.ScheduledEnqueueTime, enqueueAt)
		}
		wantAudiences := []string{"amqp://" + ns + "/orders", "amqp://" + ns + "/orders/$management"}
		if got := peer.Audiences(); !slices.Equal(got, wantAudiences) {
			t.Errorf("token audiences = %q, want %q", got, wantAudiences)
		}
	})

	t.Run("a topic message arrives with the action's own message id", func(t *testing.T) {
		t.Parallel()
		s, peer := setup(t)
		ns := peer.Endpoint()
		a := topicAction(ns, "events")
		a.ServiceBusTopicMessage.BrokeredMessageProperties = &contracts.BrokeredMessageProperties{MessageID: "my-own-id"}

		o := send(t, s, a, attempt("fedcba9876543210fedcba9876543210"))
		if !o.Succeeded {
			t.Fatalf("outcome = %+v, want success", o)
		}
		if want := "ServiceBusTopic Action - The message was sent to topic 'events' of namespace '" + ns + "'"; o.Message != want {
			t.Errorf("message = %q, want %q", o.Message, want)
		}
		m := peer.Message(t, 1, within)
		if m.Entity != "events" || m.MessageID != "my-own-id" || m.Body != "Some message" {
			t.Errorf("message at %q with id %q and body %q, want at events with id my-own-id and body %q",
				m.Entity, m.MessageID, m.Body, "Some message")
		}
		if m.TTL != 0 || len(m.ApplicationProperties) != 0 || len(m.MessageAnnotations) != 0 {
			t.Errorf("message = %+v, want no ttl, application properties or annotations", m)
		}
		wantAudiences := []string{"amqp://" + ns + "/events", "amqp://" + ns + "/events/$management"}
		if got := peer.Audiences(); !slices.Equal(got, wantAudiences) {
			t.Errorf("token audiences = %q, want %q", got, wantAudiences)
		}
	})

	t.Run("three sends to one entity reuse one connection and one sender", func(t *testing.T) {
		t.Parallel()
		s, peer := setup(t)
		a := queueAction(peer.Endpoint(), "orders")
		for i := range 3 {
			if o := send(t, s, a, attempt(strings.Repeat(strconv.Itoa(i), 32))); !o.Succeeded {
				t.Fatalf("send %d: outcome = %+v, want success", i, o)
			}
		}
		peer.Message(t, 3, within)
		if got := peer.Connections(); got != 1 {
			t.Errorf("connections = %d, want 1", got)
		}
		if got := len(peer.Audiences()); got != 2 {
			t.Errorf("tokens = %d, want 2 (the entity and its $management, once)", got)
		}
		if clients, senders := s.pool.live(); clients != 1 || senders != 1 {
			t.Errorf("pool holds %d clients and %d senders, want 1 and 1", clients, senders)
		}
	})

	t.Run("concurrent sends to two entities share one connection", func(t *testing.T) {
		t.Parallel()
		s, peer := setup(t)
		var wg sync.WaitGroup
		outcomes := make([]actions.Outcome, 6)
		for i := range outcomes {
			wg.Go(func() {
				a := queueAction(peer.Endpoint(), []string{"orders", "invoices"}[i%2])
				outcomes[i] = send(t, s, a, attempt(strings.Repeat(strconv.Itoa(i), 32)))
			})
		}
		wg.Wait()
		for i, o := range outcomes {
			if !o.Succeeded {
				t.Errorf("send %d: outcome = %+v, want success", i, o)
			}
		}
		peer.Message(t, len(outcomes), within)
		if got := peer.Connections(); got != 1 {
			t.Errorf("connections = %d, want 1", got)
		}
	})

	t.Run("a refused key fails without showing the key, and the next attempt reconnects", func(t *testing.T) {
		t.Parallel()
		s, peer := setup(t, testpeers.RefuseTokens())
		a := queueAction(peer.Endpoint(), "orders")
		for i := range 2 {
			o := send(t, s, a, attempt("0123456789abcdef0123456789abcdef"))
			if o.Succeeded {
				t.Fatalf("send %d succeeded with a refused key", i)
			}
			want := "ServiceBusQueue Action - The message could not be sent to queue 'orders' of namespace '" + peer.Endpoint() +
				"': the namespace refused the shared access key name or key for this entity (error code 'unauthorized')"
			if o.Message != want {
				t.Errorf("message = %q\nwant      %q", o.Message, want)
			}
			if !strings.Contains(o.Error, "unauthorized") {
				t.Errorf("error = %q, want the library's text with its code", o.Error)
			}
			assertNoKey(t, o)
		}
		if got := peer.Connections(); got != 2 {
			t.Errorf("connections = %d, want 2 (the refused client is closed)", got)
		}
		peer.WaitOpenConnections(t, 0, within)
		if clients, senders := s.pool.live(); clients != 0 || senders != 0 {
			t.Errorf("pool holds %d clients and %d senders, want none", clients, senders)
		}
	})

	t.Run("a missing entity fails and its sender is closed, the connection's other senders kept", func(t *testing.T) {
		t.Parallel()
		s, peer := setup(t, testpeers.MissingEntities("ghost"))
		if o := send(t, s, queueAction(peer.Endpoint(), "orders"), attempt("1")); !o.Succeeded {
			t.Fatalf("outcome = %+v, want success", o)
		}
		o := send(t, s, topicAction(peer.Endpoint(), "ghost"), attempt("2"))
		if o.Succeeded {
			t.Fatal("a send to a missing entity succeeded")
		}
		if !strings.Contains(o.Message, "topic 'ghost'") || !strings.Contains(o.Message, "the entity does not exist") {
			t.Errorf("message = %q, want it to say topic 'ghost' does not exist", o.Message)
		}
		assertNoKey(t, o)
		if clients, senders := s.pool.live(); clients != 1 || senders != 1 {
			t.Errorf("pool holds %d clients and %d senders, want 1 and 1 (orders)", clients, senders)
		}
		if o := send(t, s, queueAction(peer.Endpoint(), "orders"), attempt("3")); !o.Succeeded {
			t.Fatalf("outcome = %+v, want success", o)
		}
		peer.Message(t, 2, within)
		if got := peer.Connections(); got != 1 {
			t.Errorf("connections = %d, want 1", got)
		}
	})

	t.Run("the least recently used sender is closed beyond MaxSenders", func(t *testing.T) {
		t.Parallel()
		peer := testpeers.ServiceBus(t)
		s := newSender(t, Config{Emulator: true, MaxSenders: 1})
		for i, queue := range []string{"first", "second", "first"} {
			if o := send(t, s, queueAction(peer.Endpoint(), queue), attempt(strconv.Itoa(i))); !o.Succeeded {
				t.Fatalf("send to %s: outcome = %+v, want success", queue, o)
			}
		}
		peer.Message(t, 3, within)
		// The senders share the connection, which outlives them.
		if got := peer.Connections(); got != 1 {
			t.Errorf("connections = %d, want 1", got)
		}
		ns := peer.Endpoint()
		want := []string{
			"amqp://" + ns + "/first", "amqp://" + ns + "/first/$management",
			"amqp://" + ns + "/second", "amqp://" + ns + "/second/$management",
			"amqp://" + ns + "/first", "amqp://" + ns + "/first/$management",
		}
		if got := peer.Audiences(); !slices.Equal(got, want) {
			t.Errorf("token audiences = %q, want %q (the first sender made again)", got, want)
		}
		if clients, senders := s.pool.live(); clients != 1 || senders != 1 {
			t.Errorf("pool holds %d clients and %d senders, want 1 and 1", clients, senders)
		}
	})

	t.Run("Close closes the connections and later attempts fail", func(t *testing.T) {
		t.Parallel()
		s, peer := setup(t)
		if o := send(t, s, queueAction(peer.Endpoint(), "orders"), attempt("1")); !o.Succeeded {
			t.Fatalf("outcome = %+v, want success", o)
		}
		peer.WaitOpenConnections(t, 1, within)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		peer.WaitOpenConnections(t, 0, within)
		o := send(t, s, queueAction(peer.Endpoint(), "orders"), attempt("2"))
		if o.Succeeded || !strings.Contains(o.Message, "the worker is shutting down") {
			t.Errorf("outcome after Close = %+v, want a failure saying the worker is shutting down", o)
		}
	})

	t.Run("the default endpoint names the namespace in Azure's cloud", func(t *testing.T) {
		t.Parallel()
		peer := testpeers.ServiceBus(t)
		// The connection goes to the peer whatever the endpoint, without
		// TLS: the SDK speaks AMQP over what the connect function returns.
		cfg := Config{Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}.withDefaults()
		d := &netpolicy.Dialer{Policy: netpolicy.Policy{AllowLoopback: true}}
		hosts := make(chan string, 1)
		s := newWithConnect(cfg, newConnector(d, false, false), func(ctx context.Context, args azservicebus.NewWebSocketConnArgs) (net.Conn, error) {
			select {
			case hosts <- args.Host:
			default:
			}
			return d.DialContext(ctx, "tcp", peer.Endpoint())
		})
		t.Cleanup(func() { _ = s.Close() })
		if o := send(t, s, queueAction("mynamespace", "orders"), attempt("1")); !o.Succeeded {
			t.Fatalf("outcome = %+v, want success", o)
		}
		if got, want := <-hosts, "wss://mynamespace.servicebus.windows.net/$servicebus/websocket"; got != want {
			t.Errorf("the connection was asked for %q, want %q", got, want)
		}
		want := []string{"amqps://mynamespace.servicebus.windows.net/orders", "amqps://mynamespace.servicebus.windows.net/orders/$management"}
		if got := peer.Audiences(); !slices.Equal(got, want) {
			t.Errorf("token audiences = %q, want %q", got, want)
		}
	})
}

// silentListener returns the address of a listener that accepts
// connections and never answers, closed when the test ends.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// sendBounded sends a with ctx, failing the test if Send has not returned
// within the tests' time limit.
func sendBounded(t *testing.T, s *Sender, ctx context.Context, a *contracts.JobAction) actions.Outcome {
	t.Helper()
	done := make(chan actions.Outcome, 1)
	go func() { done <- s.Send(ctx, a, attempt("0123456789abcdef0123456789abcdef")) }()
	select {
	case o := <-done:
		return o
	case <-time.After(within):
		t.Fatalf("Send did not return within %s", within)
		return actions.Outcome{}
	}
}

func TestSendWithoutAnswer(t *testing.T) {
	t.Parallel()
	const timedOut = "the namespace did not accept the message within the attempt's time limit"

	t.Run("a passed deadline fails at once", func(t *testing.T) {
		t.Parallel()
		s := newSender(t, Config{Emulator: true})
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		o := sendBounded(t, s, ctx, queueAction(silentListener(t), "orders"))
		if o.Succeeded || !strings.Contains(o.Message, timedOut) {
			t.Errorf("outcome = %+v, want a failure saying %q", o, timedOut)
		}
		assertNoKey(t, o)
	})

	t.Run("a deadline that passes while the namespace is silent fails", func(t *testing.T) {
		t.Parallel()
		s := newSender(t, Config{Emulator: true})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		o := sendBounded(t, s, ctx, queueAction(silentListener(t), "orders"))
		if o.Succeeded || !strings.Contains(o.Message, timedOut) {
			t.Errorf("outcome = %+v, want a failure saying %q", o, timedOut)
		}
		if clients, senders := s.pool.live(); clients != 0 || senders != 0 {
			t.Errorf("pool holds %d clients and %d senders after a timeout, want none", clients, senders)
		}
	})

	t.Run("Config.Timeout bounds an attempt whose context has no deadline", func(t *testing.T) {
		t.Parallel()
		s := newSender(t, Config{Emulator: true, Timeout: 200 * time.Millisecond})
		o := sendBounded(t, s, context.Background(), queueAction(silentListener(t), "orders"))
		if o.Succeeded || !strings.Contains(o.Message, timedOut) {
			t.Errorf("outcome = %+v, want a failure saying %q", o, timedOut)
		}
	})

	t.Run("a cancelled attempt says so", func(t *testing.T) {
		t.Parallel()
		s := newSender(t, Config{Emulator: true})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		o := sendBounded(t, s, ctx, queueAction(silentListener(t), "orders"))
		if o.Succeeded || !strings.Contains(o.Message, "the attempt was cancelled") {
			t.Errorf("outcome = %+v, want a failure saying the attempt was cancelled", o)
		}
	})

	t.Run("an unreachable namespace fails", func(t *testing.T) {
		t.Parallel()
		s := newSender(t, Config{Emulator: true})
		// Nothing listens at a port whose listener is closed (or, when a
		// test running beside it took the port meanwhile, something that
		// drops the connection).
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		o := sendBounded(t, s, context.Background(), queueAction(addr, "orders"))
		want := "the namespace could not be reached or the connection to it was lost (error code 'connlost')"
		if o.Succeeded || !strings.Contains(o.Message, want) ||
			!(strings.Contains(o.Error, "connection refused") || strings.Contains(o.Error, "connection reset")) {
			t.Errorf("outcome = %+v, want a failure saying %q, with the library's reason", o, want)
		}
		assertNoKey(t, o)
	})
}

func TestSendRefusesActionsItCannotSend(t *testing.T) {
	t.Parallel()
	s := newSender(t, Config{})
	// Cleanups run after the parallel subtests, this one before Close.
	t.Cleanup(func() {
		if clients, senders := s.pool.live(); clients != 0 || senders != 0 {
			t.Errorf("pool holds %d clients and %d senders, want none", clients, senders)
		}
	})
	tests := []struct {
		name   string
		action func() *contracts.JobAction
		want   string
	}{
		{"no action", func() *contracts.JobAction { return nil }, "The execution carries no action."},
		{"an HTTP action", func() *contracts.JobAction { return &contracts.JobAction{Type: contracts.ActionHTTP} }, `Action type "Http" is not a Service Bus action.`},
		{"a queue action without its message", func() *contracts.JobAction {
			return &contracts.JobAction{Type: contracts.ActionServiceBusQueue}
		}, "ServiceBusQueue Action - The action has no serviceBusQueueMessage."},
		{"a topic action without its message", func() *contracts.JobAction {
			return &contracts.JobAction{Type: contracts.ActionServiceBusTopic, ServiceBusQueueMessage: &contracts.ServiceBusQueueMessage{}}
		}, "ServiceBusTopic Action - The action has no serviceBusTopicMessage."},
		{"an empty queue name", func() *contracts.JobAction { return queueAction("ns", "") }, "the queue name is empty"},
		{"no authentication", func() *contracts.JobAction {
			a := queueAction("ns", "orders")
			a.ServiceBusQueueMessage.Authentication = nil
			return a
		}, "the action has no shared access key name and key"},
		{"a key with a semicolon", func() *contracts.JobAction {
			a := topicAction("ns", "events")
			a.ServiceBusTopicMessage.Authentication.SASKey = testKey + ";Endpoint=sb://elsewhere/"
			return a
		}, "contains a ';'"},
		{"a namespace that is no host name", func() *contracts.JobAction { return queueAction("ns/evil", "orders") }, `the namespace "ns/evil" is neither a namespace name nor a host name`},
		{"an empty namespace", func() *contracts.JobAction { return queueAction("", "orders") }, "the namespace is empty"},
		{"a time to live that is no duration", func() *contracts.JobAction {
			a := queueAction("ns", "orders")
			a.ServiceBusQueueMessage.BrokeredMessageProperties = &contracts.BrokeredMessageProperties{TimeToLive: "soon"}
			return a
		}, "brokeredMessageProperties.timeToLive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := send(t, s, tt.action(), attempt("1"))
			if o.Succeeded || !strings.Contains(o.Message, tt.want) || o.Error == "" {
				t.Errorf("outcome = %+v, want a failure saying %q", o, tt.want)
			}
			assertNoKey(t, o)
		})
	}
}
