package storagequeue

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/actions/netpolicy/netpolicytest"
)

func TestSendFollowsTheAddressPolicy(t *testing.T) {
	t.Parallel()

	t.Run("refuses a queue service on loopback unless allowed", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusCreated, enqueuedBody)
		s, err := New(Config{EndpointTemplate: f.template()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		o := s.Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		want := "StorageQueue Action - The message could not be sent to queue 'orders' of storage account 'acct1': " +
			"refused by the address policy: 127.0.0.1 is a loopback address."
		if o.Succeeded || o.Message != want {
			t.Errorf("message %q, want %q", o.Message, want)
		}
		if n := len(f.received()); n != 0 {
			t.Errorf("the service got %d requests, want 0", n)
		}
	})

	t.Run("names no resolver when the service's name cannot be resolved", func(t *testing.T) {
		t.Parallel()
		s, err := New(Config{Resolver: netpolicytest.FailingResolver{}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		o := s.Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		want := "StorageQueue Action - The message could not be sent to queue 'orders' of storage account 'acct1': " +
			"the name acct1.queue.core.windows.net could not be resolved."
		if o.Succeeded || o.Message != want {
			t.Errorf("message %q, want %q", o.Message, want)
		}
		if strings.Contains(o.Error, netpolicytest.ResolverAddress) || strings.Contains(o.Message, netpolicytest.ResolverAddress) {
			t.Errorf("the outcome names the resolver: %+v", o)
		}
	})
}
