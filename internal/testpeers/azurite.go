package testpeers

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2/sas"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// The storage account every Azurite instance serves, and its key. Both are
// public: Azurite documents them as its development account.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// azuriteStartTimeout bounds how long Azurite may take to listen. It is
// ready in about two seconds on an idle machine; a loaded one running many
// test binaries at once needs more.
const azuriteStartTimeout = 60 * time.Second

// azuriteCallTimeout bounds each call the helpers make to Azurite.
const azuriteCallTimeout = 30 * time.Second

// AzuriteServer is a running Azurite queue service on loopback, with the
// in-memory storage of the development account, and a shared-key client
// of that account for the test's own use.
type AzuriteServer struct {
	// Account is the storage account name, AzuriteAccount.
	Account string
	// Key is the account's key, AzuriteKey.
	Key string

	addr    string
	proc    *Process
	cred    *azqueue.SharedKeyCredential
	service *azqueue.ServiceClient
}

// Azurite starts azurite-queue on a free loopback port, in memory and
// silent, waits until it listens and stops it when the test ends. Without
// Node.js or the azurite package the test is skipped (or fails when
// RequiredEnv says peers are required).
func Azurite(t testing.TB) *AzuriteServer {
	t.Helper()
	port := testkit.FreePort(t)
	p := start(t, "azurite", "node_modules/azurite/dist/src/queue/main.js",
		"--queueHost", "127.0.0.1",
		"--queuePort", strconv.Itoa(port),
		"--inMemoryPersistence",
		"--silent",
	)
	// Keep standard output flowing: Output still records every line.
	go func() {
		for range p.Lines() {
		}
	}()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p.WaitForPort(t, addr, azuriteStartTimeout)

	a := &AzuriteServer{Account: AzuriteAccount, Key: AzuriteKey, addr: addr, proc: p}
	cred, err := azqueue.NewSharedKeyCredential(a.Account, a.Key)
	if err != nil {
		t.Fatalf("azurite: building the shared key credential: %v", err)
	}
	a.cred = cred
	a.service, err = azqueue.NewServiceClientWithSharedKeyCredential(a.QueueEndpoint(), cred, nil)
	if err != nil {
		t.Fatalf("azurite: building the service client: %v", err)
	}
	return a
}

// QueueEndpoint returns the queue service URL of the account, path style:
// "http://127.0.0.1:<port>/devstoreaccount1".
func (a *AzuriteServer) QueueEndpoint() string { return "http://" + a.addr + "/" + a.Account }

// EndpointTemplate returns the queue service URL with the account name left
// as the placeholder "{account}", the form a sender's configuration takes.
func (a *AzuriteServer) EndpointTemplate() string { return "http://" + a.addr + "/{account}" }

// Addr returns the host and port Azurite listens on.
func (a *AzuriteServer) Addr() string { return a.addr }

// Output returns what Azurite wrote so far, for failure messages.
func (a *AzuriteServer) Output() string { return a.proc.Output() }

// Credential returns the account's shared key credential.
func (a *AzuriteServer) Credential() *azqueue.SharedKeyCredential { return a.cred }

// QueueClient returns a shared-key client of the named queue.
func (a *AzuriteServer) QueueClient(queue string) *azqueue.QueueClient {
	return a.service.NewQueueClient(queue)
}

// CreateQueue creates the named queue, failing the test if it cannot.
func (a *AzuriteServer) CreateQueue(t testing.TB, queue string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), azuriteCallTimeout)
	defer cancel()
	if _, err := a.service.CreateQueue(ctx, queue, nil); err != nil {
		t.Fatalf("azurite: creating queue %q: %v", queue, err)
	}
}

// SAS returns a SAS token (without a leading '?') for the named queue with
// the given permissions, valid from a minute ago for an hour over http and
// https. It is signed here rather than by QueueClient.GetSASURL, which
// allows https only and so cannot reach Azurite.
func (a *AzuriteServer) SAS(t testing.TB, queue string, perms sas.QueuePermissions) string {
	t.Helper()
	now := time.Now().UTC()
	qp, err := sas.QueueSignatureValues{
		Protocol:    sas.ProtocolHTTPSandHTTP,
		StartTime:   now.Add(-time.Minute),
		ExpiryTime:  now.Add(time.Hour),
		Permissions: perms.String(),
		QueueName:   queue,
	}.SignWithSharedKey(a.cred)
	if err != nil {
		t.Fatalf("azurite: signing a SAS for queue %q: %v", queue, err)
	}
	return qp.Encode()
}

// PeekMessages returns the texts of up to 32 visible messages of the named
// queue, oldest first, leaving them on the queue.
func (a *AzuriteServer) PeekMessages(t testing.TB, queue string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), azuriteCallTimeout)
	defer cancel()
	n := int32(32)
	resp, err := a.QueueClient(queue).PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: &n})
	if err != nil {
		t.Fatalf("azurite: peeking at queue %q: %v", queue, err)
	}
	texts := make([]string, 0, len(resp.Messages))
	for _, m := range resp.Messages {
		texts = append(texts, deref(m.MessageText))
	}
	return texts
}

// ReceiveMessages takes n messages off the named queue (dequeuing and
// deleting them) and returns their texts in the order received, polling
// until they are all there. It fails the test when fewer than n arrived
// within the given time, and returns as soon as it has n, so that messages
// sent later stay on the queue.
func (a *AzuriteServer) ReceiveMessages(t testing.TB, queue string, n int, within time.Duration) []string {
	t.Helper()
	texts, err := a.receive(queue, n, within)
	if err != nil {
		t.Fatalf("azurite: %v", err)
	}
	return texts
}

func (a *AzuriteServer) receive(queue string, n int, within time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	q := a.QueueClient(queue)
	var texts []string
	for len(texts) < n {
		batch := int32(min(n-len(texts), 32))
		visibility := int32(60)
		resp, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: &batch, VisibilityTimeout: &visibility})
		if err != nil {
			return texts, fmt.Errorf("receiving from queue %q (%d of %d messages so far): %w", queue, len(texts), n, err)
		}
		for _, m := range resp.Messages {
			texts = append(texts, deref(m.MessageText))
			if _, err := q.DeleteMessage(ctx, deref(m.MessageID), deref(m.PopReceipt), nil); err != nil {
				return texts, fmt.Errorf("deleting message %s from queue %q: %w", deref(m.MessageID), queue, err)
			}
		}
		if len(resp.Messages) > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return texts, fmt.Errorf("queue %q had %d of %d messages after %s", queue, len(texts), n, within)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return texts, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
