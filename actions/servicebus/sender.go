package servicebus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
	"github.com/jobscheduler/scheduler/contracts"
)

// Sender performs ServiceBusQueue and ServiceBusTopic actions. It is safe
// for concurrent use; build one per worker and Close it at shutdown.
type Sender struct {
	cfg       Config
	pool      *pool
	connector *connector
}

var _ actions.Sender = (*Sender)(nil)

// New returns a Sender configured by cfg, or an error naming the field of
// cfg that cannot work.
func New(cfg Config) (*Sender, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := newConnector(&netpolicy.Dialer{
		Policy:    netpolicy.Policy{AllowLoopback: cfg.AllowLoopback, AllowPrivate: cfg.AllowPrivate},
		Resolver:  cfg.Resolver,
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
	}, cfg.Emulator, cfg.WebSockets)
	return newWithConnect(cfg, c, c.connect), nil
}

// newWithConnect returns a Sender whose clients open their connections with
// connect.
func newWithConnect(cfg Config, c *connector, connect func(context.Context, azservicebus.NewWebSocketConnArgs) (net.Conn, error)) *Sender {
	opts := &azservicebus.ClientOptions{
		// No retries inside an attempt: the job's retry policy decides, and
		// history shows each try. (The SDK still re-attaches a detached
		// link once, at once, before it gives up: the namespace detaches
		// links that have been idle for a while.)
		RetryOptions: azservicebus.RetryOptions{MaxRetries: -1},
		// Every connection, AMQP over TCP included, is opened by the
		// connector: the SDK's own dialer knows no address policy.
		NewWebSocketConn: connect,
	}
	newClient := func(connectionString string) (*azservicebus.Client, error) {
		return azservicebus.NewClientFromConnectionString(connectionString, opts)
	}
	return &Sender{cfg: cfg, pool: newPool(cfg.MaxSenders, cfg.Logger, newClient), connector: c}
}

// target is what an action sends to.
type target struct {
	actionType contracts.ActionType
	kind       string // "queue" or "topic"
	entity     string
	message    *contracts.ServiceBusMessage
}

// targetOf returns the queue or topic action a sends to, or why it sends
// to none.
func targetOf(a *contracts.JobAction) (t target, problem string) {
	switch {
	case a == nil:
		return target{}, "The execution carries no action."
	case a.Type == contracts.ActionServiceBusQueue && a.ServiceBusQueueMessage != nil:
		m := a.ServiceBusQueueMessage
		return target{a.Type, "queue", m.QueueName, &m.ServiceBusMessage}, ""
	case a.Type == contracts.ActionServiceBusTopic && a.ServiceBusTopicMessage != nil:
		m := a.ServiceBusTopicMessage
		return target{a.Type, "topic", m.TopicPath, &m.ServiceBusMessage}, ""
	case a.Type == contracts.ActionServiceBusQueue:
		return target{}, fmt.Sprintf("%s Action - The action has no serviceBusQueueMessage.", a.Type)
	case a.Type == contracts.ActionServiceBusTopic:
		return target{}, fmt.Sprintf("%s Action - The action has no serviceBusTopicMessage.", a.Type)
	default:
		return target{}, fmt.Sprintf("Action type %q is not a Service Bus action.", a.Type)
	}
}

// Send sends the action's message to its queue or topic, once. The
// attempt's ID is the message id unless the action sets one.
func (s *Sender) Send(ctx context.Context, a *contracts.JobAction, at actions.Attempt) actions.Outcome {
	t, problem := targetOf(a)
	if problem != "" {
		return actions.Failure(problem, nil)
	}
	m := t.message
	if t.entity == "" {
		return t.failure(fmt.Sprintf("the %s name is empty", t.kind))
	}
	auth := m.Authentication
	if auth == nil || auth.SASKeyName == "" || auth.SASKey == "" {
		return t.failure("the action has no shared access key name and key")
	}
	// The connection string is split at ';', so neither may hold one.
	if strings.Contains(auth.SASKeyName, ";") || strings.Contains(auth.SASKey, ";") {
		return t.failure("the shared access key name or key contains a ';', which a connection string cannot carry")
	}
	endpoint, err := s.cfg.endpoint(m.Namespace)
	if err != nil {
		return t.failure(err.Error())
	}
	msg, err := newMessage(m, at)
	if err != nil {
		return t.failure(err.Error())
	}

	connectionString := "Endpoint=" + endpoint + ";SharedAccessKeyName=" + auth.SASKeyName + ";SharedAccessKey=" + auth.SASKey
	if s.cfg.Emulator {
		connectionString += ";UseDevelopmentEmulator=true"
	}
	secrets := secretsOf(auth.SASKey, connectionString)

	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ps, err := s.pool.acquire(endpoint, auth.SASKeyName, auth.SASKey, connectionString, t.entity)
	if err != nil {
		f := failure{reason: "the connection settings cannot be used"}
		if errors.Is(err, errPoolClosed) {
			f = classify(ctx, err)
		}
		return t.sendFailure(f, err, secrets)
	}
	ctx, refused := withRefusal(ctx)
	err = ps.sender.SendAMQPAnnotatedMessage(ctx, msg, nil)
	if err != nil && refused.get() != nil {
		err = refused.get()
	}
	f := classify(ctx, err)
	s.pool.release(ps, f.damage, f.code)
	if err != nil {
		return t.sendFailure(f, err, secrets)
	}
	return actions.Outcome{
		Succeeded: true,
		Message:   fmt.Sprintf("%s Action - The message was sent to %s '%s' of namespace '%s'", t.actionType, t.kind, t.entity, m.Namespace),
	}
}

// Close closes every client and sender kept for reuse and waits for them
// to close. An attempt under way fails; later attempts fail at once.
func (s *Sender) Close() error {
	s.pool.close()
	s.connector.closeIdle()
	return nil
}

// failure is the outcome of an attempt that was not sent because the
// action cannot be: reason says why.
func (t target) failure(reason string) actions.Outcome {
	return actions.Failure(t.notSent(reason), nil)
}

// sendFailure is the outcome of an attempt that failed with err, which f
// classifies: the history message names the failure (with the Service Bus
// error code when there is one), the error is the library's text scrubbed
// of secrets.
func (t target) sendFailure(f failure, err error, secrets []string) actions.Outcome {
	o := actions.Failure(t.notSent(f.reason), nil)
	o.Error = scrub(err.Error(), secrets)
	return o
}

// notSent is the history message of a failed attempt.
func (t target) notSent(reason string) string {
	return fmt.Sprintf("%s Action - The message could not be sent to %s '%s' of namespace '%s': %s",
		t.actionType, t.kind, t.entity, t.message.Namespace, reason)
}
