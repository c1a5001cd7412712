package testpeers

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
)

// serviceBusWait bounds every wait on the Service Bus peer in these tests.
const serviceBusWait = 20 * time.Second

// sendWithSDK sends m to entity through the Service Bus SDK in development-
// emulator mode, with the SDK's retries off.
func sendWithSDK(t *testing.T, peer *ServiceBusPeer, entity string, m *azservicebus.Message) error {
	t.Helper()
	client, err := azservicebus.NewClientFromConnectionString(peer.ConnectionString("send", "peer-test-key"),
		&azservicebus.ClientOptions{RetryOptions: azservicebus.RetryOptions{MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(context.Background()) })
	sender, err := client.NewSender(entity, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), serviceBusWait)
	defer cancel()
	return sender.SendMessage(ctx, m, nil)
}

func TestServiceBusPeer(t *testing.T) {
	t.Parallel()

	t.Run("records a message with its properties, the token audiences and the connection", func(t *testing.T) {
		t.Parallel()
		peer := ServiceBus(t)
		ttl := 90 * time.Second
		at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		err := sendWithSDK(t, peer, "orders", &azservicebus.Message{
			Body:                  []byte("hello"),
			MessageID:             new("m-1"),
			CorrelationID:         new("c-1"),
			ContentType:           new("text/plain"),
			Subject:               new("greeting"),
			ReplyTo:               new("replies"),
			ReplyToSessionID:      new("reply-session"),
			SessionID:             new("session"),
			PartitionKey:          new("session"),
			To:                    new("someone"),
			TimeToLive:            &ttl,
			ScheduledEnqueueTime:  &at,
			ApplicationProperties: map[string]any{"app": "scheduler"},
		})
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		m := peer.Message(t, 1, serviceBusWait)
		want := ServiceBusMessage{
			Connection: 1, Entity: "orders", BodyType: "data", Body: "hello",
			MessageID: "m-1", CorrelationID: "c-1", ContentType: "text/plain", Subject: "greeting",
			ReplyTo: "replies", ReplyToGroupID: "reply-session", GroupID: "session", To: "someone",
			TTL: ttl, ScheduledEnqueueTime: &at, PartitionKey: "session",
		}
		if m.Connection != want.Connection || m.Entity != want.Entity || m.BodyType != want.BodyType || m.Body != want.Body ||
			m.MessageID != want.MessageID || m.CorrelationID != want.CorrelationID || m.ContentType != want.ContentType ||
			m.Subject != want.Subject || m.ReplyTo != want.ReplyTo || m.ReplyToGroupID != want.ReplyToGroupID ||
			m.GroupID != want.GroupID || m.To != want.To || m.TTL != want.TTL || m.PartitionKey != want.PartitionKey ||
			m.ScheduledEnqueueTime == nil || !m.ScheduledEnqueueTime.Equal(at) {
			t.Errorf("message = %+v\nwant      %+v", m, want)
		}
		if got := m.ApplicationProperties["app"]; got != "scheduler" {
			t.Errorf("application property app = %v, want scheduler", got)
		}
		wantAudiences := []string{"amqp://" + peer.Endpoint() + "/orders", "amqp://" + peer.Endpoint() + "/orders/$management"}
		if got := peer.Audiences(); !slices.Equal(got, wantAudiences) {
			t.Errorf("audiences = %q, want %q", got, wantAudiences)
		}
		for _, tok := range peer.Tokens() {
			if tok.Status != 202 || tok.Connection != 1 || tok.TokenType != "servicebus.windows.net:sastoken" {
				t.Errorf("token = %+v, want status 202 on connection 1 of type servicebus.windows.net:sastoken", tok)
			}
		}
		if got := peer.Connections(); got != 1 {
			t.Errorf("connections = %d, want 1", got)
		}
		peer.WaitOpenConnections(t, 1, serviceBusWait)
	})

	t.Run("refuses tokens when asked to", func(t *testing.T) {
		t.Parallel()
		peer := ServiceBus(t, RefuseTokens())
		err := sendWithSDK(t, peer, "orders", &azservicebus.Message{Body: []byte("hello")})
		var sbErr *azservicebus.Error
		if !errors.As(err, &sbErr) || sbErr.Code != azservicebus.CodeUnauthorizedAccess {
			t.Fatalf("SendMessage error = %v, want code %s", err, azservicebus.CodeUnauthorizedAccess)
		}
		if toks := peer.Tokens(); len(toks) == 0 || toks[0].Status != 401 {
			t.Errorf("tokens = %+v, want a first one refused with 401", toks)
		}
		if got := peer.Messages(); len(got) != 0 {
			t.Errorf("messages = %+v, want none", got)
		}
	})

	t.Run("refuses links to missing entities", func(t *testing.T) {
		t.Parallel()
		peer := ServiceBus(t, MissingEntities("ghost"))
		if err := sendWithSDK(t, peer, "ghost", &azservicebus.Message{Body: []byte("hello")}); err == nil {
			t.Fatal("SendMessage to a missing entity succeeded")
		}
		if err := sendWithSDK(t, peer, "orders", &azservicebus.Message{Body: []byte("hello")}); err != nil {
			t.Fatalf("SendMessage to an entity that exists: %v", err)
		}
		if m := peer.Message(t, 1, serviceBusWait); m.Entity != "orders" {
			t.Errorf("entity = %q, want orders", m.Entity)
		}
	})

	t.Run("counts a connection's close", func(t *testing.T) {
		t.Parallel()
		peer := ServiceBus(t)
		client, err := azservicebus.NewClientFromConnectionString(peer.ConnectionString("send", "peer-test-key"), nil)
		if err != nil {
			t.Fatal(err)
		}
		sender, err := client.NewSender("orders", nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), serviceBusWait)
		defer cancel()
		if err := sender.SendMessage(ctx, &azservicebus.Message{Body: []byte("hello")}, nil); err != nil {
			t.Fatal(err)
		}
		peer.WaitOpenConnections(t, 1, serviceBusWait)
		if err := client.Close(ctx); err != nil {
			t.Fatal(err)
		}
		peer.WaitOpenConnections(t, 0, serviceBusWait)
		if got := peer.Connections(); got != 1 {
			t.Errorf("connections = %d, want 1", got)
		}
	})
}
