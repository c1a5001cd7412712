package contracts

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fuzzSeeds are realistic job definitions: both shapes, every action type,
// schedules, time zones and both duration formats.
var fuzzSeeds = []string{
	// The concepts document's example (CT18), in its envelope.
	`{"properties":{"startTime":"2012-08-04T00:00Z","action":{"type":"Http","request":{"uri":"http://contoso.com/some-method","method":"PUT","body":"Posting from a timer","headers":{"Content-Type":"application/json"}},"retryPolicy":{"retryType":"None"},"errorAction":{"type":"Http","request":{"uri":"http://contoso.com/notifyError","method":"POST"}}},"recurrence":{"frequency":"Week","interval":1,"schedule":{"weekDays":["Monday","Wednesday","Friday"],"hours":[10,22]},"count":10,"endTime":"2012-11-04"},"state":"Disabled","status":{"lastExecutionTime":"2007-03-01T13:00:00Z","executionCount":3,"failureCount":0,"faultedCount":0}}}`,
	// The .NET SDK's recorded storage queue job, bare, TimeSpan retry.
	`{"startTime":"2015-07-13T00:00:00Z","action":{"type":"StorageQueue","queueMessage":{"storageAccount":"schedulersdktest","queueName":"queue1","sasToken":"?sv=2015-04-05&sig=abc","message":"some message!"},"retryPolicy":{"retryType":"Fixed","retryInterval":"00:01:00","retryCount":10}},"recurrence":{"frequency":"Week","interval":1,"count":1000,"schedule":{"weekDays":["Monday"],"hours":[5,10,15,20],"minutes":[0,10,20,30,40,50]}},"state":"Enabled"}`,
	// Service Bus queue, lower-case enums (CT18).
	`{"action":{"type":"serviceBusQueue","serviceBusQueueMessage":{"queueName":"q1","namespace":"mySBNamespace","transportType":"netMessaging","authentication":{"sasKeyName":"QPolicy","sasKey":"k3y","type":"sharedAccessKey"},"message":"Some message","brokeredMessageProperties":{"timeToLive":"PT1H","forcePersistence":true,"scheduledEnqueueTimeUtc":"2026-01-02T03:04:05"},"customMessageProperties":{"appname":"FromScheduler","n":5}}},"recurrence":{"frequency":"minute","interval":5}}`,
	// Service Bus topic with an error action of another type.
	`{"properties":{"action":{"type":"ServiceBusTopic","serviceBusTopicMessage":{"topicPath":"t1","namespace":"ns","authentication":{"sasKeyName":"p","sasKey":"s"}},"errorAction":{"type":"StorageQueue","queueMessage":{"storageAccount":"acct","queueName":"errors","sasToken":"?sig=x","message":"failed"}}}}}`,
	// Monthly occurrences, a time zone and a local start time.
	`{"startTime":"2026-03-07T02:30","action":{"type":"Https","request":{"uri":"https://example.com/run","method":"POST","authentication":{"type":"Basic","username":"u","password":"p"}}},"recurrence":{"frequency":"Month","schedule":{"monthlyOccurrences":[{"day":"Friday","Occurrence":1},{"day":"friday","occurrence":-1}],"hours":5,"minutes":15},"timeZone":"America/New_York","count":4}}`,
	// Client certificate and OAuth authentication, month days.
	`{"action":{"type":"Https","request":{"uri":"https://example.com","method":"GET","authentication":{"type":"ClientCertificate","pfx":"AAEC","password":"pw","certificateExpirationDate":"2030-01-01T00:00:00+01:00"}},"errorAction":{"type":"Http","request":{"uri":"http://example.com/e","method":"POST","authentication":{"type":"ActiveDirectoryOAuth","tenant":"t","audience":"https://management.core.windows.net/","clientId":"c","secret":"s"}}}},"recurrence":{"frequency":"month","monthDays":[1,-1,15],"schedule":{"monthDays":[-1,1]},"endTime":"2030-12-31T23:59:59.999-0800"}}`,
	// Odd but accepted spellings.
	`{"STARTTIME":"2013-01-09t09:30:00z","Action":{"Type":"HTTP","Request":{"URI":"http://x","Method":"get"},"RetryPolicy":{"RetryType":"FIXED","RetryInterval":"pt30s","RetryCount":4.0}},"Recurrence":{"Frequency":"DAY","Interval":2,"Schedule":{}}}`,
	// Empty arrays and nulls.
	`{"action":null,"recurrence":{"frequency":"Hour","schedule":{"hours":[],"minutes":null,"weekDays":[]}},"state":null}`,
	// A collection of problems.
	`{"startTime":"next tuesday","action":{"type":"ftp"},"recurrence":{"frequency":"fortnight","interval":"5","timeZone":"Mars/Base"}}`,
	`[]`,
	`{"properties":5}`,
}

func FuzzDecodeJob(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		job, errs := DecodeJob(data)
		if len(errs) > 0 {
			return
		}
		out, err := json.Marshal(JobDefinition{Properties: job.Properties})
		if err != nil {
			t.Fatalf("marshalling a job that decoded without errors: %v", err)
		}
		again, errs := DecodeJob(out)
		// Escaping and normalised date-times can make the output longer than
		// the input; the size limit is for what users send.
		if len(out) > MaxJobBytes && len(errs) > 0 && errs[0].Path == "" && strings.Contains(errs[0].Message, "the limit is") {
			errs = errs[1:]
		}
		if len(errs) > 0 {
			t.Fatalf("decoding the marshalled job %s: %v", out, errs)
		}
		if again.Prefix != envelopePrefix {
			t.Errorf("the marshalled job was read with prefix %q, want %q", again.Prefix, envelopePrefix)
		}
		want, got := marshalUTC(t, job.Properties), marshalUTC(t, again.Properties)
		if want != got {
			t.Errorf("round trip changed the job:\n first: %s\nsecond: %s", want, got)
		}
	})
}

// marshalUTC marshals p with every time in UTC, so that two jobs compare
// equal exactly when they hold the same values and instants.
func marshalUTC(t *testing.T, p JobProperties) string {
	t.Helper()
	c := p.Clone()
	timesToUTC(reflect.ValueOf(&c).Elem())
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshalling %+v: %v", c, err)
	}
	return string(out)
}

// timesToUTC sets every time.Time reachable from v to UTC.
func timesToUTC(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			timesToUTC(v.Elem())
		}
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			v.Set(reflect.ValueOf(t.UTC()))
			return
		}
		for i := range v.NumField() {
			timesToUTC(v.Field(i))
		}
	case reflect.Slice:
		for i := range v.Len() {
			timesToUTC(v.Index(i))
		}
	}
}
