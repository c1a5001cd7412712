package contracts

import (
	"testing"
)

func TestDecodeJobActions(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   string
		want func(t *testing.T) *JobAction
	}{
		{
			name: "an Https action with client certificate authentication is read",
			in: `{"type":"https","request":{"uri":"https://example.com/run","method":"POST","body":"hi","headers":{"Accept":"*/*"},
				"authentication":{"type":"clientCertificate","pfx":"AAEC","password":"pw","certificateThumbprint":"AB12",
				"certificateExpirationDate":"2030-01-01T00:00:00+01:00","certificateSubjectName":"CN=x"}}}`,
			want: func(t *testing.T) *JobAction {
				return &JobAction{Type: ActionHTTPS, Request: &HTTPRequest{
					URI: "https://example.com/run", Method: "POST", Body: "hi", Headers: map[string]string{"Accept": "*/*"},
					Authentication: &HTTPAuthentication{Type: HTTPAuthClientCertificate, Pfx: "AAEC", Password: "pw", CertificateThumbprint: "AB12",
						CertificateExpirationDate: utc(t, "2029-12-31T23:00:00Z"), CertificateSubjectName: "CN=x"},
				}}
			},
		},
		{
			name: "Basic and OAuth authentication are read",
			in: `{"type":"Http","request":{"uri":"http://x","method":"GET","authentication":{"type":"basic","username":"u","password":"p"}},
				"errorAction":{"type":"Http","request":{"uri":"http://y","method":"POST","authentication":{"type":"activeDirectoryOAuth",
				"tenant":"t","audience":"https://management.core.windows.net/","clientId":"c","secret":"s"}}}}`,
			want: func(*testing.T) *JobAction {
				return &JobAction{
					Type:    ActionHTTP,
					Request: &HTTPRequest{URI: "http://x", Method: "GET", Authentication: &HTTPAuthentication{Type: HTTPAuthBasic, Username: "u", Password: "p"}},
					ErrorAction: &JobAction{Type: ActionHTTP, Request: &HTTPRequest{URI: "http://y", Method: "POST", Authentication: &HTTPAuthentication{
						Type: HTTPAuthActiveDirectoryOAuth, Tenant: "t", Audience: "https://management.core.windows.net/", ClientID: "c", Secret: "s"}}},
				}
			},
		},
		{
			name: "the recorded storage queue action with a TimeSpan retry interval is read",
			in: `{"type":"StorageQueue","queueMessage":{"storageAccount":"schedulersdktest","queueName":"queue1","sasToken":"?sig=x","message":"some message!"},
				"retryPolicy":{"retryType":"Fixed","retryInterval":"00:01:00","retryCount":10}}`,
			want: func(*testing.T) *JobAction {
				return &JobAction{
					Type:         ActionStorageQueue,
					QueueMessage: &StorageQueueMessage{StorageAccount: "schedulersdktest", QueueName: "queue1", SASToken: "?sig=x", Message: "some message!"},
					RetryPolicy:  &RetryPolicy{RetryType: RetryFixed, RetryInterval: "00:01:00", RetryCount: ptr(10)},
				}
			},
		},
		{
			name: "the documented Service Bus queue action is read",
			in: `{"type":"serviceBusQueue","serviceBusQueueMessage":{"queueName":"q1","namespace":"mySBNamespace","transportType":"netMessaging",
				"authentication":{"sasKeyName":"QPolicy","sasKey":"k","type":"sharedAccessKey"},"message":"Some message",
				"brokeredMessageProperties":{},"customMessageProperties":{"appname":"FromScheduler"}}}`,
			want: func(*testing.T) *JobAction {
				return &JobAction{Type: ActionServiceBusQueue, ServiceBusQueueMessage: &ServiceBusQueueMessage{
					ServiceBusMessage: ServiceBusMessage{
						Authentication:            &ServiceBusAuthentication{SASKeyName: "QPolicy", SASKey: "k", Type: ServiceBusAuthSharedAccessKey},
						BrokeredMessageProperties: &BrokeredMessageProperties{},
						CustomMessageProperties:   map[string]string{"appname": "FromScheduler"},
						Message:                   "Some message",
						Namespace:                 "mySBNamespace",
						TransportType:             TransportNetMessaging,
					},
					QueueName: "q1",
				}}
			},
		},
		{
			name: "a Service Bus topic action with every brokered property is read",
			in: `{"type":"ServiceBusTopic","serviceBusTopicMessage":{"topicPath":"t1","namespace":"ns","transportType":"AMQP",
				"brokeredMessageProperties":{"contentType":"text/plain","correlationId":"c","forcePersistence":false,"label":"l","messageId":"m",
				"partitionKey":"p","replyTo":"r","replyToSessionId":"rs","scheduledEnqueueTimeUtc":"2026-01-02T03:04:05","sessionId":"s",
				"timeToLive":"P1D","to":"t","viaPartitionKey":"v"}}}`,
			want: func(t *testing.T) *JobAction {
				return &JobAction{Type: ActionServiceBusTopic, ServiceBusTopicMessage: &ServiceBusTopicMessage{
					ServiceBusMessage: ServiceBusMessage{
						Namespace:     "ns",
						TransportType: TransportAMQP,
						BrokeredMessageProperties: &BrokeredMessageProperties{ContentType: "text/plain", CorrelationID: "c", ForcePersistence: ptr(false),
							Label: "l", MessageID: "m", PartitionKey: "p", ReplyTo: "r", ReplyToSessionID: "rs",
							ScheduledEnqueueTimeUTC: utc(t, "2026-01-02T03:04:05Z"), SessionID: "s", TimeToLive: "P1D", To: "t", ViaPartitionKey: "v"},
					},
					TopicPath: "t1",
				}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, errs := DecodeJob([]byte(`{"action":` + tt.in + `}`))
			if len(errs) > 0 {
				t.Fatalf("DecodeJob: unexpected errors:\n%v", errs)
			}
			want := JobProperties{Action: tt.want(t)}
			if !sameJob(got.Properties, want) {
				t.Errorf("DecodeJob =\n%s\nwant\n%s", marshalUTC(t, got.Properties), marshalUTC(t, want))
			}
		})
	}
}
