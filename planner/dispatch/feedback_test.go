package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// fakeHistory is the History of a test: it hands out tallies and records
// purges.
type fakeHistory struct {
	mu      sync.Mutex
	tallies map[string]contracts.Tally
	purged  []string
}

func (h *fakeHistory) Tallies(context.Context) (map[string]contracts.Tally, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tallies, nil
}

func (h *fakeHistory) Purge(_ context.Context, key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.purged = append(h.purged, key)
	return nil
}

func (h *fakeHistory) purges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.purged...)
}

// lastExecution returns the newest message on EXEC and its headers.
func (e *env) lastExecution(t *testing.T) (contracts.Execution, string) {
	t.Helper()
	s, err := e.js.Stream(context.Background(), contracts.ExecStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(context.Background(), contracts.ExecSubjectPrefix+">")
	if err != nil {
		t.Fatal(err)
	}
	var x contracts.Execution
	if err := json.Unmarshal(m.Data, &x); err != nil {
		t.Fatal(err)
	}
	return x, m.Header.Get(contracts.TraceParentHeader)
}

func TestExecutionsSayWhatFollowsThem(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	d := e.planner(t, nil)
	ix := e.index(t)
	j := e.addJob(t, "twice", `{"startTime": "2026-01-01T00:01:00Z",
		"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST"},
			"retryPolicy": {"retryType": "Fixed", "retryInterval": "PT30S", "retryCount": 1},
			"errorAction": {"type": "Http", "request": {"uri": "https://example.com/error", "method": "POST",
				"authentication": {"type": "Basic", "username": "u", "password": "error-secret"}}, "retryPolicy": {"retryType": "None"}}},
		"recurrence": {"frequency": "Minute", "count": 2}}`)

	t.Run("the first occurrence has a retry left and an occurrence after it", func(t *testing.T) {
		e.clock.Set(t0.Add(time.Minute))
		d.Wake()
		e.waitCount(t, 1)
		x, traceparent := e.lastExecution(t)
		if x.Occurrence != 1 || x.LastAttempt || x.LastOccurrence || x.Revision != j.Revision {
			t.Errorf("execution %+v", x)
		}
		if traceparent != contracts.TraceParent(x.OccurrenceID) {
			t.Errorf("traceparent %q", traceparent)
		}
		var a contracts.JobAction
		if err := json.Unmarshal(x.Action, &a); err != nil || a.ErrorAction != nil || a.Request.URI != "https://example.com" {
			t.Errorf("the execution's action %+v (%v): the main action alone", a, err)
		}
	})
	t.Run("the last occurrence says so, and so does its retry", func(t *testing.T) {
		e.clock.Set(t0.Add(2 * time.Minute))
		d.Wake()
		e.waitCount(t, 2)
		x, _ := e.lastExecution(t)
		if x.Occurrence != 2 || x.LastAttempt || !x.LastOccurrence {
			t.Fatalf("execution %+v", x)
		}
		// The feedback loop schedules the retry of the last occurrence.
		retry := timer.Entry{JobKey: j.Ref.KVKey(), Slot: FollowUpSlot(2, x.ExpectedTime), Due: t0.Add(2*time.Minute + 30*time.Second),
			Expected: x.ExpectedTime, Occurrence: 2, Attempt: 1, Action: contracts.MainAction, Remaining: 0, Revision: j.Revision}
		if err := ix.Schedule(ctx, retry); err != nil {
			t.Fatal(err)
		}
		e.clock.Set(retry.Due)
		d.Wake()
		e.waitCount(t, 3)
		if x, _ := e.lastExecution(t); x.Attempt != 1 || !x.LastAttempt || !x.LastOccurrence || !x.ExpectedTime.Equal(retry.Expected) {
			t.Errorf("the retry %+v", x)
		}
	})
	t.Run("the error action is sent alone, its own secrets sealed", func(t *testing.T) {
		errorEntry := timer.Entry{JobKey: j.Ref.KVKey(), Slot: FollowUpSlot(2, t0.Add(2*time.Minute)), Due: e.clock.Now(),
			Expected: t0.Add(2 * time.Minute), Occurrence: 2, Action: contracts.ErrorAction, Remaining: 0, Revision: j.Revision}
		if err := ix.Schedule(ctx, errorEntry); err != nil {
			t.Fatal(err)
		}
		d.Wake()
		e.waitCount(t, 4)
		x, _ := e.lastExecution(t)
		if x.ActionName != contracts.ErrorAction || !x.LastAttempt || !strings.HasSuffix(x.OccurrenceKey, "/ErrorAction/0") {
			t.Fatalf("execution %+v", x)
		}
		a, err := e.sealer.OpenAction(func() *contracts.JobAction {
			var a contracts.JobAction
			_ = json.Unmarshal(x.Action, &a)
			return &a
		}(), x.OccurrenceID)
		if err != nil || a.Request.URI != "https://example.com/error" || a.Request.Authentication.Password != "error-secret" {
			t.Errorf("the error action opened as %+v (%v)", a, err)
		}
		if strings.Contains(string(x.Action), "error-secret") {
			t.Error("the error action's password is in clear in the message")
		}
	})
	t.Run("a run outside the schedule has no occurrence number and its own id", func(t *testing.T) {
		if err := d.followUps.RunNow(ctx, j); err != nil {
			t.Fatal(err)
		}
		e.waitCount(t, 5)
		x, _ := e.lastExecution(t)
		sum := sha256.Sum256([]byte(x.OccurrenceKey))
		if x.Occurrence != 0 || !x.Run() || x.LastOccurrence || !strings.HasSuffix(x.OccurrenceKey, "/MainAction/run/0") ||
			x.OccurrenceID != hex.EncodeToString(sum[:16]) {
			t.Errorf("run execution %+v", x)
		}
		if err := x.Validate(); err != nil {
			t.Errorf("a run's execution is invalid: %v", err)
		}
	})
	t.Run("two runs asked for in the same second are two runs", func(t *testing.T) {
		first, _ := e.lastExecution(t)
		e.clock.Set(e.clock.Now().Truncate(time.Second).Add(300 * time.Millisecond))
		if err := d.followUps.RunNow(ctx, j); err != nil {
			t.Fatal(err)
		}
		e.waitCount(t, 6)
		e.clock.Set(e.clock.Now().Add(300 * time.Millisecond))
		if err := d.followUps.RunNow(ctx, j); err != nil {
			t.Fatal(err)
		}
		e.waitCount(t, 7)
		second, _ := e.lastExecution(t)
		if second.OccurrenceID == first.OccurrenceID || !strings.Contains(second.OccurrenceKey, ".600Z/MainAction/run/0") {
			t.Errorf("the second run's execution %s (%s)", second.OccurrenceKey, second.OccurrenceID)
		}
	})
}

// A job whose schedule already ran goes on from the occurrence it reached
// when its timer entry is gone: after Redis lost its state, from the tally
// history restores.
func TestARescheduledJobGoesOnFromTheOccurrenceItReached(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.addJob(t, "thrice", minuteJob(t0.Add(time.Minute), 3))
	hist := &fakeHistory{tallies: map[string]contracts.Tally{
		j.Ref.KVKey(): {Occurrence: 2, OccurrenceTime: t0.Add(2 * time.Minute), Executions: 2},
	}}
	e.clock.Set(t0.Add(2*time.Minute + 10*time.Second))
	e.planner(t, func(c *Config) { c.History = hist }) // Redis is empty: the tallies are restored
	ix := e.index(t)
	testkit.Eventually(t, 10*time.Second, func() bool {
		entry, ok, _ := ix.Get(context.Background(), j.Ref.KVKey(), "")
		return ok && entry.Occurrence == 3 && entry.Remaining == 0 && entry.Expected.Equal(t0.Add(3*time.Minute))
	}, "occurrence 3 (the last) is not scheduled")
	tallies, _, err := ix.Statuses(context.Background(), []string{j.Ref.KVKey()})
	if err != nil || tallies[0].Executions != 2 {
		t.Fatalf("the restored tally %+v (%v)", tallies, err)
	}

	// Created now (00:02:10), "done" has its occurrences at 00:03 and 00:04.
	done := e.addJob(t, "done", minuteJob(t0.Add(time.Minute), 2))
	// "done" ran its last occurrence (the entry is gone); a change to it
	// schedules nothing, as its count is reached.
	testkit.Eventually(t, 10*time.Second, func() bool { _, ok, _ := ix.Get(context.Background(), done.Ref.KVKey(), ""); return ok },
		"done was not scheduled")
	if _, err := ix.Record(context.Background(), timer.Record{JobKey: done.Ref.KVKey(), AttemptID: strings.Repeat("a", 32),
		Occurrence: 2, OccurrenceTime: t0.Add(4 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Remove(context.Background(), done.Ref.KVKey(), ""); err != nil {
		t.Fatal(err)
	}
	done.Properties.Action.Request.Method = "PUT"
	if _, err := e.store.UpdateJob(context.Background(), done, done.Revision); err != nil {
		t.Fatal(err)
	}
	// The dispatcher applies changes in order: once a job created after the
	// change is scheduled, the change was applied.
	marker := e.addJob(t, "marker", minuteJob(t0.Add(time.Hour), 0))
	testkit.Eventually(t, 10*time.Second, func() bool { _, ok, _ := ix.Get(context.Background(), marker.Ref.KVKey(), ""); return ok },
		"the marker was not scheduled")
	if entry, ok, _ := ix.Get(context.Background(), done.Ref.KVKey(), ""); ok {
		t.Errorf("a job whose count was reached was scheduled again: %+v", entry)
	}
}

// Completed and Faulted jobs are deleted once EndedRetention has passed
// since they ended, and a deleted job's history is purged.
func TestEndedJobsAreDeletedAfterTheirRetention(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	hist := &fakeHistory{}
	e.planner(t, func(c *Config) {
		c.History = hist
		c.EndedRetention = 60 * 24 * time.Hour
		c.Lease = time.Second
		c.RetentionEvery = 20 * time.Millisecond
	})
	ended := e.addJob(t, "ended", minuteJob(t0.Add(time.Hour), 0))
	ended.Properties.State = contracts.JobStateCompleted
	at := t0
	ended.Ended = &at
	if _, err := e.store.UpdateJob(ctx, ended, ended.Revision); err != nil {
		t.Fatal(err)
	}
	e.addJob(t, "running", minuteJob(t0.Add(time.Hour), 0))

	e.clock.Set(t0.Add(60*24*time.Hour + time.Minute))
	testkit.Eventually(t, 20*time.Second, func() bool {
		_, err := e.store.GetJob(ctx, ended.Ref)
		return err != nil
	}, "the ended job was not deleted")
	if _, err := e.store.GetJob(ctx, collection.Job("running")); err != nil {
		t.Fatalf("the running job was deleted: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		for _, k := range hist.purges() {
			if k == ended.Ref.KVKey() {
				return true
			}
		}
		return false
	}, "the deleted job's history was not purged: %v", hist.purges())
}
