package feedback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

var (
	t0   = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	coll = contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc"}
)

func jobOf(t *testing.T, definition string) store.Job {
	t.Helper()
	props, errs := planner.ParseJob([]byte(definition), t0)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	props.State = contracts.JobStateEnabled
	return store.Job{Ref: coll.Job("j"), Properties: props, Created: t0, Anchored: t0, Revision: 9}
}

func failedResult(action contracts.ActionName, attempt int, last bool) contracts.Result {
	return contracts.Result{Job: coll.Job("j"), ActionName: action, Occurrence: 4, Attempt: attempt,
		ExpectedTime: t0, Outcome: contracts.Failed, LastAttempt: last, EndTime: t0.Add(time.Hour)}
}

func TestFollowUp(t *testing.T) {
	t.Parallel()
	const withPolicies = `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"},
		"retryPolicy": {"retryType": "Fixed", "retryInterval": "PT20S", "retryCount": 2},
		"errorAction": {"type": "Http", "request": {"uri": "https://example.com/e", "method": "GET"},
			"retryPolicy": {"retryType": "Fixed", "retryInterval": "PT1M", "retryCount": 1}}}}`
	const mainOnly = `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}}`
	now := t0.Add(time.Minute)
	tests := []struct {
		name    string
		job     string
		result  contracts.Result
		want    bool
		action  contracts.ActionName
		attempt int
		due     time.Time
	}{
		{"a failed attempt with retries left is retried its interval from now, not from when the worker ended it",
			withPolicies, failedResult(contracts.MainAction, 0, false), true, contracts.MainAction, 1, now.Add(20 * time.Second)},
		{"the main action's last failure runs the error action at once",
			withPolicies, failedResult(contracts.MainAction, 2, true), true, contracts.ErrorAction, 0, now},
		{"the error action is retried on its own policy",
			withPolicies, failedResult(contracts.ErrorAction, 0, false), true, contracts.ErrorAction, 1, now.Add(time.Minute)},
		{"the error action's last failure is the end", withPolicies, failedResult(contracts.ErrorAction, 1, true), false, "", 0, time.Time{}},
		{"without an error action the main action's last failure is the end", mainOnly, failedResult(contracts.MainAction, 4, true), false, "", 0, time.Time{}},
		{"the default policy retries 30 seconds later", mainOnly, failedResult(contracts.MainAction, 0, false), true, contracts.MainAction, 1, now.Add(30 * time.Second)},
		{"success is the end", withPolicies, func() contracts.Result {
			r := failedResult(contracts.MainAction, 0, false)
			r.Outcome = contracts.Succeeded
			return r
		}(), false, "", 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := jobOf(t, tt.job)
			next := FollowUp(tt.result, contracts.Decide(tt.result, j.Properties.Action), j, now)
			if (next != nil) != tt.want {
				t.Fatalf("follow-up %+v, want one: %v", next, tt.want)
			}
			if next == nil {
				return
			}
			if next.Action != tt.action || next.Attempt != tt.attempt || !next.Due.Equal(tt.due) || next.Slot != "r4" ||
				!next.Expected.Equal(t0) || next.Occurrence != 4 || next.Revision != 9 || next.Remaining != -1 {
				t.Errorf("follow-up %+v", next)
			}
		})
	}
	t.Run("a follow-up of the last occurrence says so", func(t *testing.T) {
		t.Parallel()
		r := failedResult(contracts.MainAction, 0, false)
		r.LastOccurrence = true
		j := jobOf(t, mainOnly)
		if next := FollowUp(r, contracts.Decide(r, j.Properties.Action), j, now); next == nil || next.Remaining != 0 {
			t.Fatalf("follow-up %+v, want Remaining 0", next)
		}
	})
}

// storeJobs serves jobs straight from the store.
type storeJobs struct{ st *store.Store }

func (s storeJobs) Job(ctx context.Context, key string) (store.Job, bool, error) {
	j, err := s.st.GetJobByKey(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return store.Job{}, false, nil
	}
	return j, err == nil, err
}

// keptFollowUps records what the consumer settles, and fails while told
// to.
type keptFollowUps struct {
	mu      sync.Mutex
	failing bool
	kept    map[string]*timer.Entry // by result occurrence id
}

func (k *keptFollowUps) Settle(_ context.Context, r contracts.Result, next *timer.Entry) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failing {
		return errors.New("the follow-ups bucket is unavailable (test)")
	}
	k.kept[r.OccurrenceID] = next
	return nil
}

func (k *keptFollowUps) setFailing(failing bool) {
	k.mu.Lock()
	k.failing = failing
	k.mu.Unlock()
}

func (k *keptFollowUps) of(id string) (*timer.Entry, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	next, ok := k.kept[id]
	return next, ok
}

type env struct {
	rdb       redis.UniversalClient
	prefix    string
	js        jetstream.JetStream
	store     *store.Store
	ix        *timer.Index
	followUps *keptFollowUps
}

func setup(t *testing.T) *env {
	t.Helper()
	_, js := testkit.JetStream(t, testkit.NATS(t))
	sealer, _ := seal.New(bytes.Repeat([]byte{1}, 32))
	st, err := store.Open(t.Context(), js, store.Config{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutCollection(t.Context(), store.Collection{Ref: coll}, 0); err != nil {
		t.Fatal(err)
	}
	rdb, prefix, _ := testkit.Redis(t)
	ix, err := timer.New(rdb, timer.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.MarkBuilt(t.Context()); err != nil {
		t.Fatal(err)
	}
	fu := &keptFollowUps{kept: map[string]*timer.Entry{}}
	c, err := Start(t.Context(), js, storeJobs{st}, fu, nil, st, ix, Config{Now: func() time.Time { return t0 }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return &env{rdb: rdb, prefix: prefix, js: js, store: st, ix: ix, followUps: fu}
}

func (e *env) publish(t *testing.T, r contracts.Result) {
	t.Helper()
	data, _ := json.Marshal(r.Event())
	if _, err := e.js.PublishMsg(t.Context(), &nats.Msg{Subject: contracts.ResultSubjectPrefix + r.Job.Tokens(), Data: data}); err != nil {
		t.Fatal(err)
	}
}

// handedBack waits until the planners' consumer has delivered a result
// again: the consumer handed it back.
func (e *env) handedBack(t *testing.T, what string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() bool {
		c, err := e.js.Consumer(t.Context(), contracts.ResultsStream, contracts.PlannerConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.NumRedelivered > 0
	}, what)
}

func lastResult(j store.Job, outcome contracts.Outcome) contracts.Result {
	id := contracts.OccurrenceID(j.Ref, t0, contracts.MainAction, 0)
	return contracts.Result{Version: contracts.MessageVersion, OccurrenceID: id, OccurrenceKey: "k", Job: j.Ref,
		ActionName: contracts.MainAction, Occurrence: 1, ExpectedTime: t0, Revision: j.Revision, LastAttempt: true,
		LastOccurrence: true, Outcome: outcome, StartTime: t0, EndTime: t0.Add(time.Second)}
}

// Regression: a worker can report the last occurrence before the planner
// that dispatched it has committed its claim. The claimed entry is that
// occurrence's own, not a next one: the job must still end.
func TestTheLastOccurrenceEndsTheJobBeforeItsClaimIsCommitted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j, err := e.store.CreateJob(t.Context(), jobOf(t, `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ix.Schedule(t.Context(), timer.Entry{JobKey: j.Ref.KVKey(), Due: t0, Expected: t0, Occurrence: 1,
		Action: contracts.MainAction, Remaining: 0, Revision: j.Revision}); err != nil {
		t.Fatal(err)
	}
	if claims, err := e.ix.Claim(t.Context(), t0, time.Minute, 10); err != nil || len(claims) != 1 {
		t.Fatalf("claimed %d: %v", len(claims), err)
	}
	e.publish(t, lastResult(j, contracts.Succeeded))
	testkit.Eventually(t, 10*time.Second, func() bool {
		got, err := e.store.GetJob(t.Context(), j.Ref)
		return err == nil && got.Properties.State == contracts.JobStateCompleted && got.Ended != nil && got.Ended.Equal(t0)
	}, "the job did not complete")
}

// Each result of the main action sets the job's last status to how it
// ended; the error action's result leaves it.
func TestTheJobsStatusSaysHowItsLatestAttemptEnded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j, err := e.store.CreateJob(t.Context(), jobOf(t, `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"},
		"retryPolicy": {"retryType": "Fixed", "retryInterval": "PT20S", "retryCount": 1},
		"errorAction": {"type": "Http", "request": {"uri": "https://example.com/e", "method": "GET"}}}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	attempt := func(action contracts.ActionName, n int, outcome contracts.Outcome, last bool, start time.Time) contracts.Result {
		return contracts.Result{Version: contracts.MessageVersion, OccurrenceID: contracts.OccurrenceID(j.Ref, t0, action, n), OccurrenceKey: "k",
			Job: j.Ref, ActionName: action, Occurrence: 1, Attempt: n, ExpectedTime: t0, Revision: j.Revision, LastAttempt: last,
			Outcome: outcome, StartTime: start, EndTime: start.Add(time.Second)}
	}
	for _, step := range []struct {
		r    contracts.Result
		want string
		at   time.Time
	}{
		{attempt(contracts.MainAction, 0, contracts.Failed, false, t0), contracts.LastFailed, t0.Add(time.Second)},
		{attempt(contracts.MainAction, 1, contracts.Failed, true, t0.Add(time.Minute)), contracts.LastFaulted, t0.Add(time.Minute + time.Second)},
		{attempt(contracts.ErrorAction, 0, contracts.Succeeded, true, t0.Add(2*time.Minute)), contracts.LastFaulted, t0.Add(time.Minute + time.Second)},
	} {
		e.publish(t, step.r)
		var got contracts.Tally
		testkit.Eventually(t, 10*time.Second, func() bool {
			tallies, found, err := e.ix.Statuses(t.Context(), []string{j.Ref.KVKey()})
			if err != nil || !found[0] {
				return false
			}
			got = tallies[0]
			return strings.Contains(got.Recent, contracts.AttemptTag(step.r.OccurrenceID))
		}, "the %s result of attempt %d was not recorded", step.r.ActionName, step.r.Attempt)
		if got.LastStatus != step.want || !got.LastStatusTime.Equal(step.at) {
			t.Fatalf("after the %s result of attempt %d: last status %q at %v, want %q at %v",
				step.r.ActionName, step.r.Attempt, got.LastStatus, got.LastStatusTime, step.want, step.at)
		}
	}
}

// A job given a new schedule after its last occurrence was dispatched does
// not end: another occurrence is scheduled. A disabled job does not end
// either.
func TestAJobWithAnotherOccurrenceOrDisabledDoesNotEnd(t *testing.T) {
	t.Parallel()
	e := setup(t)
	def := `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}}`
	rescheduled := jobOf(t, def)
	rescheduled.Ref = coll.Job("rescheduled")
	rescheduled, err := e.store.CreateJob(t.Context(), rescheduled, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ix.Schedule(t.Context(), timer.Entry{JobKey: rescheduled.Ref.KVKey(), Due: t0.Add(time.Hour), Expected: t0.Add(time.Hour),
		Occurrence: 1, Action: contracts.MainAction, Remaining: -1, Revision: rescheduled.Revision}); err != nil {
		t.Fatal(err)
	}
	disabled := jobOf(t, def)
	disabled.Ref, disabled.Properties.State = coll.Job("disabled"), contracts.JobStateDisabled
	if disabled, err = e.store.CreateJob(t.Context(), disabled, 0); err != nil {
		t.Fatal(err)
	}
	e.publish(t, lastResult(rescheduled, contracts.Succeeded))
	e.publish(t, lastResult(disabled, contracts.Failed))
	testkit.Eventually(t, 10*time.Second, func() bool {
		c, err := e.js.Consumer(t.Context(), contracts.ResultsStream, contracts.PlannerConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.AckFloor.Stream == 2 && info.NumAckPending == 0
	}, "the results were not processed")
	tallies, _, err := e.ix.Statuses(t.Context(), []string{rescheduled.Ref.KVKey(), disabled.Ref.KVKey()})
	if err != nil || tallies[0].Executions != 1 || tallies[1].Failures != 1 {
		t.Fatalf("tallies %+v, %v", tallies, err)
	}
	for _, ref := range []contracts.JobRef{rescheduled.Ref, disabled.Ref} {
		got, err := e.store.GetJob(t.Context(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if got.Properties.State == contracts.JobStateCompleted || got.Properties.State == contracts.JobStateFaulted || got.Ended != nil {
			t.Errorf("%s ended: %s", ref.Job, got.Properties.State)
		}
	}
}

// What follows a failed attempt is kept in the follow-ups bucket before the
// timer learns of it: while the bucket cannot be written, the result is
// neither counted nor followed up, and it is once the bucket answers.
func TestAFollowUpIsKeptBeforeTheTimerHasIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j, err := e.store.CreateJob(t.Context(), jobOf(t, `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := lastResult(j, contracts.Failed)
	r.LastAttempt = false // a retry follows
	e.followUps.setFailing(true)
	e.publish(t, r)
	e.handedBack(t, "the result was not handed back while the follow-up could not be kept")
	if _, found, err := e.ix.Statuses(t.Context(), []string{j.Ref.KVKey()}); err != nil || found[0] {
		t.Fatalf("the result was counted before its follow-up was kept (%v)", err)
	}
	e.followUps.setFailing(false)
	testkit.Eventually(t, 20*time.Second, func() bool {
		next, ok := e.followUps.of(r.OccurrenceID)
		return ok && next != nil && next.Attempt == 1
	}, "the retry was not kept")
	testkit.Eventually(t, 10*time.Second, func() bool {
		e2, ok, err := e.ix.Get(t.Context(), j.Ref.KVKey(), "r1")
		return err == nil && ok && e2.Attempt == 1
	}, "the retry is not in the timer")
}

// Regression: a result counted while the timer was being rebuilt after
// Redis lost it started the job's counters from zero, and the rebuild then
// left them so (it restores only the statuses Redis does not hold): the
// counters from history were lost. Results now wait for the rebuild.
func TestResultsWaitWhileTheTimerIsRebuilt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j, err := e.store.CreateJob(t.Context(), jobOf(t, `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	testkit.FlushPrefix(e.rdb, e.prefix) // Redis loses everything
	e.publish(t, lastResult(j, contracts.Succeeded))
	e.handedBack(t, "the result was not handed back while the timer was not built")
	if _, found, err := e.ix.Statuses(t.Context(), []string{j.Ref.KVKey()}); err != nil || found[0] {
		t.Fatalf("the result was counted before the timer was rebuilt (%v)", err)
	}
	// The rebuild restores the counters from history, then marks the timer.
	if err := e.ix.RestoreStatuses(t.Context(), map[string]contracts.Tally{j.Ref.KVKey(): {Executions: 41, Failures: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := e.ix.MarkBuilt(t.Context()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, func() bool {
		tallies, _, err := e.ix.Statuses(t.Context(), []string{j.Ref.KVKey()})
		return err == nil && tallies[0].Executions == 42 && tallies[0].Failures == 1
	}, "the result was not counted on top of the restored counters")
}

// Each attempt, of the main action or of the error action, is counted once
// in the executions per minute, by its outcome, in the minute it ended:
// a result delivered again is not counted again.
func TestEachAttemptIsCountedOncePerMinute(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j, err := e.store.CreateJob(t.Context(), jobOf(t, `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"},
		"errorAction": {"type": "Http", "request": {"uri": "https://example.com/e", "method": "GET"}}}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Near the wall clock: a minute's count expires 25 hours after it.
	ended := time.Now().UTC().Truncate(time.Minute).Add(-2 * time.Minute)
	failed := lastResult(j, contracts.Failed)
	failed.StartTime, failed.EndTime = ended.Add(-time.Second), ended.Add(time.Second)
	errorAction := failed
	errorAction.ActionName, errorAction.Outcome = contracts.ErrorAction, contracts.Succeeded
	errorAction.OccurrenceID = contracts.OccurrenceID(j.Ref, t0, contracts.ErrorAction, 0)
	errorAction.EndTime = ended.Add(2 * time.Second)
	for _, r := range []contracts.Result{failed, failed, errorAction} { // the failure is delivered twice
		e.publish(t, r)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		c, err := e.js.Consumer(t.Context(), contracts.ResultsStream, contracts.PlannerConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.AckFloor.Stream == 3 && info.NumAckPending == 0
	}, "the results were not processed")
	got, err := e.ix.ExecutionCounts(t.Context(), []contracts.CollectionRef{coll}, ended, ended.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if want := []timer.MinuteExecutions{{Minute: ended, Succeeded: 1, Failed: 1}}; !slices.Equal(got, want) {
		t.Fatalf("executions %+v, want %+v", got, want)
	}
}
