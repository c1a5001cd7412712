package storagequeue

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2/sas"

	"github.com/jobscheduler/scheduler/internal/testpeers"
)

// receiveWithin bounds how long a test waits for its messages to be there.
const receiveWithin = 10 * time.Second

// TestSendToAzurite sends to a real queue service. Its subtests share one
// Azurite, each on queues of its own.
func TestSendToAzurite(t *testing.T) {
	t.Parallel()
	az := testpeers.Azurite(t)
	account := az.Account
	full := sas.QueuePermissions{Add: true, Read: true, Process: true, Update: true}

	t.Run("puts the envelope with exactly the expected fields on the queue", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "envelope")
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate(), Region: "West Europe"})
		message := `<order id="1">fish & chips</order>` + "\r\nsecond line 'quoted' ]]> é 🎉"
		at := newAttempt()
		o := s.Send(context.Background(), queueAction(account, "envelope", az.SAS(t, "envelope", full), message), at)
		if !o.Succeeded || o.StatusCode != http.StatusCreated || o.Error != "" {
			t.Fatalf("outcome %+v, want success with 201", o)
		}
		if want := "StorageQueue Action - The message was sent to queue 'envelope' of storage account 'devstoreaccount1'"; o.Message != want {
			t.Errorf("Message = %q, want %q", o.Message, want)
		}
		if !strings.HasPrefix(o.Response, "MessageId: ") {
			t.Errorf("Response = %q, want the message id", o.Response)
		}
		got := az.ReceiveMessages(t, "envelope", 1, receiveWithin)
		checkEnvelope(t, got[0], at, "West Europe", message)
		if got[0] != envelope(at, "West Europe", message) {
			t.Errorf("the queue holds\n%q\nwant\n%q", got[0], envelope(at, "West Europe", message))
		}
	})

	t.Run("accepts a SAS token with or without a leading question mark", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "questionmark")
		token := az.SAS(t, "questionmark", full)
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate()})
		for _, given := range []string{token, "?" + token, " ?" + token + " "} {
			if o := s.Send(context.Background(), queueAction(account, "questionmark", given, "m:"+given[:2]), newAttempt()); !o.Succeeded {
				t.Errorf("SAS %.10q…: outcome %+v", given, o)
			}
		}
		if got := az.ReceiveMessages(t, "questionmark", 3, receiveWithin); len(got) != 3 {
			t.Errorf("received %d messages, want 3", len(got))
		}
	})

	t.Run("sends with an add-only SAS", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "addonly")
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate()})
		o := s.Send(context.Background(), queueAction(account, "addonly", az.SAS(t, "addonly", sas.QueuePermissions{Add: true}), "add only"), newAttempt())
		if !o.Succeeded || o.StatusCode != http.StatusCreated {
			t.Fatalf("outcome %+v", o)
		}
		if got := az.PeekMessages(t, "addonly"); len(got) != 1 || !strings.Contains(got[0], "<Message>add only</Message>") {
			t.Errorf("queue holds %q", got)
		}
	})

	t.Run("reports a tampered SAS as 403 without the token or its signature", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "tampered")
		token := az.SAS(t, "tampered", full)
		sig, sigDecoded := sigOf(t, token)
		forged := "Zm9yZ2VkLXNpZ25hdHVyZS1mb3ItdGhlLXRlc3QtMTIzNA%3D%3D"
		tampered := strings.Replace(token, "sig="+sig, "sig="+forged, 1)
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate()})
		o := s.Send(context.Background(), queueAction(account, "tampered", "?"+tampered, "m"), newAttempt())
		if o.Succeeded || o.StatusCode != http.StatusForbidden {
			t.Fatalf("outcome %+v, want a failure with 403", o)
		}
		if !strings.Contains(o.Message, "403") || !strings.Contains(o.Message, "AuthenticationFailed") || !strings.Contains(o.Error, "AuthenticationFailed") {
			t.Errorf("outcome %+v does not name 403 AuthenticationFailed", o)
		}
		checkNoSecret(t, o, tampered, forged, "Zm9yZ2VkLXNpZ25hdHVyZS1mb3ItdGhlLXRlc3QtMTIzNA==", token, sig, sigDecoded)
		if got := az.PeekMessages(t, "tampered"); len(got) != 0 {
			t.Errorf("the queue holds %q", got)
		}
	})

	t.Run("reports a missing queue as QueueNotFound", func(t *testing.T) {
		t.Parallel()
		token := az.SAS(t, "missing", full)
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate()})
		o := s.Send(context.Background(), queueAction(account, "missing", token, "m"), newAttempt())
		if o.Succeeded || o.StatusCode != http.StatusNotFound {
			t.Fatalf("outcome %+v, want a failure with 404", o)
		}
		if !strings.Contains(o.Message, "404 Not Found (QueueNotFound)") || !strings.Contains(o.Message, "queue 'missing'") || !strings.Contains(o.Error, "QueueNotFound") {
			t.Errorf("outcome %+v does not name 404 QueueNotFound and the queue", o)
		}
		sig, sigDecoded := sigOf(t, token)
		checkNoSecret(t, o, token, sig, sigDecoded)
	})

	t.Run("reports an account the service does not have as a failure", func(t *testing.T) {
		t.Parallel()
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate()})
		o := s.Send(context.Background(), queueAction("otheraccount", "orders", az.SAS(t, "orders", full), "m"), newAttempt())
		if o.Succeeded || o.StatusCode < 400 {
			t.Errorf("outcome %+v, want a failure from the service", o)
		}
	})

	t.Run("reuses one client per queue and token", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "reuse1")
		az.CreateQueue(t, "reuse2")
		token1, token2 := az.SAS(t, "reuse1", full), az.SAS(t, "reuse2", full)
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate()})
		send := func(queue, token string) {
			t.Helper()
			if o := s.Send(context.Background(), queueAction(account, queue, token, "m"), newAttempt()); !o.Succeeded {
				t.Fatalf("outcome %+v", o)
			}
		}
		send("reuse1", token1)
		first, _ := s.clients.get(az.QueueEndpoint()+"/reuse1", token1)
		send("reuse1", token1)
		send("reuse1", "?"+token1)
		if s.clients.builds() != 1 {
			t.Errorf("three sends to one queue built %d clients, want 1", s.clients.builds())
		}
		if again, _ := s.clients.get(az.QueueEndpoint()+"/reuse1", token1); again != first {
			t.Error("the cached client changed between sends")
		}
		send("reuse2", token2)
		if s.clients.builds() != 2 || s.clients.len() != 2 {
			t.Errorf("a second queue: builds %d, len %d; want 2 and 2", s.clients.builds(), s.clients.len())
		}
		if other, _ := s.clients.get(az.QueueEndpoint()+"/reuse2", token2); other == first {
			t.Error("the second queue got the first queue's client")
		}
		az.ReceiveMessages(t, "reuse1", 3, receiveWithin)
		az.ReceiveMessages(t, "reuse2", 1, receiveWithin)
	})

	t.Run("fails at once, without a hang, when the deadline has passed", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "deadline")
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate()})
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		start := time.Now()
		o := s.Send(ctx, queueAction(account, "deadline", az.SAS(t, "deadline", full), "m"), newAttempt())
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("Send took %s past its deadline", elapsed)
		}
		if o.Succeeded || o.Error == "" || !strings.Contains(o.Message, "timed out") {
			t.Errorf("outcome %+v, want a timeout failure", o)
		}
		if got := az.PeekMessages(t, "deadline"); len(got) != 0 {
			t.Errorf("the queue holds %q", got)
		}
	})

	t.Run("puts one message per attempt, each with its own execution tag", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "concurrent")
		token := az.SAS(t, "concurrent", full)
		s := setup(t, Config{EndpointTemplate: az.EndpointTemplate()})
		const n = 16
		tags := map[string]bool{}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			at := newAttempt()
			tags[at.ID] = true
			wg.Go(func() {
				o := s.Send(context.Background(), queueAction(account, "concurrent", token, fmt.Sprint(i)), at)
				if !o.Succeeded {
					mu.Lock()
					t.Errorf("attempt %d: outcome %+v", i, o)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if s.clients.builds() != 1 {
			t.Errorf("%d concurrent sends to one queue built %d clients", n, s.clients.builds())
		}
		for _, text := range az.ReceiveMessages(t, "concurrent", n, receiveWithin) {
			tag := parseEnvelope(t, text).Fields["ExecutionTag"]
			if !tags[tag] {
				t.Errorf("unexpected or repeated execution tag %q", tag)
			}
			delete(tags, tag)
		}
	})
}
