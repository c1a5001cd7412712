package contracts

import (
	"reflect"
	"testing"
)

func TestURIOrigin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ uri, want string }{
		{"https://A.Example/path?q=1", "https://a.example:443"},
		{"HTTPS://a.example:443/other", "https://a.example:443"},
		{"http://a.example", "http://a.example:80"},
		{"http://a.example:8080/x", "http://a.example:8080"},
		{"https://user:pw@a.example/x", "https://a.example:443"},
		{"https://[::1]:8443/x", "https://[::1]:8443"},
		{"https://[::1]/x", "https://[::1]:443"},
		{"ftp://a.example/x", "ftp://a.example"},
		{"not a uri", "not a uri"},
	} {
		if got := URIOrigin(c.uri); got != c.want {
			t.Errorf("URIOrigin(%q) = %q, want %q", c.uri, got, c.want)
		}
	}
}

func basicAction(uri string) *JobAction {
	return &JobAction{Type: ActionHTTPS, Request: &HTTPRequest{URI: uri, Method: "POST",
		Authentication: &HTTPAuthentication{Type: HTTPAuthBasic, Username: "u", Password: "pw"}}}
}

func destinationOf(t *testing.T, a *JobAction, field string) Destination {
	t.Helper()
	for _, s := range a.Secrets() {
		if s.Field == field {
			return s.Destination
		}
	}
	t.Fatalf("no secret %s in %+v", field, a)
	return nil
}

func TestSecretDestinations(t *testing.T) {
	t.Parallel()
	const password = "request.authentication.password"

	t.Run("the path and query of the URI are not part of it, the host and port are", func(t *testing.T) {
		t.Parallel()
		a := destinationOf(t, basicAction("https://a.example/one?x=1"), password)
		if b := destinationOf(t, basicAction("https://A.example:443/two"), password); a.String() != b.String() {
			t.Errorf("%s and %s differ", a, b)
		}
		for _, other := range []string{"https://b.example/one", "http://a.example/one", "https://a.example:8443/one"} {
			b := destinationOf(t, basicAction(other), password)
			from, to, changed := a.Change(b)
			if !changed || to.Field != "request.uri" || from != "https://a.example:443" || to.Value != URIOrigin(other) {
				t.Errorf("%s: change %q → %+v (%v)", other, from, to, changed)
			}
		}
	})
	t.Run("an OAuth secret is bound to its tenant, audience and client id", func(t *testing.T) {
		t.Parallel()
		oauth := func(tenant, audience, clientID string) *JobAction {
			return &JobAction{Type: ActionHTTPS, Request: &HTTPRequest{URI: "https://api.example/x", Method: "GET",
				Authentication: &HTTPAuthentication{Type: HTTPAuthActiveDirectoryOAuth, Tenant: tenant, Audience: audience, ClientID: clientID, Secret: "s"}}}
		}
		const secret = "request.authentication.secret"
		base := destinationOf(t, oauth("t1", "https://aud", "c1"), secret)
		for field, other := range map[string]*JobAction{
			"request.authentication.tenant":   oauth("t2", "https://aud", "c1"),
			"request.authentication.audience": oauth("t1", "https://other", "c1"),
			"request.authentication.clientId": oauth("t1", "https://aud", "c2"),
		} {
			if _, to, changed := base.Change(destinationOf(t, other, secret)); !changed || to.Field != field {
				t.Errorf("want a change of %s, got %+v (%v)", field, to, changed)
			}
		}
	})
	t.Run("the authentication type is part of it", func(t *testing.T) {
		t.Parallel()
		cert := basicAction("https://a.example")
		cert.Request.Authentication.Type = HTTPAuthClientCertificate
		_, to, changed := destinationOf(t, basicAction("https://a.example"), password).Change(destinationOf(t, cert, password))
		if !changed || to.Field != "request.authentication.type" {
			t.Errorf("change %+v (%v)", to, changed)
		}
	})
	t.Run("queues and topics are bound to their account or namespace", func(t *testing.T) {
		t.Parallel()
		a := &JobAction{
			QueueMessage:           &StorageQueueMessage{StorageAccount: "acct", QueueName: "q", SASToken: "t"},
			ServiceBusQueueMessage: &ServiceBusQueueMessage{ServiceBusMessage: ServiceBusMessage{Namespace: "NS1", Authentication: &ServiceBusAuthentication{SASKey: "k"}}},
			ServiceBusTopicMessage: &ServiceBusTopicMessage{ServiceBusMessage: ServiceBusMessage{Namespace: "ns2", Authentication: &ServiceBusAuthentication{SASKey: "k"}}},
		}
		want := map[string]string{
			"queueMessage.sasToken":                        `queueMessage.storageAccount="acct"`,
			"serviceBusQueueMessage.authentication.sasKey": `serviceBusQueueMessage.namespace="ns1"`,
			"serviceBusTopicMessage.authentication.sasKey": `serviceBusTopicMessage.namespace="ns2"`,
		}
		for _, s := range a.Secrets() {
			if got := s.Destination.String(); got != want[s.Field] {
				t.Errorf("%s: %s, want %s", s.Field, got, want[s.Field])
			}
		}
	})
	t.Run("a secret the authentication type does not send is marked unused", func(t *testing.T) {
		t.Parallel()
		for _, s := range basicAction("https://a.example").Secrets() {
			if s.Unused != (s.Name() != "password") {
				t.Errorf("%s: unused %v", s.Field, s.Unused)
			}
		}
	})
}

// Secrets lists exactly the fields Redacted empties, so that sealing and
// redaction agree.
func TestSecretsAreTheRedactedFields(t *testing.T) {
	t.Parallel()
	a := &JobAction{
		Request:                &HTTPRequest{Authentication: &HTTPAuthentication{Password: "1", Pfx: "2", Secret: "3"}},
		QueueMessage:           &StorageQueueMessage{SASToken: "4"},
		ServiceBusQueueMessage: &ServiceBusQueueMessage{ServiceBusMessage: ServiceBusMessage{Authentication: &ServiceBusAuthentication{SASKey: "5"}}},
		ServiceBusTopicMessage: &ServiceBusTopicMessage{ServiceBusMessage: ServiceBusMessage{Authentication: &ServiceBusAuthentication{SASKey: "6"}}},
	}
	redacted := JobProperties{Action: a}.Redacted().Action
	if len(a.Secrets()) != 6 {
		t.Fatalf("%d secrets, want 6", len(a.Secrets()))
	}
	for _, s := range redacted.Secrets() {
		if *s.Value != "" {
			t.Errorf("%s is a secret Redacted keeps", s.Field)
		}
	}
	for _, s := range a.Secrets() {
		*s.Value = ""
	}
	if !reflect.DeepEqual(a, redacted) {
		t.Fatalf("emptying the secrets does not give the redacted action:\n%+v\n%+v", a, redacted)
	}
}
