package servicebus

import (
	"fmt"
	"math"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
)

// The message annotations Service Bus reads on input (the AMQP protocol
// guide's "Message annotations" table).
const (
	annotationScheduledEnqueueTime = "x-opt-scheduled-enqueue-time"
	annotationPartitionKey         = "x-opt-partition-key"
	annotationViaPartitionKey      = "x-opt-via-partition-key"
)

// propertyDiagnosticID is the application property in which Azure's
// Service Bus clients carry the W3C trace context of a message.
const propertyDiagnosticID = "Diagnostic-Id"

// maxTTL is the longest time to live the AMQP header can carry: a uint32
// count of milliseconds, about 49.7 days.
const maxTTL = time.Duration(math.MaxUint32) * time.Millisecond

// newMessage returns the AMQP message that performs m in attempt at:
//
//   - the body is the message text as one data section;
//   - custom message properties become application properties (strings),
//     and the attempt's trace context is added as Diagnostic-Id, as
//     Azure's Service Bus clients carry it, unless the job sets one;
//   - messageId, correlationId, contentType, label (as subject), replyTo,
//     replyToSessionId (as reply-to-group-id), sessionId (as group-id) and
//     to become the AMQP properties of the same meaning, and messageId
//     defaults to the attempt's ID, so that every delivery of it sends the
//     same message id and a namespace with duplicate detection keeps one;
//   - timeToLive becomes the header's ttl, cut to the longest the header can
//     carry (about 49.7 days);
//   - scheduledEnqueueTimeUtc, partitionKey and viaPartitionKey become the
//     Service Bus message annotations x-opt-scheduled-enqueue-time,
//     x-opt-partition-key and x-opt-via-partition-key.
//
// forcePersistence is accepted and not sent: the AMQP mapping of Service
// Bus messages has no field for it (it only concerned express entities).
// The transport type is ignored too: messages always go over AMQP.
//
// The message is built as an AMQPAnnotatedMessage rather than the SDK's
// Message because only the former can carry the via partition key and a
// time to live longer than the header's range without wrapping around.
func newMessage(m *contracts.ServiceBusMessage, at actions.Attempt) (*azservicebus.AMQPAnnotatedMessage, error) {
	p := m.BrokeredMessageProperties
	if p == nil {
		p = &contracts.BrokeredMessageProperties{}
	}
	msg := &azservicebus.AMQPAnnotatedMessage{
		Body: azservicebus.AMQPAnnotatedMessageBody{Data: [][]byte{[]byte(m.Message)}},
		Properties: &azservicebus.AMQPAnnotatedMessageProperties{
			ContentType:    nonEmpty(p.ContentType),
			GroupID:        nonEmpty(p.SessionID),
			ReplyTo:        nonEmpty(p.ReplyTo),
			ReplyToGroupID: nonEmpty(p.ReplyToSessionID),
			Subject:        nonEmpty(p.Label),
			To:             nonEmpty(p.To),
		},
	}
	// MessageID and CorrelationID are of type any: an unset one must stay
	// a nil interface, not a nil *string.
	if id := p.MessageID; id != "" {
		msg.Properties.MessageID = id
	} else if at.ID != "" {
		msg.Properties.MessageID = at.ID
	}
	if p.CorrelationID != "" {
		msg.Properties.CorrelationID = p.CorrelationID
	}
	if p.TimeToLive != "" {
		ttl, err := contracts.ParseDuration(p.TimeToLive)
		if err != nil {
			return nil, fmt.Errorf("brokeredMessageProperties.timeToLive: %w", err)
		}
		if ttl <= 0 {
			return nil, fmt.Errorf("brokeredMessageProperties.timeToLive: %q must be longer than zero", p.TimeToLive)
		}
		msg.Header = &azservicebus.AMQPAnnotatedMessageHeader{TTL: min(ttl, maxTTL)}
	}
	annotations := map[any]any{}
	if t := p.ScheduledEnqueueTimeUTC; t != nil {
		annotations[annotationScheduledEnqueueTime] = t.UTC()
	}
	if p.PartitionKey != "" {
		annotations[annotationPartitionKey] = p.PartitionKey
	}
	if p.ViaPartitionKey != "" {
		annotations[annotationViaPartitionKey] = p.ViaPartitionKey
	}
	if len(annotations) > 0 {
		msg.MessageAnnotations = annotations
	}
	properties := make(map[string]any, len(m.CustomMessageProperties)+1)
	if at.TraceParent != "" {
		properties[propertyDiagnosticID] = at.TraceParent
	}
	for k, v := range m.CustomMessageProperties {
		properties[k] = v
	}
	if len(properties) > 0 {
		msg.ApplicationProperties = properties
	}
	return msg, nil
}

// nonEmpty returns a pointer to s, or nil when s is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
