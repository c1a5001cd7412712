package intake

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/store"
)

type bundle struct {
	ns    *server.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	store *store.Store
	api   *api.Server
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ns := testkit.NATS(t)
	nc, js := testkit.JetStream(t, ns)
	sealer, _ := seal.New(bytes.Repeat([]byte{9}, 32))
	st, err := store.Open(context.Background(), js, store.Config{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	coll := contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc"}
	if _, err := st.PutCollection(context.Background(), store.Collection{Ref: coll}, 0); err != nil {
		t.Fatal(err)
	}
	return &bundle{ns: ns, nc: nc, js: js, store: st, api: api.New(st, nil, api.Config{})}
}

func (b *bundle) start(t *testing.T) {
	t.Helper()
	in, err := Start(context.Background(), b.nc, b.js, b.api, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.Stop)
}

const job = `{"properties": {"startTime": "2030-01-01T00:00:00Z",
	"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST"}},
	"recurrence": {"frequency": "Day"}}}`

const invalidJob = `{"properties": {"action": {"type": "Http"}, "recurrence": {"frequency": "Fortnight"}}}`

func TestRequestsAreAnsweredWithTheStoredJobOrTheError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start(t)
	reply, err := b.nc.Request(contracts.RequestSubjectPrefix+"sub.rg.jc.nightly", []byte(job), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Header.Get(StatusHeader); got != "201" {
		t.Fatalf("status %q: %s", got, reply.Data)
	}
	if !strings.Contains(string(reply.Data), `"name":"jc/nightly"`) {
		t.Fatalf("reply: %s", reply.Data)
	}
	if _, err := b.store.GetJob(context.Background(), contracts.JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc", Job: "nightly"}); err != nil {
		t.Fatalf("not stored: %v", err)
	}

	reply, err = b.nc.Request(contracts.RequestSubjectPrefix+"sub.rg.jc.bad", []byte(invalidJob), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Header.Get(StatusHeader); got != "400" {
		t.Fatalf("status %q", got)
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(reply.Data, &body); err != nil || body.Error.Code != "BadRequest" ||
		!strings.Contains(body.Error.Message, "properties.recurrence.frequency") {
		t.Fatalf("error body: %v %s", err, reply.Data)
	}

	reply, err = b.nc.Request(contracts.RequestSubjectPrefix+"sub.rg.missing.j", []byte(job), 10*time.Second)
	if err != nil || reply.Header.Get(StatusHeader) != "404" {
		t.Fatalf("a job in a missing collection: %v %s", err, reply.Data)
	}
}

func TestStreamMessagesAreAppliedWhenAPlannerStarts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if err := EnsureStream(ctx, b.js, Config{}); err != nil { // created by an earlier planner
		t.Fatal(err)
	}
	rejections := make(chan *nats.Msg, 4)
	sub, err := b.nc.ChanSubscribe(contracts.RejectedSubjectPrefix+">", rejections)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	// Published while no planner runs.
	if _, err := b.js.Publish(ctx, contracts.IntakeSubjectPrefix+"sub.rg.jc.nightly", []byte(job)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(ctx, contracts.IntakeSubjectPrefix+"sub.rg.jc.bad", []byte(invalidJob)); err != nil {
		t.Fatal(err)
	}
	b.start(t)
	ref := contracts.JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc", Job: "nightly"}
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, err := b.store.GetJob(ctx, ref)
		return err == nil
	}, "the published job was not stored")
	select {
	case m := <-rejections:
		var r Rejection
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		if m.Subject != contracts.RejectedSubjectPrefix+"sub.rg.jc.bad" || r.Status != 400 || !strings.Contains(string(r.Error), "BadRequest") {
			t.Fatalf("rejection on %s: %s", m.Subject, m.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no rejection event")
	}
	if _, err := b.store.GetJob(ctx, contracts.JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc", Job: "bad"}); err == nil {
		t.Fatal("the invalid job was stored")
	}
}

// Regression: a name over its limit reached NATS and closed the planner's
// connection for good. A request or stream message whose subject holds a
// name far over its limit is refused with 400, and the planner's
// connection stays up: the rejection event, whose subject would pass the
// 4,096 bytes of a protocol line NATS accepts, is not published.
func TestOverlongNamesDoNotBreakThePlannersConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.start(t)
	client, _ := testkit.JetStream(t, b.ns)
	ctx := context.Background()

	reply, err := client.Request(contracts.RequestSubjectPrefix+"sub.rg.jc."+strings.Repeat("x", 3900), []byte(job), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Header.Get(StatusHeader); got != "400" || !strings.Contains(string(reply.Data), "InvalidResourceName") {
		t.Fatalf("status %q: %.300s", got, reply.Data)
	}
	// The longest subject a client can publish without a reply: the line
	// "PUB <subject> 2" is 4,096 bytes less two; the rejection's would be
	// longer than NATS accepts.
	subject := contracts.IntakeSubjectPrefix + "sub.rg.jc."
	subject += strings.Repeat("x", 4094-len(subject))
	if err := client.Publish(subject, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := client.Flush(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		info, err := b.js.Stream(ctx, contracts.IntakeStream)
		return err == nil && info.CachedInfo().State.Msgs == 0 && info.CachedInfo().State.LastSeq == 1
	}, "the intake message was not taken")
	if st := b.nc.Status(); st != nats.CONNECTED {
		t.Fatalf("the planner's connection is %v: %v", st, b.nc.LastError())
	}
	reply, err = client.Request(contracts.RequestSubjectPrefix+"sub.rg.jc.after", []byte(job), 10*time.Second)
	if err != nil || reply.Header.Get(StatusHeader) != "201" {
		t.Fatalf("a job after the long names: %v %s", err, reply.Data)
	}
}
