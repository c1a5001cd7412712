package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
)

// move changes where a secret is sent.
type move struct {
	change string // a merge patch of the action
	field  string // the field named, from the action
	says   string // what the error says
}

// secretKind is an action holding one kind of secret, and the changes
// that move the secret or leave it where it goes.
type secretKind struct {
	name   string
	action string   // the action's JSON, its secrets among secretValues
	secret []string // the secret values, none of which may be returned
	field  string   // the secret's field, from the action, that a PUT must give
	moves  []move
	stays  string // a merge patch of the action that keeps the secret's destination
	again  string // a merge patch of the action that gives the secrets again
	// read returns the stored secret of the action.
	read func(*contracts.JobAction) string
}

var secretKinds = []secretKind{{
	name:   "Basic password",
	action: `{"type": "Https", "request": {"uri": "https://a.example/hook", "method": "POST", "authentication": {"type": "Basic", "username": "u", "password": "BASIC-SECRET"}}}`,
	secret: []string{"BASIC-SECRET"},
	field:  "request.authentication.password",
	moves: []move{
		{`{"request": {"uri": "https://b.example/hook"}}`, "request.uri",
			"changing where the stored password is sent (from https://a.example:443 to https://b.example:443) requires the password again"},
		{`{"request": {"uri": "https://a.example:8443/hook"}}`, "request.uri", "(from https://a.example:443 to https://a.example:8443)"},
	},
	stays: `{"request": {"uri": "https://A.example/other?x=1"}}`,
	again: `{"request": {"authentication": {"password": "BASIC-SECRET"}}}`,
	read:  func(a *contracts.JobAction) string { return a.Request.Authentication.Password },
}, {
	name: "ClientCertificate pfx",
	action: `{"type": "Https", "request": {"uri": "https://a.example/hook", "method": "POST",
		"authentication": {"type": "ClientCertificate", "pfx": "UEZYLVNFQ1JFVA==", "password": "PFX-PASSWORD"}}}`,
	secret: []string{"UEZYLVNFQ1JFVA==", "PFX-PASSWORD"},
	field:  "request.authentication.pfx",
	moves: []move{{`{"request": {"uri": "https://b.example/hook"}}`, "request.uri",
		"changing where the stored password and pfx are sent (from https://a.example:443 to https://b.example:443) requires the password and pfx again"}},
	stays: `{"request": {"uri": "https://a.example/other"}}`,
	again: `{"request": {"authentication": {"pfx": "UEZYLVNFQ1JFVA==", "password": "PFX-PASSWORD"}}}`,
	read:  func(a *contracts.JobAction) string { return a.Request.Authentication.Pfx },
}, {
	name: "OAuth secret",
	action: `{"type": "Https", "request": {"uri": "https://a.example/hook", "method": "POST", "authentication": {"type": "ActiveDirectoryOAuth",
		"tenant": "t1.example", "audience": "https://aud.example", "clientId": "c1", "secret": "OAUTH-SECRET"}}}`,
	secret: []string{"OAUTH-SECRET"},
	field:  "request.authentication.secret",
	moves: []move{
		{`{"request": {"authentication": {"tenant": "t2.example"}}}`, "request.authentication.tenant",
			"changing where the stored secret is sent (from t1.example to t2.example) requires the secret again"},
		{`{"request": {"authentication": {"audience": "https://other.example"}}}`, "request.authentication.audience",
			"(from https://aud.example to https://other.example)"},
		{`{"request": {"uri": "https://b.example/hook"}}`, "request.uri", "(from https://a.example:443 to https://b.example:443)"},
	},
	stays: `{"request": {"uri": "https://a.example/other"}}`,
	again: `{"request": {"authentication": {"secret": "OAUTH-SECRET"}}}`,
	read:  func(a *contracts.JobAction) string { return a.Request.Authentication.Secret },
}, {
	name:   "Storage queue sasToken",
	action: `{"type": "StorageQueue", "queueMessage": {"storageAccount": "acct1", "queueName": "jobs", "sasToken": "sig=SAS-SECRET", "message": "m"}}`,
	secret: []string{"SAS-SECRET"},
	field:  "queueMessage.sasToken",
	moves: []move{{`{"queueMessage": {"storageAccount": "acct2"}}`, "queueMessage.storageAccount",
		"changing where the stored sasToken is sent (from acct1 to acct2) requires the sasToken again"}},
	stays: `{"queueMessage": {"queueName": "other"}}`,
	again: `{"queueMessage": {"sasToken": "sig=SAS-SECRET"}}`,
	read:  func(a *contracts.JobAction) string { return a.QueueMessage.SASToken },
}, {
	name: "Service Bus queue sasKey",
	action: `{"type": "ServiceBusQueue", "serviceBusQueueMessage": {"namespace": "contoso-one", "queueName": "q", "message": "m",
		"authentication": {"sasKeyName": "Root", "sasKey": "SB-SECRET"}}}`,
	secret: []string{"SB-SECRET"},
	field:  "serviceBusQueueMessage.authentication.sasKey",
	moves: []move{{`{"serviceBusQueueMessage": {"namespace": "contoso-two"}}`, "serviceBusQueueMessage.namespace",
		"changing where the stored sasKey is sent (from contoso-one to contoso-two) requires the sasKey again"}},
	stays: `{"serviceBusQueueMessage": {"queueName": "other"}}`,
	again: `{"serviceBusQueueMessage": {"authentication": {"sasKey": "SB-SECRET"}}}`,
	read:  func(a *contracts.JobAction) string { return a.ServiceBusQueueMessage.Authentication.SASKey },
}, {
	name: "Service Bus topic sasKey",
	action: `{"type": "ServiceBusTopic", "serviceBusTopicMessage": {"namespace": "contoso-one", "topicPath": "t", "message": "m",
		"authentication": {"sasKeyName": "Root", "sasKey": "SB-SECRET"}}}`,
	secret: []string{"SB-SECRET"},
	field:  "serviceBusTopicMessage.authentication.sasKey",
	moves:  []move{{`{"serviceBusTopicMessage": {"namespace": "CONTOSO-TWO"}}`, "serviceBusTopicMessage.namespace", "(from contoso-one to contoso-two)"}},
	stays:  `{"serviceBusTopicMessage": {"topicPath": "other"}}`,
	again:  `{"serviceBusTopicMessage": {"authentication": {"sasKey": "SB-SECRET"}}}`,
	read:   func(a *contracts.JobAction) string { return a.ServiceBusTopicMessage.Authentication.SASKey },
}}

// mergeJSON applies the merge patches to doc, in order.
func mergeJSON(t *testing.T, doc string, patches ...string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	for _, p := range patches {
		var pv any
		if err := json.Unmarshal([]byte(p), &pv); err != nil {
			t.Fatalf("%v: %s", err, p)
		}
		v = mergeValue(v, pv)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Regression: a PATCH of request.uri alone kept the stored password, and
// the worker sent it to the new host; the same for an OAuth tenant or
// audience, a storage account and a Service Bus namespace.
func TestAStoredSecretIsNotSentElsewhereWithoutBeingGivenAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/bound", `{"properties": {}}`)
	for _, kind := range secretKinds {
		for _, place := range []string{"action", "errorAction"} {
			t.Run(kind.name+" in the "+place, func(t *testing.T) {
				t.Parallel()
				job := base + "/bound/jobs/" + strings.NewReplacer(" ", "-").Replace(kind.name) + "-" + place
				ref := contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "bound", Job: job[strings.LastIndexByte(job, '/')+1:]}
				// wrap puts a fragment of an action where the secret is.
				wrap, prefix, name := func(a string) string { return a }, "properties.action.", contracts.MainAction
				action := kind.action
				if place == "errorAction" {
					wrap = func(a string) string { return `{"errorAction": ` + a + `}` }
					prefix, name = "properties.action.errorAction.", contracts.ErrorAction
					action = mergeJSON(t, `{"type": "Http", "request": {"uri": "https://main.example/", "method": "GET"}}`, wrap(kind.action))
				}
				b.mustDo(t, http.StatusCreated, "PUT", job, `{"properties": {"action": `+action+`, "recurrence": {"frequency": "Hour"}}}`)
				patch := func(fragments ...string) string {
					return wrap(mergeJSON(t, `{}`, fragments...))
				}
				stored := func() string {
					t.Helper()
					j, err := b.store.GetJob(context.Background(), ref)
					if err != nil {
						t.Fatal(err)
					}
					return kind.read(j.Properties.Action.ActionOf(name))
				}
				want := stored()
				noSecret := func(r response) {
					t.Helper()
					for _, s := range kind.secret {
						if strings.Contains(string(r.body), s) {
							t.Fatalf("a secret is returned: %s", r.body)
						}
					}
				}

				for _, m := range kind.moves {
					r := b.mustDo(t, http.StatusBadRequest, "PATCH", job, `{"properties": {"action": `+patch(m.change)+`}}`)
					if !strings.Contains(string(r.body), prefix+m.field+": ") || !strings.Contains(string(r.body), m.says) {
						t.Errorf("PATCH %s: want %s%s: …%s…, got %s", m.change, prefix, m.field, m.says, r.body)
					}
					noSecret(r)
					// A PUT of the job as GET returns it carries no secret,
					// and a PUT never keeps one: it must give it.
					fetched := string(b.mustDo(t, http.StatusOK, "GET", job, "").body)
					r = b.mustDo(t, http.StatusBadRequest, "PUT", job, mergeJSON(t, fetched, `{"properties": {"action": `+patch(m.change)+`}}`))
					if !strings.Contains(string(r.body), prefix+kind.field+": required") {
						t.Errorf("PUT %s: want %s%s: required, got %s", m.change, prefix, kind.field, r.body)
					}
					noSecret(r)
				}
				if got := stored(); got != want {
					t.Fatalf("a refused change changed the stored secret")
				}

				noSecret(b.mustDo(t, http.StatusOK, "PATCH", job, `{"properties": {"action": `+patch(kind.stays)+`}}`))
				if got := stored(); got != want {
					t.Fatalf("a change of the path lost the stored secret")
				}

				noSecret(b.mustDo(t, http.StatusOK, "PATCH", job, `{"properties": {"action": `+patch(kind.moves[0].change, kind.again)+`}}`))
				fetched := string(b.mustDo(t, http.StatusOK, "GET", job, "").body)
				last := kind.moves[len(kind.moves)-1].change
				noSecret(b.mustDo(t, http.StatusOK, "PUT", job, mergeJSON(t, fetched, `{"properties": {"action": `+patch(last, kind.again)+`}}`)))
				if got := stored(); got != want {
					t.Fatalf("the secret given again was not stored")
				}
			})
		}
	}
}

func TestAPatchWithoutTheEnvelopeNamesTheFieldWithoutIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/bound", `{"properties": {}}`)
	job := base + "/bound/jobs/basic"
	b.mustDo(t, http.StatusCreated, "PUT", job, fmt.Sprintf(`{"properties": {"action": %s}}`, secretKinds[0].action))
	r := b.mustDo(t, http.StatusBadRequest, "PATCH", job, `{"action": {"request": {"uri": "https://b.example/hook"}}}`)
	if !strings.Contains(string(r.body), "invalid: action.request.uri: changing where the stored password is sent") ||
		!strings.Contains(string(r.body), `"target":"action.request.uri"`) {
		t.Fatalf("body %s", r.body)
	}
}

// A secret the authentication type does not send may stay: switching a
// Basic request to OAuth needs the OAuth secret, not the password again.
func TestASecretTheNewAuthenticationDoesNotSendMayStay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/bound", `{"properties": {}}`)
	job := base + "/bound/jobs/switch"
	b.mustDo(t, http.StatusCreated, "PUT", job, fmt.Sprintf(`{"properties": {"action": %s}}`, secretKinds[0].action))
	b.mustDo(t, http.StatusOK, "PATCH", job, `{"properties": {"action": {"request": {"authentication": {"type": "ActiveDirectoryOAuth",
		"tenant": "t", "audience": "https://aud", "clientId": "c", "secret": "NEW-SECRET"}}}}}`)
	// Back to Basic: the password kept meanwhile was bound to the OAuth
	// request, and must be given again.
	r := b.mustDo(t, http.StatusBadRequest, "PATCH", job, `{"properties": {"action": {"request": {"authentication": {"type": "Basic"}}}}}`)
	if !strings.Contains(string(r.body), "properties.action.request.authentication.type: changing where the stored password is sent (from ActiveDirectoryOAuth to Basic)") {
		t.Fatalf("body %s", r.body)
	}
}
