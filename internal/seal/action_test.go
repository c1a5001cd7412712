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

func basicAction(uri string) *contracts.JobAction {
	return &contracts.JobAction{Type: contracts.ActionHTTPS, Request: &contracts.HTTPRequest{
		URI: uri, Method: "POST",
		Authentication: &contracts.HTTPAuthentication{Type: contracts.HTTPAuthBasic, Username: "u", Password: "BASIC-PASS-3"},
	}}
}

// Regression: a sealed secret opened wherever the action pointed, so an
// execution whose request.uri was changed sent the password to the new
// host.
func TestSealedSecretsAreBoundToTheirDestination(t *testing.T) {
	t.Parallel()
	const aad = "occurrence-1"

	t.Run("a changed host, port or scheme does not open, and the error names the destination", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.SealAction(basicAction("https://a.example/hook"), aad)
		for _, uri := range []string{"https://b.example/hook", "https://a.example:8443/hook", "http://a.example/hook"} {
			moved := contracts.JobProperties{Action: sealed}.Clone().Action
			moved.Request.URI = uri
			_, err := s.OpenAction(moved, aad)
			var de *DestinationError
			if !errors.As(err, &de) || !errors.Is(err, ErrCannotOpen) {
				t.Fatalf("%s: err = %v, want a DestinationError", uri, err)
			}
			if de.Path != "action.request.authentication.password" || de.Secret != "password" ||
				!strings.Contains(err.Error(), contracts.URIOrigin(uri)) || strings.Contains(err.Error(), "BASIC-PASS") {
				t.Fatalf("%s: error %+v: %v", uri, de, err)
			}
		}
	})
	t.Run("a changed path or query, or a host in other case, opens", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.SealAction(basicAction("https://a.example/hook"), aad)
		sealed.Request.URI = "https://A.EXAMPLE:443/other?x=1"
		opened, err := s.OpenAction(sealed, aad)
		if err != nil || opened.Request.Authentication.Password != "BASIC-PASS-3" {
			t.Fatalf("opened %+v, %v", opened, err)
		}
	})
	t.Run("every secret kind is bound to its own destination", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		oauth := &contracts.JobAction{Type: contracts.ActionHTTPS, Request: &contracts.HTTPRequest{URI: "https://api.example", Method: "GET",
			Authentication: &contracts.HTTPAuthentication{Type: contracts.HTTPAuthActiveDirectoryOAuth, Tenant: "t1", Audience: "https://aud", ClientID: "c1", Secret: "OAUTH-SECRET-5"}}}
		cert := basicAction("https://a.example")
		cert.Request.Authentication = &contracts.HTTPAuthentication{Type: contracts.HTTPAuthClientCertificate, Pfx: "PFX-DATA-4", Password: "BASIC-PASS-3"}
		for name, c := range map[string]struct {
			action *contracts.JobAction
			change func(*contracts.JobAction)
		}{
			"OAuth tenant":          {oauth, func(a *contracts.JobAction) { a.Request.Authentication.Tenant = "t2" }},
			"OAuth audience":        {oauth, func(a *contracts.JobAction) { a.Request.Authentication.Audience = "https://other" }},
			"client certificate":    {cert, func(a *contracts.JobAction) { a.Request.URI = "https://b.example" }},
			"auth type":             {cert, func(a *contracts.JobAction) { a.Request.Authentication.Type = contracts.HTTPAuthBasic }},
			"storage account":       {secretAction(), func(a *contracts.JobAction) { a.QueueMessage.StorageAccount = "other" }},
			"Service Bus namespace": {secretAction().ErrorAction, func(a *contracts.JobAction) { a.ServiceBusTopicMessage.Namespace = "other" }},
		} {
			sealed := s.SealAction(c.action, aad)
			if _, err := s.OpenAction(sealed, aad); err != nil {
				t.Fatalf("%s: unchanged: %v", name, err)
			}
			c.change(sealed)
			var de *DestinationError
			if _, err := s.OpenAction(sealed, aad); !errors.As(err, &de) {
				t.Fatalf("%s: err = %v, want a DestinationError", name, err)
			}
		}
	})
	t.Run("an error action's secrets are bound to the error action's destination", func(t *testing.T) {
		t.Parallel()
		s := newSealer(t)
		sealed := s.SealAction(secretAction(), aad)
		sealed.ErrorAction.Request.URI = "https://elsewhere.example"
		var de *DestinationError
		if _, err := s.OpenAction(sealed, aad); !errors.As(err, &de) || !strings.HasPrefix(de.Path, "action.errorAction.request.") {
			t.Fatalf("err = %v", err)
		}
	})
}
