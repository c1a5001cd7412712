package history

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

var (
	t0    = time.Date(2026, 8, 1, 6, 0, 0, 0, time.UTC)
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
)

func jobRef(name string) contracts.JobRef {
	return contracts.JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc", Job: name}
}

// result returns the result of attempt attempt of occurrence occ of job.
func result(job contracts.JobRef, occ int64, attempt int, outcome contracts.Outcome) contracts.Result {
	due := t0.Add(time.Duration(occ) * time.Minute)
	id, key := contracts.OccurrenceID(job, due, contracts.MainAction, attempt), contracts.OccurrenceKey(job, due, contracts.MainAction, attempt)
	return contracts.Result{Version: contracts.MessageVersion, OccurrenceID: id, OccurrenceKey: key, Job: job,
		ActionName: contracts.MainAction, Occurrence: occ, Attempt: attempt, ExpectedTime: due, LastAttempt: true,
		Outcome: outcome, StartTime: due.Add(time.Duration(attempt) * time.Second), EndTime: due.Add(time.Duration(attempt)*time.Second + 10*time.Millisecond),
		Message: fmt.Sprintf("attempt %d of occurrence %d", attempt, occ)}
}

type env struct {
	ns *server.Server
	js jetstream.JetStream
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{ns: testkit.NATS(t)}
	_, e.js = testkit.JetStream(t, e.ns)
	return e
}

// consumer starts a history consumer with its own connection, as another
// process would.
func (e *env) consumer(t *testing.T, cfg Config) *Consumer {
	t.Helper()
	_, js := testkit.JetStream(t, e.ns)
	cfg.Logger = quiet
	c, err := Start(context.Background(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// publish puts the result's event on RESULTS under msgID.
func (e *env) publish(t *testing.T, r contracts.Result, msgID string) {
	t.Helper()
	data, _ := json.Marshal(r.Event())
	msg := &nats.Msg{Subject: contracts.ResultSubjectPrefix + r.Job.Tokens(), Data: data, Header: nats.Header{}}
	if _, err := e.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(msgID)); err != nil {
		t.Fatal(err)
	}
}

// drained waits until the history consumer acknowledged n results.
func (e *env) drained(t *testing.T, n uint64) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, func() bool {
		c, err := e.js.Consumer(context.Background(), contracts.ResultsStream, contracts.HistoryConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= n && info.NumAckPending == 0 && info.NumPending == 0
	}, "the history consumer did not process %d results", n)
}

func TestEntriesAndTheirTally(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.consumer(t, Config{})
	job := jobRef("nightly")
	// Occurrence 1 fails twice and faults; occurrence 2 succeeds.
	first := result(job, 1, 0, contracts.Failed)
	first.LastAttempt = false
	results := []contracts.Result{first, result(job, 1, 1, contracts.Failed), result(job, 2, 0, contracts.Succeeded)}
	for _, r := range results {
		e.publish(t, r, r.OccurrenceID)
	}
	e.drained(t, 3)

	r := NewReader(e.js)
	entries, err := r.List(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries, want 3", len(entries))
	}
	for i, want := range []contracts.Result{results[2], results[1], results[0]} {
		h := entries[i]
		if h.OccurrenceID != want.OccurrenceID || h.RepeatCount != want.Occurrence || h.RetryCount != want.Attempt || h.Message != want.Message {
			t.Errorf("entry %d: %+v, want the entry of %s", i, h, want.OccurrenceKey)
		}
		if i > 0 && !(entries[i-1].ID < h.ID) {
			t.Errorf("ids %q then %q do not sort newest first", entries[i-1].ID, h.ID)
		}
	}
	if entries[0].Status != contracts.StatusCompleted || entries[1].Status != contracts.StatusFailed {
		t.Errorf("statuses %s, %s", entries[0].Status, entries[1].Status)
	}

	tallies, err := r.Tallies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := contracts.Tally{Occurrence: 2, OccurrenceTime: t0.Add(2 * time.Minute), Executions: 3, Failures: 2, Faulted: 1,
		LastExecution: t0.Add(2 * time.Minute), LastStatus: contracts.LastSucceeded, LastStatusTime: results[2].EndTime, Recent: contracts.AttemptTag(results[0].OccurrenceID) +
			contracts.AttemptTag(results[1].OccurrenceID) + contracts.AttemptTag(results[2].OccurrenceID)}
	if got := tallies[job.KVKey()]; len(tallies) != 1 || got != want {
		t.Errorf("tallies %+v, want %s: %+v", tallies, job.KVKey(), want)
	}
}

// A result stored already is not stored again, whether JetStream's
// duplicate window catches it or (another message id) the consumer does.
func TestAResultIsStoredOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.consumer(t, Config{})
	job := jobRef("once")
	r := result(job, 1, 0, contracts.Succeeded)
	e.publish(t, r, r.OccurrenceID)
	e.publish(t, r, "a-copy")
	e.drained(t, 2)
	entries, err := NewReader(e.js).List(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	tallies, _ := NewReader(e.js).Tallies(context.Background())
	if len(entries) != 1 || tallies[job.KVKey()].Executions != 1 {
		t.Fatalf("%d entries, tally %+v: the copy was stored", len(entries), tallies[job.KVKey()])
	}
}

// Two consumers share the work; the results of one job, processed by both
// at the same time, still give one entry each and one consistent tally.
func TestConsumersSharingOneJobKeepOneTally(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 2 {
		e.consumer(t, Config{Shards: 4})
	}
	job := jobRef("busy")
	const n = 200
	for i := range n {
		r := result(job, int64(i+1), 0, contracts.Failed)
		e.publish(t, r, r.OccurrenceID)
	}
	e.drained(t, n)
	r := NewReader(e.js)
	entries, err := r.List(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	tallies, err := r.Tallies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := tallies[job.KVKey()]; len(entries) != n || got.Executions != n || got.Failures != n || got.Faulted != n {
		t.Fatalf("%d entries, tally %+v, want %d of each", len(entries), got, n)
	}
	occurrences := make([]int, 0, n)
	for _, h := range entries {
		occurrences = append(occurrences, int(h.RepeatCount))
	}
	sort.Ints(occurrences)
	for i, o := range occurrences {
		if o != i+1 {
			t.Fatalf("occurrence %d is missing or stored twice", i+1)
		}
	}
}

func TestReaderWithoutHistory(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := NewReader(e.js)
	ctx := context.Background()
	entries, err := r.List(ctx, jobRef("none"))
	if err != nil || len(entries) != 0 {
		t.Fatalf("before the stream exists: %v, %v", entries, err)
	}
	if tallies, err := r.Tallies(ctx); err != nil || len(tallies) != 0 {
		t.Fatalf("tallies before the stream exists: %v, %v", tallies, err)
	}
	if err := r.Purge(ctx, jobRef("none").KVKey()); err != nil {
		t.Fatalf("purging before the stream exists: %v", err)
	}
	if err := r.Purge(ctx, "c.sub.rg.jc"); err == nil {
		t.Fatal("purging a collection's key is not refused")
	}
}

func TestPurgeForgetsOneJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.consumer(t, Config{})
	gone, kept := jobRef("gone"), jobRef("kept")
	for _, r := range []contracts.Result{result(gone, 1, 0, contracts.Succeeded), result(kept, 1, 0, contracts.Succeeded)} {
		e.publish(t, r, r.OccurrenceID)
	}
	e.drained(t, 2)
	r := NewReader(e.js)
	if err := r.Purge(context.Background(), gone.KVKey()); err != nil {
		t.Fatal(err)
	}
	if entries, _ := r.List(context.Background(), gone); len(entries) != 0 {
		t.Errorf("the purged job has %d entries", len(entries))
	}
	tallies, _ := r.Tallies(context.Background())
	if _, ok := tallies[gone.KVKey()]; ok || len(tallies) != 1 {
		t.Errorf("tallies after the purge: %+v", tallies)
	}
	// The next result of a job of that name counts from zero.
	again := result(gone, 1, 0, contracts.Failed)
	again.OccurrenceID = contracts.OccurrenceID(gone, t0.Add(time.Hour), contracts.MainAction, 0)
	e.publish(t, again, again.OccurrenceID)
	e.drained(t, 3)
	tallies, _ = r.Tallies(context.Background())
	if got := tallies[gone.KVKey()]; got.Executions != 1 || got.Failures != 1 {
		t.Errorf("tally of the new job %+v", got)
	}
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := Start(context.Background(), e.js, Config{Shards: -1}); err == nil {
		t.Fatal("no error")
	}
}

// The first attempt of a job's first occurrence is written without reading
// the job's newest entry first. When the job has entries already, which a
// consumer that did not write them does not know of, the stream refuses
// the write and the entry is written after them, once, with the tally of
// them all.
func TestAFirstAttemptAfterEntriesOfAnotherConsumer(t *testing.T) {
	t.Parallel()
	e := setup(t)
	job := jobRef("first")
	run := result(job, 0, 0, contracts.Succeeded) // a run outside the schedule
	run.Message = "run"
	first := result(job, 1, 0, contracts.Failed)

	before := e.consumer(t, Config{})
	e.publish(t, run, run.OccurrenceID)
	e.publish(t, first, first.OccurrenceID)
	e.drained(t, 2)
	before.Stop()

	e.consumer(t, Config{})
	e.publish(t, first, "a-copy") // its entry is stored already
	second := result(job, 1, 1, contracts.Succeeded)
	e.publish(t, second, second.OccurrenceID)
	e.drained(t, 4)

	entries, err := NewReader(e.js).List(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d entries, want 3: %+v", len(entries), entries)
	}
	tallies, err := NewReader(e.js).Tallies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := tallies[job.KVKey()]; got.Executions != 3 || got.Failures != 1 {
		t.Errorf("tally %+v, want 3 executions, 1 failure", got)
	}

	// A new job's first entry, written without a read, starts its tally.
	fresh := jobRef("fresh")
	e.publish(t, result(fresh, 1, 0, contracts.Succeeded), result(fresh, 1, 0, contracts.Succeeded).OccurrenceID)
	e.drained(t, 5)
	tallies, err = NewReader(e.js).Tallies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := tallies[fresh.KVKey()]; got.Executions != 1 || got.Occurrence != 1 {
		t.Errorf("tally of a new job %+v, want 1 execution of occurrence 1", got)
	}
}
