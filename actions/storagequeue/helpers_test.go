package storagequeue

import (
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
)

// setup returns a Sender over cfg, closed when the test ends.
func setup(t *testing.T, cfg Config) *Sender {
	t.Helper()
	// The tests' services and Azurite listen on loopback.
	cfg.AllowLoopback = true
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// queueAction returns a StorageQueue action of the development account.
func queueAction(account, queue, sasToken, message string) *contracts.JobAction {
	return &contracts.JobAction{
		Type:         contracts.ActionStorageQueue,
		QueueMessage: &contracts.StorageQueueMessage{StorageAccount: account, QueueName: queue, SASToken: sasToken, Message: message},
	}
}

var attemptCounter atomic.Uint64

// newAttempt returns an attempt with an ID of its own.
func newAttempt() actions.Attempt {
	at := sampleAttempt()
	at.ID = fmt.Sprintf("%032x", 0xabc0000+attemptCounter.Add(1))
	return at
}

// sigOf returns the signature of a SAS token, as it appears in the token
// (URL-encoded) and decoded.
func sigOf(t testing.TB, token string) (raw, decoded string) {
	t.Helper()
	for pair := range strings.SplitSeq(strings.TrimPrefix(token, "?"), "&") {
		if k, v, _ := strings.Cut(pair, "="); k == "sig" {
			d, err := url.QueryUnescape(v)
			if err != nil {
				t.Fatal(err)
			}
			return v, d
		}
	}
	t.Fatalf("SAS token %q has no sig", token)
	return "", ""
}

// checkNoSecret fails the test if any field of o holds one of the secrets.
func checkNoSecret(t testing.TB, o actions.Outcome, secrets ...string) {
	t.Helper()
	fields := map[string]string{"Message": o.Message, "Error": o.Error, "Response": o.Response}
	for name, text := range fields {
		for _, secret := range secrets {
			if secret != "" && strings.Contains(text, secret) {
				t.Errorf("Outcome.%s holds the secret %q:\n%s", name, secret, text)
			}
		}
	}
}
