package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal/sealtest"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// publishAction publishes an execution of action for occurrence n, its
// secrets sealed as the planner seals them, under the message id msgID.
func (e *env) publishAction(t *testing.T, n int, action *contracts.JobAction) {
	t.Helper()
	due := t0.Add(time.Duration(n) * time.Minute)
	id := contracts.OccurrenceID(testJob, due, contracts.MainAction, 0)
	sealed, err := json.Marshal(e.sealer.SealAction(action, id))
	if err != nil {
		t.Fatal(err)
	}
	e.publish(t, contracts.Execution{
		Version: contracts.MessageVersion, OccurrenceID: id,
		OccurrenceKey: contracts.OccurrenceKey(testJob, due, contracts.MainAction, 0),
		Job:           testJob, ActionName: contracts.MainAction, Occurrence: int64(n), ExpectedTime: due,
		DispatchedAt: due, Action: sealed, Timeout: contracts.MillisOf(time.Minute), Revision: 3, LastAttempt: true,
	}, id)
}

func (e *env) publish(t *testing.T, x contracts.Execution, msgID string) {
	t.Helper()
	data, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(contracts.ExecSubjectPrefix + testJob.Tokens())
	msg.Data = data
	if _, err := e.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(msgID)); err != nil {
		t.Fatal(err)
	}
}

// takeLast removes the newest execution from EXEC and returns it, as
// someone who can read and write the stream could.
func (e *env) takeLast(t *testing.T) contracts.Execution {
	t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, contracts.ExecStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, contracts.ExecSubjectPrefix+">")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, m.Sequence); err != nil {
		t.Fatal(err)
	}
	var x contracts.Execution
	if err := json.Unmarshal(m.Data, &x); err != nil {
		t.Fatal(err)
	}
	return x
}

// changeAction changes the sealed action of x, leaving its sealed values as
// they are.
func changeAction(t *testing.T, x *contracts.Execution, change func(*contracts.JobAction)) {
	t.Helper()
	var a contracts.JobAction
	if err := json.Unmarshal(x.Action, &a); err != nil {
		t.Fatal(err)
	}
	change(&a)
	var err error
	if x.Action, err = json.Marshal(a); err != nil {
		t.Fatal(err)
	}
}

// Regression: an execution taken from EXEC, its request.uri changed and
// published again, made the worker open the password and send it to the
// new URI.
func TestAnExecutionChangedAfterItWasSealedIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	var (
		intended atomic.Value // the Authorization header the intended target got
		diverted atomic.Int32 // requests that reached the other listener
	)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		intended.Store(r.Header.Get("Authorization"))
	}))
	t.Cleanup(target.Close)
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { diverted.Add(1) }))
	t.Cleanup(other.Close)

	basic := func(uri string) *contracts.JobAction {
		return &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{URI: uri, Method: "POST",
			Authentication: &contracts.HTTPAuthentication{Type: contracts.HTTPAuthBasic, Username: "u", Password: "s3cret-pass"}}}
	}
	e.publishAction(t, 1, basic(target.URL+"/hook"))
	e.publishAction(t, 2, basic(target.URL+"/hook"))
	x := e.takeLast(t)
	changeAction(t, &x, func(a *contracts.JobAction) { a.Request.URI = other.URL + "/hook" })
	e.publish(t, x, "replayed")

	sender, err := httpaction.New(httpaction.Config{AllowLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sender.Close() })
	var logs testkit.Logs
	e.worker(t, sender, func(c *Config) { c.Logger = logs.Logger() })
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 2 }, "%d results, want 2", len(e.results(t)))

	if got, _ := intended.Load().(string); !strings.HasPrefix(got, "Basic ") {
		t.Fatalf("the unchanged execution reached its target with Authorization %q", got)
	}
	if n := diverted.Load(); n != 0 {
		t.Fatalf("the changed execution sent %d requests to %s", n, other.URL)
	}
	var refused *contracts.Result
	for _, ev := range e.results(t) {
		if ev.Data.Occurrence == 2 {
			refused = &ev.Data
		}
	}
	if refused == nil || refused.Outcome != contracts.Failed ||
		!strings.Contains(refused.Message, "the sealed password is not bound to this destination") ||
		!strings.Contains(refused.Message, contracts.URIOrigin(other.URL)) || strings.Contains(refused.Message, "s3cret") {
		t.Fatalf("the changed execution's result: %+v", refused)
	}
	if !logs.Contains("level=WARN", "job="+testJob.Key(), "occurrence="+x.OccurrenceKey, "not bound to where its action sends it") ||
		strings.Contains(logs.String(), "s3cret") {
		t.Fatalf("the refusal was not logged as a warning naming the job and occurrence, or the secret was:\n%s", logs.String())
	}
}

func TestQueueSecretsAreBoundToTheirAccountOrNamespace(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	sb := contracts.ServiceBusMessage{Namespace: "ns", Message: "m",
		Authentication: &contracts.ServiceBusAuthentication{SASKeyName: "Root", SASKey: "SB-KEY"}}
	for n, c := range []struct {
		action *contracts.JobAction
		change func(*contracts.JobAction)
		want   string
	}{
		{&contracts.JobAction{Type: contracts.ActionStorageQueue, QueueMessage: &contracts.StorageQueueMessage{
			StorageAccount: "acct", QueueName: "q", SASToken: "sig=SAS", Message: "m"}},
			func(a *contracts.JobAction) { a.QueueMessage.StorageAccount = "attacker" },
			`the sealed sasToken is not bound to this destination (queueMessage.storageAccount="attacker")`},
		{&contracts.JobAction{Type: contracts.ActionServiceBusQueue, ServiceBusQueueMessage: &contracts.ServiceBusQueueMessage{ServiceBusMessage: sb, QueueName: "q"}},
			func(a *contracts.JobAction) { a.ServiceBusQueueMessage.Namespace = "attacker" },
			`the sealed sasKey is not bound to this destination (serviceBusQueueMessage.namespace="attacker")`},
	} {
		e.publishAction(t, n+1, c.action)
		x := e.takeLast(t)
		changeAction(t, &x, c.change)
		e.publish(t, x, "replayed-"+x.OccurrenceID)
	}
	rec := newRecorder()
	e.worker(t, rec, nil)
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 2 }, "%d results, want 2", len(e.results(t)))
	if rec.count() != 0 {
		t.Fatalf("%d changed executions were performed", rec.count())
	}
	for _, ev := range e.results(t) {
		if want := []string{"", "sasToken", "sasKey"}[ev.Data.Occurrence]; !strings.Contains(ev.Data.Message, want) ||
			strings.Contains(ev.Data.Message, "SAS") || strings.Contains(ev.Data.Message, "SB-KEY") {
			t.Errorf("result %+v", ev.Data)
		}
	}
}

func TestAnExecutionSealedInFormatV1IsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	e.execution(t, 1, nil)
	x := e.takeLast(t)
	var a contracts.JobAction
	if err := json.Unmarshal(x.Action, &a); err != nil {
		t.Fatal(err)
	}
	opened, err := e.sealer.OpenAction(&a, x.OccurrenceID)
	if err != nil {
		t.Fatal(err)
	}
	if x.Action, err = json.Marshal(sealtest.SealActionV1(e.sealer, opened, x.OccurrenceID)); err != nil {
		t.Fatal(err)
	}
	e.publish(t, x, "v1")
	rec := newRecorder()
	e.worker(t, rec, nil)
	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result")
	if r := e.results(t)[0].Data; r.Outcome != contracts.Failed || !strings.Contains(r.Message, "sealed by an earlier planner in format v1") {
		t.Fatalf("result %+v", r)
	}
	if rec.count() != 0 {
		t.Fatal("an execution sealed in format v1 was performed")
	}
}
