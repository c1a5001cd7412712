package actions

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobscheduler/scheduler/contracts"
)

// MaxResponseBytes is how much of a response body an outcome keeps, as the
// original service kept in its history.
const MaxResponseBytes = 2048

// Attempt identifies one attempt of an action and carries what a sender
// puts on the wire besides the action itself.
type Attempt struct {
	// ID is the attempt's occurrence id (32 hex digits): the idempotency
	// key, the execution tag and the default Service Bus message id. It is
	// the same on every delivery of the attempt.
	ID string
	// Job is the job the action belongs to.
	Job contracts.JobRef
	// ActionName tells the main action from the error action.
	ActionName contracts.ActionName
	// Expected is when the occurrence was due.
	Expected time.Time
	// Number is the 0-based attempt within the occurrence.
	Number int
	// TraceParent is the W3C trace context sent on with the action
	// ("00-<trace id>-<span id>-<flags>").
	TraceParent string
}

// ClientRequestID returns the attempt's client request id: a GUID made from
// its ID, so that every delivery of the attempt sends the same one.
func (a Attempt) ClientRequestID() string {
	id := a.ID
	if len(id) != 32 {
		id = fmt.Sprintf("%032x", id)[:32]
	}
	return id[0:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:32]
}

// ExpectedText returns the expected time as the original service wrote it
// in its messages: UTC, to the second, without an offset.
func (a Attempt) ExpectedText() string { return a.Expected.UTC().Format("2006-01-02T15:04:05") }

// Outcome is what a sender reports of one attempt. It never holds a secret.
type Outcome struct {
	// Succeeded says whether the target accepted the action.
	Succeeded bool
	// StatusCode is the HTTP status the target answered with, 0 when there
	// was no answer (or the protocol has none).
	StatusCode int
	// Message is the text of the history entry.
	Message string
	// Response is the start of the response body, at most MaxResponseBytes.
	Response string
	// Error says why the attempt failed; empty when it succeeded.
	Error string
}

// Sender performs actions of one or more types.
type Sender interface {
	// Send performs one attempt of action a within ctx's deadline and
	// reports how it went. The action's secrets are in clear.
	Send(ctx context.Context, a *contracts.JobAction, at Attempt) Outcome
	// Close releases the clients the sender keeps for reuse.
	Close() error
}

// Failure returns the outcome of an attempt that failed before or without
// an answer: message is the history text, err the reason.
func Failure(message string, err error) Outcome {
	o := Outcome{Message: message, Error: message}
	if err != nil {
		o.Error = err.Error()
	}
	return o
}

// Truncate returns s cut to at most n bytes, at a character boundary, and
// whether it was cut.
func Truncate(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// Scrub replaces every occurrence of each non-empty secret in s with
// "[REDACTED]", so that an error a client library built from a request
// (which may hold a SAS token or a key) can be reported.
func Scrub(s string, secrets ...string) string {
	for _, secret := range secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[REDACTED]")
		}
	}
	return s
}
