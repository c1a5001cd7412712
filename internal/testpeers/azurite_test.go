package testpeers

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2/sas"
)

func TestAzurite(t *testing.T) {
	t.Parallel()
	az := Azurite(t)

	t.Run("serves the development account path style on loopback", func(t *testing.T) {
		t.Parallel()
		if az.Account != "devstoreaccount1" || az.Key != AzuriteKey {
			t.Fatalf("account %q key %q, want the development account", az.Account, az.Key)
		}
		if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/devstoreaccount1$`).MatchString(az.QueueEndpoint()) {
			t.Errorf("QueueEndpoint() = %q", az.QueueEndpoint())
		}
		if want := strings.Replace(az.QueueEndpoint(), "devstoreaccount1", "{account}", 1); az.EndpointTemplate() != want {
			t.Errorf("EndpointTemplate() = %q, want %q", az.EndpointTemplate(), want)
		}
		if !strings.HasSuffix(az.QueueEndpoint(), az.Addr()+"/devstoreaccount1") {
			t.Errorf("Addr() = %q does not match QueueEndpoint() %q", az.Addr(), az.QueueEndpoint())
		}
	})

	t.Run("a created queue takes messages that peek and receive read back", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "roundtrip")
		ctx := context.Background()
		for _, text := range []string{"one", "two & <three>"} {
			if _, err := az.QueueClient("roundtrip").EnqueueMessage(ctx, text, nil); err != nil {
				t.Fatalf("enqueue %q: %v", text, err)
			}
		}
		if got := az.PeekMessages(t, "roundtrip"); len(got) != 2 || got[0] != "one" || got[1] != "two & <three>" {
			t.Fatalf("PeekMessages = %q", got)
		}
		if got := az.ReceiveMessages(t, "roundtrip", 2, 10*time.Second); len(got) != 2 || got[0] != "one" || got[1] != "two & <three>" {
			t.Fatalf("ReceiveMessages = %q", got)
		}
		if got := az.PeekMessages(t, "roundtrip"); len(got) != 0 {
			t.Fatalf("after receiving, PeekMessages = %q, want none", got)
		}
	})

	t.Run("receiving from an empty queue gives up after the time allowed", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "empty")
		start := time.Now()
		got, err := az.receive("empty", 1, 300*time.Millisecond)
		if err == nil || len(got) != 0 {
			t.Fatalf("receive = %q, %v; want no messages and an error", got, err)
		}
		if !strings.Contains(err.Error(), `queue "empty" had 0 of 1 messages`) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %q does not say what was missing", err)
		}
		if elapsed := time.Since(start); elapsed > 10*time.Second {
			t.Errorf("receive took %s", elapsed)
		}
	})

	t.Run("a SAS signed for the queue works over http", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "sas")
		token := az.SAS(t, "sas", sas.QueuePermissions{Add: true, Read: true, Process: true})
		for _, field := range []string{"sig=", "sp=rap", "spr=https%2Chttp", "se=", "sv="} {
			if !strings.Contains(token, field) {
				t.Errorf("SAS %q has no %s", token, field)
			}
		}
		if strings.HasPrefix(token, "?") {
			t.Errorf("SAS %q starts with '?'", token)
		}
		q, err := azqueue.NewQueueClientWithNoCredential(az.QueueEndpoint()+"/sas?"+token, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := q.EnqueueMessage(ctx, "by sas", nil); err != nil {
			t.Fatalf("enqueue with SAS: %v", err)
		}
		resp, err := q.DequeueMessage(ctx, nil)
		if err != nil {
			t.Fatalf("dequeue with SAS: %v", err)
		}
		if len(resp.Messages) != 1 || deref(resp.Messages[0].MessageText) != "by sas" {
			t.Fatalf("dequeued %+v", resp.Messages)
		}
	})

	t.Run("an add-only SAS can send but not read", func(t *testing.T) {
		t.Parallel()
		az.CreateQueue(t, "addonly")
		token := az.SAS(t, "addonly", sas.QueuePermissions{Add: true})
		q, err := azqueue.NewQueueClientWithNoCredential(az.QueueEndpoint()+"/addonly?"+token, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := q.EnqueueMessage(ctx, "add only", nil); err != nil {
			t.Fatalf("enqueue with an add-only SAS: %v", err)
		}
		_, err = q.DequeueMessage(ctx, nil)
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusForbidden {
			t.Fatalf("dequeue with an add-only SAS: %v, want 403", err)
		}
		if got := az.PeekMessages(t, "addonly"); len(got) != 1 || got[0] != "add only" {
			t.Fatalf("PeekMessages = %q", got)
		}
	})
}
