package servicebus

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"

	"github.com/jobscheduler/scheduler/contracts"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	live := context.Background()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()

	tests := []struct {
		name       string
		ctx        context.Context
		err        error
		wantReason string
		wantDamage damage
	}{
		{"success", live, nil, "", intact},
		{"a closed sender", live, errPoolClosed, "the worker is shutting down", intact},
		{"a cancelled attempt", cancelled, errors.New("whatever"), "the attempt was cancelled", intact},
		{"a passed deadline, whatever the error", expired, errors.New("read tcp: i/o timeout"), "within the attempt's time limit", clientBroken},
		{"a message too large", live, azservicebus.ErrMessageTooLarge, "larger than the entity accepts", intact},
		{"an unknown error", live, errors.New("something odd"), "could not be delivered", clientBroken},
		{"a missing entity", live, &amqp.LinkError{RemoteErr: &amqp.Error{Condition: amqp.ErrCondNotFound}},
			"the entity does not exist (AMQP condition 'amqp:not-found')", senderBroken},
		{"a disabled entity", live, &amqp.Error{Condition: "com.microsoft:entity-disabled"},
			"the entity is disabled (AMQP condition 'com.microsoft:entity-disabled')", senderBroken},
		{"a full entity", live, &amqp.Error{Condition: amqp.ErrCondResourceLimitExceeded}, "the entity is full", intact},
		{"another condition", live, &amqp.Error{Condition: amqp.ErrCondInternalError},
			"the namespace refused the message (AMQP condition 'amqp:internal-error')", clientBroken},
		{"an error wrapped with context", live, fmt.Errorf("sending: %w", &amqp.Error{Condition: amqp.ErrCondUnauthorizedAccess}),
			"refused the shared access key", senderBroken},
	}
	for _, tt := range tests {
		f := classify(tt.ctx, tt.err)
		if !strings.Contains(f.reason, tt.wantReason) || f.damage != tt.wantDamage {
			t.Errorf("%s: classify = %+v, want a reason saying %q and damage %d", tt.name, f, tt.wantReason, tt.wantDamage)
		}
	}
}

func TestScrubRemovesTheKeyAndSignatures(t *testing.T) {
	t.Parallel()
	key := "abc+def/ghi="
	connectionString := "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=" + key
	text := "failed with " + connectionString + " and key " + key + " escaped " + url.QueryEscape(key) +
		" token SharedAccessSignature sr=amqps%3A%2F%2Fns%2Fq&sig=c2lnbmF0dXJl%3D&se=1700000000&skn=send"
	got := scrub(text, secretsOf(key, connectionString))
	for _, secret := range []string{key, url.QueryEscape(key), "c2lnbmF0dXJl", "SharedAccessKey=abc"} {
		if strings.Contains(got, secret) {
			t.Errorf("scrub left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "[REDACTED]") || !strings.Contains(got, "sig=[REDACTED]") || !strings.Contains(got, "skn=send") {
		t.Errorf("scrub = %q, want the secrets redacted and the rest kept", got)
	}
}

func TestSendFailureScrubsTheLibraryText(t *testing.T) {
	t.Parallel()
	tgt := target{actionType: "ServiceBusQueue", kind: "queue", entity: "orders", message: &contracts.ServiceBusMessage{Namespace: "ns"}}
	connectionString := "Endpoint=sb://ns/;SharedAccessKeyName=send;SharedAccessKey=" + testKey
	err := fmt.Errorf("parsing %q: bad", connectionString)
	o := tgt.sendFailure(failure{reason: "the connection settings cannot be used"}, err, secretsOf(testKey, connectionString))
	if o.Succeeded || o.Message != "ServiceBusQueue Action - The message could not be sent to queue 'orders' of namespace 'ns': the connection settings cannot be used" {
		t.Errorf("outcome = %+v", o)
	}
	assertNoKey(t, o)
	if !strings.Contains(o.Error, "[REDACTED]") {
		t.Errorf("error = %q, want the connection string redacted", o.Error)
	}
}
