package e2e

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2/sas"

	"github.com/jobscheduler/scheduler/actions/builtin"
	"github.com/jobscheduler/scheduler/actions/servicebus"
	"github.com/jobscheduler/scheduler/actions/storagequeue"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/internal/testpeers"
)

// envelope is the XML a StorageQueue action puts on the queue.
type envelope struct {
	ExecutionTag             string
	ClientRequestID          string `xml:"ClientRequestId"`
	ExpectedExecutionTime    string
	SchedulerJobID           string `xml:"SchedulerJobId"`
	SchedulerJobCollectionID string `xml:"SchedulerJobCollectionId"`
	Region                   string
	Message                  string
}

func parseEnvelope(t *testing.T, text string) envelope {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(text))
	// The envelope declares utf-16, as the original service's did; its text
	// arrives as UTF-8.
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var e envelope
	if err := d.Decode(&e); err != nil {
		t.Fatalf("the queued message is not the envelope: %v\n%s", err, text)
	}
	return e
}

func queueJob(account, queue, sasToken, message, extra string) string {
	return fmt.Sprintf(`{"properties": {"startTime": "2026-06-01T08:01:00Z", "action": {"type": "StorageQueue",
		"queueMessage": {"storageAccount": %q, "queueName": %q, "sasToken": %q, "message": %q}%s}}}`,
		account, queue, sasToken, message, extra)
}

// A StorageQueue job puts the original service's envelope on the queue at
// its time; a missing queue fails the attempt, and the retry after the
// queue was created succeeds.
func TestStorageQueueJobs(t *testing.T) {
	t.Parallel()
	az := testpeers.Azurite(t)
	s := start(t, options{actions: builtin.Config{StorageQueue: storagequeue.Config{EndpointTemplate: az.EndpointTemplate(), Region: "West Europe"}}})
	az.CreateQueue(t, "orders")
	token := az.SAS(t, "orders", sas.QueuePermissions{Add: true})
	message := `<order id="7"/> & more`
	s.put("enqueue", queueJob(az.Account, "orders", token, message, ""))
	lateToken := az.SAS(t, "later", sas.QueuePermissions{Add: true})
	s.put("late-queue", queueJob(az.Account, "later", lateToken, "second",
		`, "retryPolicy": {"retryType": "Fixed", "retryInterval": "PT15S", "retryCount": 1}`))

	s.tick(time.Minute)
	got := parseEnvelope(t, az.ReceiveMessages(t, "orders", 1, 30*time.Second)[0])
	if !hex32.MatchString(got.ExecutionTag) || got.SchedulerJobID != "enqueue" || got.SchedulerJobCollectionID != "jc" ||
		got.ExpectedExecutionTime != "2026-06-01T08:01:00" || got.Region != "West Europe" || got.Message != message ||
		len(got.ClientRequestID) != 36 {
		t.Errorf("envelope %+v", got)
	}
	j := s.waitJob("enqueue", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	if q := j.Properties.Action.QueueMessage; q == nil || q.SASToken != "" {
		t.Errorf("the API returned the SAS token: %+v", q)
	}
	h := s.waitHistory("enqueue", 1)[0]
	if h.Status != "" || !strings.HasPrefix(h.Message, "StorageQueue Action - ") || strings.Contains(h.Message, "sig=") {
		t.Errorf("history entry %+v", h)
	}

	s.waitJob("late-queue", func(j contracts.JobDefinition) bool { return executions(j) == 1 }, "the first attempt is not counted")
	failed := s.waitHistory("late-queue", 1)[0]
	if failed.Status != contracts.StatusFailed || !strings.Contains(failed.Message, "QueueNotFound") {
		t.Errorf("the attempt on a missing queue: %+v", failed)
	}
	az.CreateQueue(t, "later")
	s.tick(15 * time.Second)
	second := parseEnvelope(t, az.ReceiveMessages(t, "later", 1, 30*time.Second)[0])
	if second.Message != "second" || second.ExecutionTag == got.ExecutionTag {
		t.Errorf("the retried envelope %+v", second)
	}
	j = s.waitJob("late-queue", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	if st := j.Properties.Status; st.ExecutionCount != 2 || st.FailureCount != 1 || st.FaultedCount != 0 {
		t.Errorf("status %+v", st)
	}
}

func busJob(kind, namespace, entity, extra string) string {
	payload, entityField := "serviceBusQueueMessage", "queueName"
	if kind == "ServiceBusTopic" {
		payload, entityField = "serviceBusTopicMessage", "topicPath"
	}
	return fmt.Sprintf(`{"properties": {"startTime": "2026-06-01T08:01:00Z", "action": {"type": %q,
		%q: {"namespace": %q, %q: %q, "message": "payload for %s", "transportType": "AMQP",
			"authentication": {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": "c2VjcmV0LWtleS12YWx1ZQ=="},
			"brokeredMessageProperties": {"label": "nightly", "correlationId": "corr-1", "contentType": "text/plain"},
			"customMessageProperties": {"source": "scheduler"}}%s}}}`,
		kind, payload, namespace, entityField, entity, entity, extra)
}

// ServiceBusQueue and ServiceBusTopic jobs send their message with the
// brokered and custom properties, the message id being the attempt id; a
// queue the namespace does not have fails the attempt and the error action
// (here a message to another queue) runs.
func TestServiceBusJobs(t *testing.T) {
	t.Parallel()
	bus := testpeers.ServiceBus(t, testpeers.MissingEntities("absent"))
	// Jobs name a namespace; the worker's endpoint template says where
	// namespaces are, here the peer's loopback address for every one.
	s := start(t, options{actions: builtin.Config{ServiceBus: servicebus.Config{Emulator: true, EndpointTemplate: "sb://" + bus.Endpoint() + "/"}}})
	s.put("to-queue", busJob("ServiceBusQueue", "orders-prod", "orders", ""))
	s.put("to-topic", busJob("ServiceBusTopic", "orders-prod", "events", ""))
	s.put("refused", busJob("ServiceBusQueue", "orders-prod", "absent", `, "retryPolicy": {"retryType": "None"},
		"errorAction": {"type": "ServiceBusQueue", "serviceBusQueueMessage": {"namespace": "orders-errors", "queueName": "errors", "message": "refused",
			"authentication": {"type": "SharedAccessKey", "sasKeyName": "send", "sasKey": "b3RoZXIta2V5"}}}`))
	s.tick(time.Minute)

	byEntity := map[string]testpeers.ServiceBusMessage{}
	testkit.Eventually(t, 30*time.Second, func() bool {
		for _, m := range bus.Messages() {
			byEntity[m.Entity] = m
		}
		return len(byEntity) == 3
	}, "the bus got messages for %d entities, want orders, events and errors", len(byEntity))
	for _, entity := range []string{"orders", "events"} {
		m := byEntity[entity]
		if m.Body != "payload for "+entity || !hex32.MatchString(m.MessageID) || m.Subject != "nightly" || m.CorrelationID != "corr-1" ||
			m.ContentType != "text/plain" || m.ApplicationProperties["source"] != "scheduler" {
			t.Errorf("message to %s: %+v", entity, m)
		}
	}
	if m := byEntity["errors"]; m.Body != "refused" {
		t.Errorf("the error action's message: %+v", m)
	}
	for name, kind := range map[string]string{"to-queue": "ServiceBusQueue", "to-topic": "ServiceBusTopic"} {
		s.waitJob(name, func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
		if h := s.waitHistory(name, 1)[0]; h.Status != "" || !strings.HasPrefix(h.Message, kind+" Action - ") {
			t.Errorf("%s: history entry %+v", name, h)
		}
	}
	j := s.waitJob("refused", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateFaulted }, "not Faulted")
	if st := j.Properties.Status; st.ExecutionCount != 1 || st.FailureCount != 1 || st.FaultedCount != 1 {
		t.Errorf("status %+v", st)
	}
	entries := s.waitHistory("refused", 2)
	if entries[1].Status != contracts.StatusFailed || !strings.Contains(entries[1].Message, "the entity does not exist") ||
		strings.Contains(entries[1].Message, "c2VjcmV0") || entries[0].ActionName != contracts.ErrorAction {
		t.Errorf("entries %+v", entries)
	}
	code, body := testkit.Call(t, "GET", s.base+"/jobs/to-queue", "")
	if code != http.StatusOK || strings.Contains(body, "c2VjcmV0LWtleS12YWx1ZQ") {
		t.Errorf("GET returned the key: %s", body)
	}
}
