package servicebus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/Azure/go-amqp"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
)

// failure is what a failed send means.
type failure struct {
	// reason is the end of the history message: what went wrong, with the
	// Service Bus error code or AMQP condition when there is one.
	reason string
	// code is the Service Bus error code or AMQP condition, for logs.
	code string
	// damage says whether the sender or client that failed can be reused.
	damage damage
}

// reasons are the history texts of the Service Bus error codes.
var reasons = map[azservicebus.Code]string{
	azservicebus.CodeUnauthorizedAccess: "the namespace refused the shared access key name or key for this entity",
	azservicebus.CodeNotFound:           "the entity does not exist",
	azservicebus.CodeConnectionLost:     "the namespace could not be reached or the connection to it was lost",
	azservicebus.CodeTimeout:            "the namespace timed out",
	azservicebus.CodeClosed:             "the connection to the namespace was closed",
}

// conditions are the history texts of the AMQP conditions that come
// without a Service Bus error code, and what each says of the link.
var conditions = map[amqp.ErrCond]failure{
	amqp.ErrCondUnauthorizedAccess:                {reason: reasons[azservicebus.CodeUnauthorizedAccess], damage: senderBroken},
	amqp.ErrCondNotFound:                          {reason: reasons[azservicebus.CodeNotFound], damage: senderBroken},
	amqp.ErrCondNotAllowed:                        {reason: "the namespace does not allow this entity to be sent to", damage: senderBroken},
	amqp.ErrCond("com.microsoft:entity-disabled"): {reason: "the entity is disabled", damage: senderBroken},
	amqp.ErrCondResourceLimitExceeded:             {reason: "the entity is full or a namespace quota is exceeded", damage: intact},
	amqp.ErrCond("com.microsoft:server-busy"):     {reason: "the namespace is busy", damage: intact},
}

// classify says what err, the result of a send within ctx, means.
func classify(ctx context.Context, err error) failure {
	var (
		sbErr   *azservicebus.Error
		amqpErr *amqp.Error
		netErr  *net.OpError
	)
	switch {
	case err == nil:
		return failure{damage: intact}
	case errors.Is(err, errPoolClosed):
		return failure{reason: "the worker is shutting down", damage: intact}
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return failure{reason: "the attempt was cancelled", damage: intact}
	case deadlinePassed(ctx) || errors.Is(err, context.DeadlineExceeded):
		// The connection may be stuck; the next attempt makes a new one.
		return failure{reason: "the namespace did not accept the message within the attempt's time limit", code: "deadline", damage: clientBroken}
	case isRefusal(err):
		// Neither the address nor the name will change by the next
		// attempt, but the client is made anew all the same.
		reason, _ := netpolicy.Reason(err)
		return failure{reason: reason, code: "address-policy", damage: clientBroken}
	case errors.Is(err, azservicebus.ErrMessageTooLarge):
		return failure{reason: "the message is larger than the entity accepts", code: "message-too-large", damage: intact}
	case errors.As(err, &sbErr):
		f := failure{reason: reasons[sbErr.Code], code: string(sbErr.Code), damage: clientBroken}
		switch sbErr.Code {
		case azservicebus.CodeUnauthorizedAccess, azservicebus.CodeNotFound:
			f.damage = senderBroken
		case azservicebus.CodeTimeout:
			f.damage = intact
		}
		if f.reason == "" {
			f.reason = "Service Bus refused the message"
		}
		f.reason += fmt.Sprintf(" (error code '%s')", sbErr.Code)
		return f
	case errors.As(err, &amqpErr):
		f, ok := conditions[amqpErr.Condition]
		if !ok {
			f = failure{reason: "the namespace refused the message", damage: clientBroken}
		}
		f.code = string(amqpErr.Condition)
		f.reason += fmt.Sprintf(" (AMQP condition '%s')", amqpErr.Condition)
		return f
	case errors.As(err, &netErr) && netErr.Op == "dial":
		return failure{reason: "the namespace could not be reached", code: "dial", damage: clientBroken}
	default:
		// Whatever else went wrong, the SDK would have recovered the
		// connection before trying again: so does the next attempt.
		return failure{reason: "the message could not be delivered", code: "unknown", damage: clientBroken}
	}
}

// deadlinePassed reports whether ctx's deadline has passed. The AMQP
// library sets the deadline on the connection too, so a read can time out
// (an i/o timeout the SDK reports as a lost connection) an instant before
// ctx says so.
func deadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || ok && !time.Now().Before(d)
}

// sigPattern matches the signature of a shared access signature, which is
// made from the key.
var sigPattern = regexp.MustCompile(`(?i)\bsig=[^&;\s"']+`)

// secretsOf returns the texts that must not appear in an outcome: the
// connection string and the key as given and URL-encoded.
func secretsOf(key, connectionString string) []string {
	return []string{connectionString, key, url.QueryEscape(key)}
}

// scrub returns text with every secret and any signature replaced.
func scrub(text string, secrets []string) string {
	return sigPattern.ReplaceAllString(actions.Scrub(text, secrets...), "sig=[REDACTED]")
}

// isRefusal reports whether err is a connection the address policy
// refused or a namespace name that could not be resolved.
func isRefusal(err error) bool {
	_, ok := netpolicy.Reason(err)
	return ok
}
