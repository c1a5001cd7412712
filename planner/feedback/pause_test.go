package feedback

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// pausingJob stores a job without retries that pauses after n consecutive
// Faulted occurrences (never when n is 0), with overlap policy overlap.
func (e *env) pausingJob(t *testing.T, name string, n int, overlap contracts.OverlapPolicy) store.Job {
	t.Helper()
	j := jobOf(t, `{"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"},
		"retryPolicy": {"retryType": "None"}}, "recurrence": {"frequency": "Minute"}}`)
	j.Ref = coll.Job(name)
	if n > 0 {
		j.Properties.PauseAfterFaults = &n
	}
	j.Properties.Overlap = overlap
	j, err := e.store.CreateJob(t.Context(), j, 0)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// occurrenceResult is the result of the single attempt of occurrence n of
// job j: Faulted when outcome is Failed (no retry follows).
func occurrenceResult(j store.Job, n int64, outcome contracts.Outcome) contracts.Result {
	expected := t0.Add(time.Duration(n) * time.Minute)
	r := contracts.Result{Version: contracts.MessageVersion, OccurrenceID: contracts.OccurrenceID(j.Ref, expected, contracts.MainAction, 0),
		OccurrenceKey: "k", Job: j.Ref, ActionName: contracts.MainAction, Occurrence: n, ExpectedTime: expected,
		Revision: j.Revision, LastAttempt: true, Outcome: outcome, StartTime: expected, EndTime: expected.Add(time.Second)}
	if outcome != contracts.Succeeded {
		r.Error = fmt.Sprintf("the target answered 500 for occurrence %d", n)
	}
	return r
}

// processed waits until the planners' consumer acknowledged the first n
// results published: all it does for them is done.
func (e *env) processed(t *testing.T, n uint64) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() bool {
		c, err := e.js.Consumer(t.Context(), contracts.ResultsStream, contracts.PlannerConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(t.Context())
		return err == nil && info.AckFloor.Stream >= n
	}, "the consumer did not process %d results", n)
}

func (e *env) tally(t *testing.T, j store.Job) contracts.Tally {
	t.Helper()
	tallies, _, err := e.ix.Statuses(t.Context(), []string{j.Ref.KVKey()})
	if err != nil {
		t.Fatal(err)
	}
	return tallies[0]
}

func TestAJobIsDisabledAfterItsConsecutiveFaults(t *testing.T) {
	t.Parallel()
	const F, S = contracts.Failed, contracts.Succeeded
	tests := []struct {
		name     string
		after    int
		outcomes []contracts.Outcome
		disabled bool
		count    int64
	}{
		{"one Faulted occurrence disables a job that pauses after 1", 1, []contracts.Outcome{F}, true, 1},
		{"two of three leave it enabled", 3, []contracts.Outcome{F, F}, false, 2},
		{"the third in a row disables it", 3, []contracts.Outcome{F, F, F}, true, 3},
		{"a success in between starts the count again", 3, []contracts.Outcome{F, F, S, F, F}, false, 2},
		{"without pauseAfterFaults the job goes on", 0, []contracts.Outcome{F, F, F, F}, false, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			if _, err := streams.EnsureHistory(t.Context(), e.js, streams.HistoryConfig{}); err != nil {
				t.Fatal(err)
			}
			j := e.pausingJob(t, "j", tt.after, "")
			next := timer.Entry{JobKey: j.Ref.KVKey(), Due: t0.Add(time.Hour), Expected: t0.Add(time.Hour), Occurrence: 60,
				Action: contracts.MainAction, Remaining: -1, Revision: j.Revision}
			if err := e.ix.Schedule(t.Context(), next); err != nil {
				t.Fatal(err)
			}
			var last contracts.Result
			for i, outcome := range tt.outcomes {
				last = occurrenceResult(j, int64(i+1), outcome)
				e.publish(t, last)
				e.processed(t, uint64(i+1))
			}
			if got := e.tally(t, j).ConsecutiveFaults; got != tt.count {
				t.Errorf("consecutive faults %d, want %d", got, tt.count)
			}
			got, err := e.store.GetJob(t.Context(), j.Ref)
			if err != nil {
				t.Fatal(err)
			}
			_, scheduled, _ := e.ix.Get(t.Context(), j.Ref.KVKey(), "")
			if !tt.disabled {
				if got.Properties.State != contracts.JobStateEnabled || got.StateReason != "" || !scheduled {
					t.Fatalf("state %s (%q), scheduled %v: want enabled and scheduled", got.Properties.State, got.StateReason, scheduled)
				}
				return
			}
			want := PauseReason(tt.count, last.ExpectedTime, last.Error, "")
			if got.Properties.State != contracts.JobStateDisabled || got.StateReason != want {
				t.Fatalf("state %s, reason %q; want Disabled, %q", got.Properties.State, got.StateReason, want)
			}
			if !strings.HasPrefix(want, fmt.Sprintf("disabled after %d consecutive Faulted occurrences; the last at %s: the target answered 500",
				tt.count, last.ExpectedTime.Format(time.RFC3339))) {
				t.Errorf("reason %q", want)
			}
			if scheduled {
				t.Error("the disabled job's next occurrence is still in the timer")
			}
			h, err := e.js.Stream(t.Context(), contracts.HistoryStream)
			if err != nil {
				t.Fatal(err)
			}
			m, err := h.GetLastMsgForSubject(t.Context(), contracts.HistorySubjectPrefix+j.Ref.Tokens())
			if err != nil {
				t.Fatal(err)
			}
			var entry contracts.HistoryEntry
			if err := json.Unmarshal(m.Data, &entry); err != nil || entry.Message != "Job "+want || entry.RepeatCount != last.Occurrence {
				t.Errorf("history entry %+v (%v)", entry, err)
			}
		})
	}
}

// The pause's history entry goes after the job's newest one and carries its
// tally, the consecutive faults from zero as the job enabled again counts
// them: the tallies restored from history stay right.
func TestThePausesHistoryEntryKeepsTheTally(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := streams.EnsureHistory(t.Context(), e.js, streams.HistoryConfig{}); err != nil {
		t.Fatal(err)
	}
	j := e.pausingJob(t, "j", 1, "")
	subject := contracts.HistorySubjectPrefix + j.Ref.Tokens()
	before := nats.NewMsg(subject)
	before.Data = []byte(`{}`)
	before.Header.Set(contracts.TallyHeader, `{"executionCount":7,"faultedCount":1,"consecutiveFaults":1}`)
	if _, err := e.js.PublishMsg(t.Context(), before); err != nil {
		t.Fatal(err)
	}
	c := &Consumer{js: e.js, store: e.store, ix: e.ix, cfg: Config{Now: func() time.Time { return t0 }}.withDefaults()}
	r := occurrenceResult(j, 1, contracts.Failed)
	if err := c.recordPause(t.Context(), r, "disabled after 1 consecutive Faulted occurrences"); err != nil {
		t.Fatal(err)
	}
	h, _ := e.js.Stream(t.Context(), contracts.HistoryStream)
	m, err := h.GetLastMsgForSubject(t.Context(), subject)
	if err != nil {
		t.Fatal(err)
	}
	var got contracts.Tally
	if err := json.Unmarshal([]byte(m.Header.Get(contracts.TallyHeader)), &got); err != nil {
		t.Fatal(err)
	}
	if got != (contracts.Tally{Executions: 7, Faulted: 1}) {
		t.Errorf("tally %+v", got)
	}
}

// Two planners that process results of the same job at the same time
// disable it once: the job's revision decides.
func TestTwoPlannersDisableAJobOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.pausingJob(t, "j", 1, "")
	p := pending{result: occurrenceResult(j, 1, contracts.Failed), job: j}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		c := &Consumer{js: e.js, store: e.store, ix: e.ix, cfg: Config{Now: func() time.Time { return t0 }}.withDefaults()}
		wg.Go(func() { errs[i] = c.pauseJob(t.Context(), p, 1) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := e.store.GetJob(t.Context(), j.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties.State != contracts.JobStateDisabled || got.Revision != j.Revision+1 {
		t.Fatalf("state %s at revision %d, want Disabled at %d: one write", got.Properties.State, got.Revision, j.Revision+1)
	}
}

// A job whose overlap policy is not Allow loses its running mark when its
// occurrence is over, and the occurrence buffered behind it is due at
// once; a retry still to come keeps it in flight.
func TestAnOccurrenceOverFreesItsJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.pausingJob(t, "j", 0, contracts.OverlapBufferOne)
	key := j.Ref.KVKey()
	first := timer.Occurrence{Number: 1, Expected: t0.Add(time.Minute)}
	if a, err := e.ix.Admit(t.Context(), key, first, t0, time.Hour, nil); err != nil || a != timer.Run {
		t.Fatalf("admitted %v, %v", a, err)
	}
	buffer := timer.Entry{JobKey: key, Slot: "b", Due: t0.Add(time.Hour), Expected: t0.Add(2 * time.Minute), Occurrence: 2,
		Action: contracts.MainAction, Remaining: -1, Revision: j.Revision}
	if a, err := e.ix.Admit(t.Context(), key, timer.Occurrence{Number: 2, Expected: buffer.Expected}, t0, time.Hour, &buffer); err != nil || a != timer.Buffered {
		t.Fatalf("admitted %v, %v", a, err)
	}

	r := occurrenceResult(j, 1, contracts.Succeeded)
	e.publish(t, r)
	e.processed(t, 1)
	if _, _, running, err := e.ix.Running(t.Context(), key, t0); err != nil || running {
		t.Fatalf("still running (%v) after its occurrence is over", err)
	}
	got, ok, err := e.ix.Get(t.Context(), key, "b")
	if err != nil || !ok || !got.Due.Equal(t0) || !got.Expected.Equal(buffer.Expected) {
		t.Fatalf("buffered %+v (%v, %v): want due now, expected as it was", got, ok, err)
	}
}

func TestOccurrenceOver(t *testing.T) {
	t.Parallel()
	main := func(outcome contracts.Outcome, last bool) contracts.Result {
		return contracts.Result{ActionName: contracts.MainAction, Occurrence: 3, Outcome: outcome, LastAttempt: last}
	}
	withErrorAction := &contracts.JobAction{ErrorAction: &contracts.JobAction{}}
	tests := []struct {
		name string
		r    contracts.Result
		main *contracts.JobAction
		want bool
	}{
		{"a success ends it", main(contracts.Succeeded, false), withErrorAction, true},
		{"a failure with a retry to come does not", main(contracts.Failed, false), withErrorAction, false},
		{"the last failure does, though the error action runs", main(contracts.Failed, true), withErrorAction, true},
		{"the error action's result is not the occurrence's", contracts.Result{ActionName: contracts.ErrorAction, Occurrence: 3, Outcome: contracts.Failed}, withErrorAction, false},
		{"a run outside the schedule is not an occurrence", contracts.Result{ActionName: contracts.MainAction, Outcome: contracts.Succeeded}, withErrorAction, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := occurrenceOver(tt.r, contracts.Decide(tt.r, tt.main)); got != tt.want {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
}
