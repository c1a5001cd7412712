package contracts

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func validHTTP() *JobAction {
	return &JobAction{Type: ActionHTTP, Request: &HTTPRequest{URI: "http://example.com/run", Method: "POST"}}
}

func validQueue() *JobAction {
	return &JobAction{Type: ActionStorageQueue, QueueMessage: &StorageQueueMessage{
		StorageAccount: "account1", QueueName: "my-queue", SASToken: "?sig=x", Message: "hello"}}
}

func validServiceBus() ServiceBusMessage {
	return ServiceBusMessage{Namespace: "my-namespace", Authentication: &ServiceBusAuthentication{SASKeyName: "policy", SASKey: "key"}}
}

func validServiceBusQueue() *JobAction {
	return &JobAction{Type: ActionServiceBusQueue, ServiceBusQueueMessage: &ServiceBusQueueMessage{ServiceBusMessage: validServiceBus(), QueueName: "q"}}
}

func validServiceBusTopic() *JobAction {
	return &JobAction{Type: ActionServiceBusTopic, ServiceBusTopicMessage: &ServiceBusTopicMessage{ServiceBusMessage: validServiceBus(), TopicPath: "t"}}
}

// with returns a after change.
func with(a *JobAction, change func(a *JobAction)) *JobAction {
	change(a)
	return a
}

func TestValidateAction(t *testing.T) {
	t.Parallel()

	manyHeaders := map[string]string{}
	for i := range MaxHeaders + 1 {
		manyHeaders[fmt.Sprintf("X-%d", i)] = "v"
	}
	tests := []struct {
		name   string
		action *JobAction
		want   []string
	}{
		{"a missing action is required", nil, []string{"properties.action: required"}},
		{"a valid Http action passes", validHTTP(), nil},
		{"a valid Https action passes", with(validHTTP(), func(a *JobAction) { a.Type, a.Request.URI = ActionHTTPS, "https://example.com:8443/x?y=1" }), nil},
		{"a valid storage queue action passes", validQueue(), nil},
		{"a valid Service Bus queue action passes", validServiceBusQueue(), nil},
		{"a valid Service Bus topic action passes", validServiceBusTopic(), nil},
		{"an error action of another type passes", with(validHTTP(), func(a *JobAction) { a.ErrorAction = validQueue() }), nil},
		{
			"a missing type is required",
			&JobAction{Request: &HTTPRequest{}},
			[]string{"properties.action.type: required; use one of Http, Https, StorageQueue, ServiceBusQueue or ServiceBusTopic"},
		},
		{
			"an unknown type is rejected",
			&JobAction{Type: "Ftp"},
			[]string{`properties.action.type: "Ftp" is not one of Http, Https, StorageQueue, ServiceBusQueue or ServiceBusTopic`},
		},
		{
			"an Http action needs a request and no other payload",
			&JobAction{Type: ActionHTTP, QueueMessage: &StorageQueueMessage{}, ServiceBusTopicMessage: &ServiceBusTopicMessage{}},
			[]string{
				"properties.action.request: required for type Http",
				"properties.action.queueMessage: not allowed with type Http; give request",
				"properties.action.serviceBusTopicMessage: not allowed with type Http; give request",
			},
		},
		{
			"a storage queue action needs a queue message",
			with(validQueue(), func(a *JobAction) { a.QueueMessage, a.Request = nil, &HTTPRequest{} }),
			[]string{
				"properties.action.request: not allowed with type StorageQueue; give queueMessage",
				"properties.action.queueMessage: required for type StorageQueue",
			},
		},
		{
			"an empty request reports each missing field",
			&JobAction{Type: ActionHTTP, Request: &HTTPRequest{}},
			[]string{
				"properties.action.request.uri: required; give an absolute http or https URI",
				"properties.action.request.method: required; use an HTTP method such as GET or POST",
			},
		},
		{
			"a relative URI is rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.URI = "/run" }),
			[]string{"properties.action.request.uri: must be an absolute http or https URI, such as https://example.com/path"},
		},
		{
			"a URI of another scheme is rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.URI = "ftp://example.com/x" }),
			[]string{"properties.action.request.uri: must be an absolute http or https URI, such as https://example.com/path"},
		},
		{
			"a URI without a host is rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.URI = "http://:80/x" }),
			[]string{"properties.action.request.uri: must be an absolute http or https URI, such as https://example.com/path"},
		},
		{
			"an unparsable URI is rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.URI = "http://exa mple.com/%zz" }),
			[]string{"properties.action.request.uri: must be an absolute http or https URI, such as https://example.com/path"},
		},
		{
			"an Https action needs an https URI",
			with(validHTTP(), func(a *JobAction) { a.Type = ActionHTTPS }),
			[]string{"properties.action.request.uri: must be an https URI for type Https; use type Http for http"},
		},
		{
			"a URI longer than 2048 characters is rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.URI = "http://example.com/" + strings.Repeat("é", 2030) }),
			[]string{"properties.action.request.uri: is 2049 characters; the limit is 2048"},
		},
		{
			"a method that is not a token is rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.Method = "GE T" }),
			[]string{`properties.action.request.method: "GE T" is not an HTTP method; use one such as GET, POST, PUT, DELETE, PATCH, HEAD or OPTIONS`},
		},
		{
			"any token is a method, kept as given",
			with(validHTTP(), func(a *JobAction) { a.Request.Method = "purge" }),
			nil,
		},
		{
			"bad header names and values are rejected",
			with(validHTTP(), func(a *JobAction) {
				a.Request.Headers = map[string]string{"X A": "v", "X-Inject": "v\r\nHost: evil", "X-Tab": "a\tb", "Accept": "*/*"}
			}),
			[]string{
				"properties.action.request.headers.X A: is not a valid header name; use letters, digits and !#$%&'*+-.^_`|~",
				"properties.action.request.headers.X-Inject: the value must not contain line breaks or other control characters",
			},
		},
		{
			"more than 50 headers are rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.Headers = manyHeaders }),
			[]string{"properties.action.request.headers: has 51 headers; the limit is 50"},
		},
		{
			"headers larger than 4096 bytes in total are rejected",
			with(validHTTP(), func(a *JobAction) {
				a.Request.Headers = map[string]string{"A": strings.Repeat("x", 2047), "B": strings.Repeat("x", 2048)}
			}),
			[]string{"properties.action.request.headers: the header names and values total 4097 bytes; the limit is 4096"},
		},
		{
			"a body of 8192 characters passes",
			with(validHTTP(), func(a *JobAction) { a.Request.Body = strings.Repeat("é", 8192) }),
			nil,
		},
		{
			"a body longer than 8192 characters is rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.Body = strings.Repeat("x", 8193) }),
			[]string{"properties.action.request.body: is 8193 characters; the limit is 8192"},
		},
		{
			"authentication without a type is rejected",
			with(validHTTP(), func(a *JobAction) { a.Request.Authentication = &HTTPAuthentication{Username: "u"} }),
			[]string{"properties.action.request.authentication.type: required; use one of NotSpecified, ClientCertificate, ActiveDirectoryOAuth or Basic"},
		},
		{
			"NotSpecified authentication needs nothing",
			with(validHTTP(), func(a *JobAction) { a.Request.Authentication = &HTTPAuthentication{Type: HTTPAuthNotSpecified} }),
			nil,
		},
		{
			"Basic authentication needs a username and password",
			with(validHTTP(), func(a *JobAction) { a.Request.Authentication = &HTTPAuthentication{Type: HTTPAuthBasic} }),
			[]string{
				"properties.action.request.authentication.username: required for Basic authentication",
				"properties.action.request.authentication.password: required for Basic authentication",
			},
		},
		{
			"client certificate authentication needs a base64 PFX and a password",
			with(validHTTP(), func(a *JobAction) {
				a.Request.Authentication = &HTTPAuthentication{Type: HTTPAuthClientCertificate, Pfx: "not base64!"}
			}),
			[]string{
				"properties.action.request.authentication.pfx: must be the PFX file in base64",
				"properties.action.request.authentication.password: required for ClientCertificate authentication",
			},
		},
		{
			"client certificate authentication passes with a PFX and password",
			with(validHTTP(), func(a *JobAction) {
				a.Request.Authentication = &HTTPAuthentication{Type: HTTPAuthClientCertificate, Pfx: "MIIKAQ==", Password: "pw"}
			}),
			nil,
		},
		{
			"OAuth authentication needs tenant, audience, client id and secret",
			with(validHTTP(), func(a *JobAction) { a.Request.Authentication = &HTTPAuthentication{Type: HTTPAuthActiveDirectoryOAuth} }),
			[]string{
				"properties.action.request.authentication.tenant: required for ActiveDirectoryOAuth authentication",
				"properties.action.request.authentication.audience: required for ActiveDirectoryOAuth authentication",
				"properties.action.request.authentication.clientId: required for ActiveDirectoryOAuth authentication",
				"properties.action.request.authentication.secret: required for ActiveDirectoryOAuth authentication",
			},
		},
		{
			"an empty queue message reports each missing field",
			&JobAction{Type: ActionStorageQueue, QueueMessage: &StorageQueueMessage{}},
			[]string{
				"properties.action.queueMessage.storageAccount: required",
				"properties.action.queueMessage.queueName: required",
				"properties.action.queueMessage.sasToken: required",
				"properties.action.queueMessage.message: required",
			},
		},
		{
			"storage account and queue names follow Azure's rules",
			with(validQueue(), func(a *JobAction) { a.QueueMessage.StorageAccount, a.QueueMessage.QueueName = "My_Account", "a--b" }),
			[]string{
				`properties.action.queueMessage.storageAccount: "My_Account" must be 3 to 24 lowercase letters and digits`,
				`properties.action.queueMessage.queueName: "a--b" must be 3 to 63 lowercase letters, digits and hyphens, start and end with a letter or digit, and have no two hyphens in a row`,
			},
		},
		{
			"an empty Service Bus queue message reports each missing field",
			&JobAction{Type: ActionServiceBusQueue, ServiceBusQueueMessage: &ServiceBusQueueMessage{}},
			[]string{
				"properties.action.serviceBusQueueMessage.namespace: required",
				"properties.action.serviceBusQueueMessage.authentication: required; give sasKeyName and sasKey",
				"properties.action.serviceBusQueueMessage.queueName: required",
			},
		},
		{
			"Service Bus authentication needs a key name and key of a known type",
			with(validServiceBusTopic(), func(a *JobAction) {
				a.ServiceBusTopicMessage.TopicPath = ""
				a.ServiceBusTopicMessage.Authentication = &ServiceBusAuthentication{Type: "Basic"}
				a.ServiceBusTopicMessage.TransportType = "Pigeon"
			}),
			[]string{
				`properties.action.serviceBusTopicMessage.transportType: "Pigeon" is not one of NotSpecified, NetMessaging or AMQP`,
				"properties.action.serviceBusTopicMessage.authentication.sasKeyName: required",
				"properties.action.serviceBusTopicMessage.authentication.sasKey: required",
				`properties.action.serviceBusTopicMessage.authentication.type: "Basic" is not one of NotSpecified or SharedAccessKey`,
				"properties.action.serviceBusTopicMessage.topicPath: required",
			},
		},
		{
			"a Service Bus time to live must be a positive duration",
			with(validServiceBusQueue(), func(a *JobAction) {
				a.ServiceBusQueueMessage.BrokeredMessageProperties = &BrokeredMessageProperties{TimeToLive: "-PT1H"}
			}),
			[]string{`properties.action.serviceBusQueueMessage.brokeredMessageProperties.timeToLive: "-PT1H" must be longer than zero`},
		},
		{
			"the error action is validated at its own path",
			with(validHTTP(), func(a *JobAction) { a.ErrorAction = &JobAction{Type: ActionHTTP} }),
			[]string{"properties.action.errorAction.request: required for type Http"},
		},
		{
			"an error action cannot have an error action",
			with(validHTTP(), func(a *JobAction) {
				a.ErrorAction = with(validQueue(), func(e *JobAction) { e.ErrorAction = validHTTP() })
			}),
			[]string{"properties.action.errorAction.errorAction: an error action cannot have an error action"},
		},
		{
			"the retry policy is validated",
			with(validHTTP(), func(a *JobAction) { a.RetryPolicy = &RetryPolicy{RetryType: RetryFixed, RetryCount: ptr(21)} }),
			[]string{"properties.action.retryPolicy.retryCount: must be between 0 and 20, not 21"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var errs FieldErrors
			ValidateAction(tt.action, "properties.action", false, &errs)
			assertErrorList(t, errs, tt.want)
		})
	}

	t.Run("an action validated as an error action cannot have an error action", func(t *testing.T) {
		t.Parallel()
		var errs FieldErrors
		ValidateAction(with(validHTTP(), func(a *JobAction) { a.ErrorAction = validHTTP() }), "action.errorAction", true, &errs)
		assertErrorList(t, errs, []string{"action.errorAction.errorAction: an error action cannot have an error action"})
	})
}

func TestValidateRetryPolicy(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		policy *RetryPolicy
		want   []string
	}{
		{"no policy is valid", nil, nil},
		{"None is valid", &RetryPolicy{RetryType: RetryNone}, nil},
		{"None ignores the interval and count", &RetryPolicy{RetryType: RetryNone, RetryInterval: "soon", RetryCount: ptr(99)}, nil},
		{"Fixed without values is valid", &RetryPolicy{RetryType: RetryFixed}, nil},
		{"the shortest interval is valid", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "PT15S", RetryCount: ptr(0)}, nil},
		{"the longest interval is valid", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "P548D", RetryCount: ptr(20)}, nil},
		{"a TimeSpan interval is valid", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "00:01:00"}, nil},
		{
			"a missing type is required and the rest still checked",
			&RetryPolicy{RetryInterval: "PT1S"},
			[]string{
				"retryPolicy.retryType: required; use one of None or Fixed",
				`retryPolicy.retryInterval: "PT1S" is shorter than the minimum of 15 seconds (PT15S)`,
			},
		},
		{"an unknown type is rejected", &RetryPolicy{RetryType: "Exponential"}, []string{`retryPolicy.retryType: "Exponential" is not one of None or Fixed`}},
		{"an interval under 15 seconds is rejected", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "00:00:14.9"}, []string{`retryPolicy.retryInterval: "00:00:14.9" is shorter than the minimum of 15 seconds (PT15S)`}},
		{"an interval over 548 days is rejected", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "P548DT1S"}, []string{`retryPolicy.retryInterval: "P548DT1S" is longer than the maximum of 18 months (P548D)`}},
		{"an unparsable interval is rejected", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "1 minute"}, []string{`retryPolicy.retryInterval: "1 minute" is not a duration; use ISO 8601 (PT30S) or hh:mm:ss (00:00:30)`}},
		{"a negative count is rejected", &RetryPolicy{RetryType: RetryFixed, RetryCount: ptr(-1)}, []string{"retryPolicy.retryCount: must be between 0 and 20, not -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var errs FieldErrors
			ValidateRetryPolicy(tt.policy, "retryPolicy", &errs)
			assertErrorList(t, errs, tt.want)
		})
	}
}

func TestEffectiveRetry(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name         string
		policy       *RetryPolicy
		wantCount    int
		wantInterval time.Duration
	}{
		{"no policy retries 4 times 30 seconds apart", nil, 4, 30 * time.Second},
		{"None does not retry", &RetryPolicy{RetryType: RetryNone, RetryCount: ptr(5)}, 0, 0},
		{"Fixed fills blanks with the defaults", &RetryPolicy{RetryType: RetryFixed}, 4, 30 * time.Second},
		{"Fixed uses its values", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "00:01:00", RetryCount: ptr(10)}, 10, time.Minute},
		{"Fixed with zero retries does not retry", &RetryPolicy{RetryType: RetryFixed, RetryCount: ptr(0)}, 0, 30 * time.Second},
		{"values out of range are clamped", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "PT1S", RetryCount: ptr(99)}, 20, 15 * time.Second},
		{"an unparsable interval falls back to the default", &RetryPolicy{RetryType: RetryFixed, RetryInterval: "soon"}, 4, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			count, interval := EffectiveRetry(tt.policy)
			if count != tt.wantCount || interval != tt.wantInterval {
				t.Errorf("EffectiveRetry = %d, %v; want %d, %v", count, interval, tt.wantCount, tt.wantInterval)
			}
		})
	}
}
