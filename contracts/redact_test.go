package contracts

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestJobPropertiesRedacted(t *testing.T) {
	t.Parallel()

	secrets := []string{"sas-main", "sbkey-main", "pw-main", "pfx-main", "secret-main", "sas-err", "sbkey-err", "pw-err", "sbkey-topic"}
	job := func() JobProperties {
		return JobProperties{
			Action: &JobAction{
				Type: ActionHTTPS,
				Request: &HTTPRequest{URI: "https://x", Method: "GET", Authentication: &HTTPAuthentication{
					Type: HTTPAuthClientCertificate, Username: "alice", Password: "pw-main", Pfx: "pfx-main", Secret: "secret-main", ClientID: "client"}},
				QueueMessage:           &StorageQueueMessage{StorageAccount: "acct", SASToken: "sas-main"},
				ServiceBusQueueMessage: &ServiceBusQueueMessage{ServiceBusMessage: ServiceBusMessage{Authentication: &ServiceBusAuthentication{SASKeyName: "policy", SASKey: "sbkey-main"}}},
				ErrorAction: &JobAction{
					Type:                   ActionStorageQueue,
					QueueMessage:           &StorageQueueMessage{StorageAccount: "acct", SASToken: "sas-err"},
					Request:                &HTTPRequest{Authentication: &HTTPAuthentication{Type: HTTPAuthBasic, Username: "bob", Password: "pw-err"}},
					ServiceBusQueueMessage: &ServiceBusQueueMessage{ServiceBusMessage: ServiceBusMessage{Authentication: &ServiceBusAuthentication{SASKey: "sbkey-err"}}},
					ServiceBusTopicMessage: &ServiceBusTopicMessage{ServiceBusMessage: ServiceBusMessage{Authentication: &ServiceBusAuthentication{SASKey: "sbkey-topic"}}},
				},
			},
		}
	}

	tests := []struct {
		name  string
		check func(t *testing.T, original, redacted JobProperties)
	}{
		{"the original is unchanged", func(t *testing.T, original, _ JobProperties) {
			if !reflect.DeepEqual(original, job()) {
				t.Errorf("Redacted changed its input:\n%+v", original)
			}
		}},
		{"no secret is in the JSON of the result", func(t *testing.T, _, redacted JobProperties) {
			out, err := json.Marshal(JobDefinition{Properties: redacted})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets {
				if strings.Contains(string(out), s) {
					t.Errorf("the redacted JSON contains the secret %q: %s", s, out)
				}
			}
		}},
		{"what is not secret is kept", func(t *testing.T, _, redacted JobProperties) {
			a := redacted.Action
			if a.Request.Authentication.Username != "alice" || a.Request.Authentication.ClientID != "client" ||
				a.ServiceBusQueueMessage.Authentication.SASKeyName != "policy" || a.ErrorAction.Request.Authentication.Username != "bob" {
				t.Errorf("Redacted dropped a value that is not secret: %+v", a)
			}
		}},
		{"the result shares nothing with the original", func(t *testing.T, original, redacted JobProperties) {
			assertNoSharing(t, "JobProperties", reflect.ValueOf(original), reflect.ValueOf(redacted))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			original := job()
			redacted := original.Redacted()
			tt.check(t, original, redacted)
		})
	}

	t.Run("a job with every field set keeps no secret", func(t *testing.T) {
		t.Parallel()
		p := filled()
		r := p.Redacted()
		for _, a := range []*JobAction{r.Action, r.Action.ErrorAction} { // the levels filled() fills completely
			auth := a.Request.Authentication
			if auth.Password != "" || auth.Pfx != "" || auth.Secret != "" || a.QueueMessage.SASToken != "" ||
				a.ServiceBusQueueMessage.Authentication.SASKey != "" || a.ServiceBusTopicMessage.Authentication.SASKey != "" {
				t.Errorf("a secret survived in %+v", a)
			}
		}
		if !reflect.DeepEqual(p, filled()) {
			t.Error("Redacted changed its input")
		}
	})
}
