package servicebus

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
)

const attemptID = "0123456789abcdef0123456789abcdef"

func TestNewMessageMapsEveryProperty(t *testing.T) {
	t.Parallel()
	enqueueAt := time.Date(2031, 2, 3, 4, 5, 6, 0, time.FixedZone("CET", 3600))
	force := true
	m := &contracts.ServiceBusMessage{
		Message: "Some message",
		BrokeredMessageProperties: &contracts.BrokeredMessageProperties{
			ContentType:             "application/json",
			CorrelationID:           "correlation-1",
			ForcePersistence:        &force,
			Label:                   "the label",
			MessageID:               "message-1",
			PartitionKey:            "partition-1",
			ReplyTo:                 "replies",
			ReplyToSessionID:        "reply-session",
			ScheduledEnqueueTimeUTC: &enqueueAt,
			SessionID:               "session-1",
			TimeToLive:              "01:30:00",
			To:                      "the receiver",
			ViaPartitionKey:         "via-1",
		},
		CustomMessageProperties: map[string]string{"appname": "FromScheduler"},
	}
	got, err := newMessage(m, actions.Attempt{ID: attemptID})
	if err != nil {
		t.Fatal(err)
	}
	want := &azservicebus.AMQPAnnotatedMessage{
		Body:   azservicebus.AMQPAnnotatedMessageBody{Data: [][]byte{[]byte("Some message")}},
		Header: &azservicebus.AMQPAnnotatedMessageHeader{TTL: 90 * time.Minute},
		Properties: &azservicebus.AMQPAnnotatedMessageProperties{
			ContentType:    new("application/json"),
			CorrelationID:  "correlation-1",
			GroupID:        new("session-1"),
			MessageID:      "message-1",
			ReplyTo:        new("replies"),
			ReplyToGroupID: new("reply-session"),
			Subject:        new("the label"),
			To:             new("the receiver"),
		},
		MessageAnnotations: map[any]any{
			"x-opt-scheduled-enqueue-time": enqueueAt.UTC(),
			"x-opt-partition-key":          "partition-1",
			"x-opt-via-partition-key":      "via-1",
		},
		ApplicationProperties: map[string]any{"appname": "FromScheduler"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("newMessage =\n%#v\nwant\n%#v", got, want)
	}
}

func TestNewMessageLeavesUnsetPropertiesOut(t *testing.T) {
	t.Parallel()
	for _, props := range []*contracts.BrokeredMessageProperties{nil, {}} {
		got, err := newMessage(&contracts.ServiceBusMessage{Message: "hello", BrokeredMessageProperties: props}, actions.Attempt{ID: attemptID})
		if err != nil {
			t.Fatal(err)
		}
		want := &azservicebus.AMQPAnnotatedMessage{
			Body:       azservicebus.AMQPAnnotatedMessageBody{Data: [][]byte{[]byte("hello")}},
			Properties: &azservicebus.AMQPAnnotatedMessageProperties{MessageID: attemptID},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("newMessage with properties %+v =\n%#v\nwant\n%#v", props, got, want)
		}
	}
}

func TestNewMessageIDDefaultsToTheAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, messageID, attemptID string
		want                       any
	}{
		{"the attempt's id when the action sets none", "", attemptID, attemptID},
		{"the action's own id when it sets one", "mine", attemptID, "mine"},
		{"none without either", "", "", nil},
	}
	for _, tt := range tests {
		m := &contracts.ServiceBusMessage{BrokeredMessageProperties: &contracts.BrokeredMessageProperties{MessageID: tt.messageID}}
		got, err := newMessage(m, actions.Attempt{ID: tt.attemptID})
		if err != nil {
			t.Fatal(err)
		}
		if got.Properties.MessageID != tt.want {
			t.Errorf("%s: message id = %#v, want %#v", tt.name, got.Properties.MessageID, tt.want)
		}
	}
}

func TestNewMessageTimeToLive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ttl     string
		want    time.Duration
		wantErr string
	}{
		{"PT30S", 30 * time.Second, ""},
		{"00:00:30", 30 * time.Second, ""},
		{"1.00:00:00", 24 * time.Hour, ""},
		{"P1D", 24 * time.Hour, ""},
		// The header carries at most 2^32-1 ms; longer is cut, not wrapped.
		{"P60D", maxTTL, ""},
		{"P49D", 49 * 24 * time.Hour, ""},
		{"soon", 0, "brokeredMessageProperties.timeToLive"},
		{"PT0S", 0, "must be longer than zero"},
		{"-PT5S", 0, "must be longer than zero"},
	}
	for _, tt := range tests {
		m := &contracts.ServiceBusMessage{BrokeredMessageProperties: &contracts.BrokeredMessageProperties{TimeToLive: tt.ttl}}
		got, err := newMessage(m, actions.Attempt{ID: attemptID})
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("timeToLive %q: error = %v, want one saying %q", tt.ttl, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("timeToLive %q: %v", tt.ttl, err)
		case got.Header == nil || got.Header.TTL != tt.want:
			t.Errorf("timeToLive %q: header = %+v, want ttl %s", tt.ttl, got.Header, tt.want)
		}
	}
}

func TestNewMessageCarriesTheTraceContext(t *testing.T) {
	t.Parallel()
	const traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	at := actions.Attempt{ID: attemptID, TraceParent: traceParent}

	got, err := newMessage(&contracts.ServiceBusMessage{}, at)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"Diagnostic-Id": traceParent}; !reflect.DeepEqual(got.ApplicationProperties, want) {
		t.Errorf("application properties = %v, want %v", got.ApplicationProperties, want)
	}

	own := &contracts.ServiceBusMessage{CustomMessageProperties: map[string]string{"Diagnostic-Id": "the job's own"}}
	if got, err = newMessage(own, at); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"Diagnostic-Id": "the job's own"}; !reflect.DeepEqual(got.ApplicationProperties, want) {
		t.Errorf("application properties = %v, want the job's own Diagnostic-Id kept: %v", got.ApplicationProperties, want)
	}
}
