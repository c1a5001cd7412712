package seal

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
)

// secrets are the secret strings of secretAction, none a substring of
// anything else in it.
var secrets = []string{"SAS-TOKEN-1", "SB-KEY-2", "BASIC-PASS-3", "PFX-DATA-4", "OAUTH-SECRET-5", "TOPIC-KEY-6"}

func secretAction() *contracts.JobAction {
	return &contracts.JobAction{
		Type: contracts.ActionType("StorageQueue"),
		QueueMessage: &contracts.StorageQueueMessage{
			StorageAccount: "acct", QueueName: "q", SASToken: "SAS-TOKEN-1", Message: "hello",
		},
		ErrorAction: &contracts.JobAction{
			Type: contracts.ActionType("Https"),
			Request: &contracts.HTTPRequest{
				URI: "https://example.com", Method: "POST",
				Authentication: &contracts.HTTPAuthentication{
					Type: "ClientCertificate", Username: "user",
					Password: "BASIC-PASS-3", Pfx: "PFX-DATA-4", Secret: "OAUTH-SECRET-5",
				},
			},
			ServiceBusQueueMessage: &contracts.ServiceBusQueueMessage{
				ServiceBusMessage: contracts.ServiceBusMessage{
					Authentication: &contracts.ServiceBusAuthentication{SASKey: "SB-KEY-2", SASKeyName: "RootManageSharedAccessKey"},
				},
			},
			ServiceBusTopicMessage: &contracts.ServiceBusTopicMessage{
				ServiceBusMessage: contracts.ServiceBusMessage{
					Authentication: &contracts.ServiceBusAuthentication{SASKey: "TOPIC-KEY-6"},
				},
			},
		},
	}
}

func TestSealAction(t *testing.T) {
	t.Parallel()
	const aad = "j.sub.rg.coll.job"

	t.Run("every secret is sealed and opens again", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.SealAction(secretAction(), aad)
		b, err := json.Marshal(sealed)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range secrets {
			if strings.Contains(string(b), secret) {
				t.Errorf("sealed action holds %q: %s", secret, b)
			}
		}
		if n := strings.Count(string(b), Prefix); n != len(secrets) {
			t.Errorf("%d sealed values, want %d", n, len(secrets))
		}
		for _, kept := range []string{"acct", "hello", "user", "RootManageSharedAccessKey"} {
			if !strings.Contains(string(b), kept) {
				t.Errorf("sealed action lost %q", kept)
			}
		}
		opened, err := s.OpenAction(sealed, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(opened, secretAction()) {
			t.Fatalf("opened action differs:\n got %+v\nwant %+v", opened, secretAction())
		}
	})

	t.Run("the input is never changed", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		in := secretAction()
		sealed := s.SealAction(in, aad)
		if !reflect.DeepEqual(in, secretAction()) {
			t.Fatal("SealAction changed its input")
		}
		keep := contracts.JobProperties{Action: sealed}.Clone().Action
		if _, err := s.OpenAction(sealed, aad); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(sealed, keep) {
			t.Fatal("OpenAction changed its input")
		}
	})

	t.Run("empty secrets and a nil action stay as they are", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		a := &contracts.JobAction{Type: "Http", Request: &contracts.HTTPRequest{
			URI: "http://x", Authentication: &contracts.HTTPAuthentication{Type: "Basic", Username: "u"},
		}}
		got := s.SealAction(a, aad)
		if !reflect.DeepEqual(got, a) {
			t.Fatalf("got %+v", got)
		}
		if s.SealAction(nil, aad) != nil {
			t.Fatal("SealAction(nil) is not nil")
		}
		if o, err := s.OpenAction(nil, aad); o != nil || err != nil {
			t.Fatalf("OpenAction(nil) = %v, %v", o, err)
		}
	})

	t.Run("another job's aad or another key does not open, and the error names the field only", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.SealAction(secretAction(), aad)
		for _, open := range []func() error{
			func() error { _, err := s.OpenAction(sealed, "j.sub.rg.coll.other"); return err },
			func() error { _, err := newSealer(t).OpenAction(sealed, aad); return err },
		} {
			err := open()
			if !errors.Is(err, ErrCannotOpen) {
				t.Fatalf("err = %v, want ErrCannotOpen", err)
			}
			if !strings.Contains(err.Error(), "action.queueMessage.sasToken") || strings.Contains(err.Error(), Prefix) {
				t.Fatalf("error %q should name the field and not quote the value", err)
			}
		}
	})

	t.Run("a secret moved to another field does not open", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.SealAction(secretAction(), aad)
		auth := sealed.ErrorAction.Request.Authentication
		auth.Password, auth.Secret = auth.Secret, auth.Password
		if _, err := s.OpenAction(sealed, aad); !errors.Is(err, ErrCannotOpen) {
			t.Fatalf("err = %v, want ErrCannotOpen", err)
		}
	})

	t.Run("an error action sealed in place opens on its own", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.SealAction(secretAction(), aad)
		opened, err := s.OpenAction(sealed.ErrorAction, aad)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(opened, secretAction().ErrorAction) {
			t.Fatal("error action did not open to its plaintext")
		}
	})

	t.Run("a secret in clear is an error, not passed through", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		_, err := s.OpenAction(secretAction(), aad)
		if !errors.Is(err, ErrNotSealed) || strings.Contains(err.Error(), "SAS-TOKEN-1") {
			t.Fatalf("err = %v, want ErrNotSealed without the secret", err)
		}
	})
}
