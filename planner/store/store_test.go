package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// bundle holds what a test needs beside the Store.
type bundle struct {
	ns     *server.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	kv     jetstream.KeyValue // the raw bucket, to look at what is at rest
	sealer *seal.Sealer
}

func setup(t *testing.T) (*Store, *bundle) {
	t.Helper()
	ns := testkit.NATS(t)
	nc, js := testkit.JetStream(t, ns)
	sealer := newSealer(t)
	s, err := Open(context.Background(), js, Config{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), contracts.JobsBucket)
	if err != nil {
		t.Fatal(err)
	}
	return s, &bundle{ns: ns, nc: nc, js: js, kv: kv, sealer: sealer}
}

func newSealer(t *testing.T) *seal.Sealer {
	t.Helper()
	key, err := seal.ParseKey(seal.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	s, err := seal.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var collRef = contracts.CollectionRef{Subscription: "Sub-1", ResourceGroup: "RG", Collection: "Coll"}

func newCollection(ref contracts.CollectionRef) Collection {
	return Collection{
		Ref:      ref,
		Location: "South Central US",
		Tags:     map[string]string{"team": "billing"},
		Properties: contracts.JobCollectionProperties{
			Sku:   &contracts.Sku{Name: "Standard"},
			State: "Enabled",
		},
	}
}

func mustPutCollection(t *testing.T, s *Store, ref contracts.CollectionRef) Collection {
	t.Helper()
	c, err := s.PutCollection(context.Background(), newCollection(ref), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// secrets are the secret strings of newJob's action.
var secrets = []string{"QUEUE-SAS-TOKEN", "BASIC-PASSWORD", "ERROR-SB-KEY"}

func newJob(ref contracts.JobRef) Job {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return Job{
		Ref: ref,
		Properties: contracts.JobProperties{
			StartTime: &start,
			State:     "Enabled",
			Recurrence: &contracts.Recurrence{
				Frequency: "Minute", Interval: new(5),
			},
			Action: &contracts.JobAction{
				Type: "StorageQueue",
				QueueMessage: &contracts.StorageQueueMessage{
					StorageAccount: "acct", QueueName: "q", SASToken: "QUEUE-SAS-TOKEN", Message: "hi",
				},
				ErrorAction: &contracts.JobAction{
					Type: "ServiceBusQueue",
					ServiceBusQueueMessage: &contracts.ServiceBusQueueMessage{
						QueueName: "errors",
						ServiceBusMessage: contracts.ServiceBusMessage{
							Namespace:      "ns",
							Authentication: &contracts.ServiceBusAuthentication{SASKey: "ERROR-SB-KEY", SASKeyName: "Root", Type: "SharedAccessKey"},
						},
					},
					Request: &contracts.HTTPRequest{
						URI: "https://example.com", Method: "GET",
						Authentication: &contracts.HTTPAuthentication{Type: "Basic", Username: "me", Password: "BASIC-PASSWORD"},
					},
				},
			},
		},
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()

	t.Run("the bucket is file-backed and keeps one revision", func(t *testing.T) {
		t.Parallel()
		_, b := setup(t)
		st, err := b.kv.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.History() != 1 || st.BackingStore() != "JetStream" {
			t.Fatalf("history %d, backing store %s", st.History(), st.BackingStore())
		}
		info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
		if info.Config.Storage != jetstream.FileStorage {
			t.Fatalf("storage %v, want file", info.Config.Storage)
		}
	})

	t.Run("a second store binds the existing bucket", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		other, err := Open(context.Background(), b.js, Config{Sealer: b.sealer, Replicas: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.GetCollection(context.Background(), collRef); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a store needs a sealer", func(t *testing.T) {
		t.Parallel()
		_, js := testkit.JetStream(t, testkit.NATS(t))
		if _, err := Open(context.Background(), js, Config{}); err == nil {
			t.Fatal("Open without a Sealer succeeded")
		}
	})
}

func TestDataSurvivesANATSRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	sealer := newSealer(t)

	ns := testkit.NATSIn(t, dir)
	nc, js := testkit.JetStream(t, ns)
	s, err := Open(ctx, js, Config{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	mustPutCollection(t, s, collRef)
	want, err := s.CreateJob(ctx, newJob(collRef.Job("Nightly")), 0)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()

	_, js = testkit.JetStream(t, testkit.NATSIn(t, dir))
	s, err = Open(ctx, js, Config{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetCollection(ctx, collRef); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetJob(ctx, collRef.Job("nightly"))
	if err != nil {
		t.Fatal(err)
	}
	assertJob(t, got, want)
	if _, err := s.CreateJob(ctx, newJob(collRef.Job("Nightly")), 0); !errors.Is(err, ErrExists) {
		t.Fatalf("recreating after restart: err = %v, want ErrExists", err)
	}
}

// Regression: one request for a job with a 4,050-character name closed the
// planner's NATS connection for good (the server refuses a protocol line
// over 4,096 bytes). The store refuses every name that breaks the naming
// rules before it builds a key or a subject.
func TestInvalidNamesNeverReachNATS(t *testing.T) {
	t.Parallel()
	s, b := setup(t)
	ctx := context.Background()
	mustPutCollection(t, s, collRef)
	long := strings.Repeat("x", 4050)
	badColls := map[string]contracts.CollectionRef{
		"a long subscription":        {Subscription: long, ResourceGroup: "rg", Collection: "c"},
		"a long resource group":      {Subscription: "s", ResourceGroup: long, Collection: "c"},
		"a long collection":          {Subscription: "s", ResourceGroup: "rg", Collection: long},
		"an empty collection":        {Subscription: "s", ResourceGroup: "rg"},
		"a collection with a period": {Subscription: "s", ResourceGroup: "rg", Collection: "a.b"},
	}
	for name, ref := range badColls {
		calls := map[string]func() error{
			"GetCollection":    func() error { _, err := s.GetCollection(ctx, ref); return err },
			"PutCollection":    func() error { _, err := s.PutCollection(ctx, newCollection(ref), 0); return err },
			"DeleteCollection": func() error { return s.DeleteCollection(ctx, ref) },
			"ListJobs":         func() error { _, err := s.ListJobs(ctx, ref); return err },
			"CountJobs":        func() error { _, err := s.CountJobs(ctx, ref); return err },
			"ListCollections":  func() error { _, err := s.ListCollections(ctx, ref.Subscription, ref.ResourceGroup); return err },
		}
		if ref.Subscription != long && ref.ResourceGroup != long {
			delete(calls, "ListCollections") // a bad collection name is not part of a listing
		}
		for call, f := range calls {
			if err := f(); !errors.Is(err, ErrInvalidName) {
				t.Errorf("%s with %s: %v, want ErrInvalidName", call, name, err)
			}
		}
	}
	job := newJob(collRef.Job(long))
	for call, f := range map[string]func() error{
		"GetJob":      func() error { _, err := s.GetJob(ctx, job.Ref); return err },
		"GetJobByKey": func() error { _, err := s.GetJobByKey(ctx, job.Ref.KVKey()); return err },
		"CreateJob":   func() error { _, err := s.CreateJob(ctx, job, 0); return err },
		"UpdateJob":   func() error { _, err := s.UpdateJob(ctx, job, 1); return err },
		"EndJob":      func() error { _, err := s.EndJob(ctx, job.Ref, contracts.JobStateCompleted, time.Now()); return err },
		"DeleteJob":   func() error { return s.DeleteJob(ctx, job.Ref) },
		"ImportJobs":  func() error { return s.ImportJobs(ctx, []Job{job}) },
	} {
		if err := f(); !errors.Is(err, ErrInvalidName) {
			t.Errorf("%s with a long job name: %v, want ErrInvalidName", call, err)
		}
	}
	if err := b.nc.Flush(); err != nil || b.nc.Status() != nats.CONNECTED {
		t.Fatalf("the connection is %v after the requests: %v", b.nc.Status(), err)
	}
	if _, err := s.GetCollection(ctx, collRef); err != nil {
		t.Fatalf("the store no longer works: %v", err)
	}
}
