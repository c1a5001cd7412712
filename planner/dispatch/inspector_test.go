package dispatch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Pending reads, for every job at once, the scheduled occurrence at its
// expected time with the occurrences left, and each follow-up marked as a
// retry, an error action or a run now.
func TestPendingMarksEachRunTheTimerHolds(t *testing.T) {
	t.Parallel()
	rdb, prefix, _ := testkit.Redis(t)
	ix, err := timer.New(rdb, timer.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	busy := collection.Job("busy")
	idle := collection.Job("idle")
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	requested := at(3)
	for _, e := range []timer.Entry{
		{JobKey: busy.KVKey(), Slot: scheduleSlot, Due: at(10), Expected: at(10), Occurrence: 4, Action: contracts.MainAction, Remaining: 2},
		{JobKey: busy.KVKey(), Slot: FollowUpSlot(2, at(0)), Due: at(5), Expected: at(0), Occurrence: 2, Attempt: 1, Action: contracts.MainAction},
		{JobKey: busy.KVKey(), Slot: FollowUpSlot(3, at(1)), Due: at(6), Expected: at(1), Occurrence: 3, Action: contracts.ErrorAction},
		{JobKey: busy.KVKey(), Slot: runSlot(requested), Due: requested, Expected: requested, Action: contracts.MainAction},
	} {
		if err := ix.Schedule(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	held, tallies, err := (&Inspector{ix: ix}).Pending(ctx, []contracts.JobRef{busy, idle})
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 2 || len(tallies) != 2 || len(held[1]) != 0 {
		t.Fatalf("held %+v, tallies %d: want the idle job to hold nothing", held, len(tallies))
	}
	want := map[api.RunKind]api.TimerEntry{
		api.RunScheduled:   {Kind: api.RunScheduled, Due: at(10), Remaining: 2},
		api.RunRetry:       {Kind: api.RunRetry, Due: at(5)},
		api.RunErrorAction: {Kind: api.RunErrorAction, Due: at(6)},
		api.RunNow:         {Kind: api.RunNow, Due: requested},
	}
	if len(held[0]) != len(want) {
		t.Fatalf("busy holds %+v, want %d runs", held[0], len(want))
	}
	for _, got := range held[0] {
		if w := want[got.Kind]; !got.Due.Equal(w.Due) || got.Remaining != w.Remaining {
			t.Errorf("%s: %+v, want %+v", got.Kind, got, w)
		}
	}
}

// ExecutionCounts hands the API the timer's counts of the collections
// asked for, minute by minute.
func TestExecutionCountsReadsTheCollectionsAskedFor(t *testing.T) {
	t.Parallel()
	rdb, prefix, _ := testkit.Redis(t)
	ix, err := timer.New(rdb, timer.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	// Near the wall clock: Redis expires a minute's counts 25 hours after it.
	m := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	other := contracts.CollectionRef{Subscription: collection.Subscription, ResourceGroup: collection.ResourceGroup, Collection: "other"}
	if err := ix.CountExecutions(t.Context(), []timer.Execution{
		{Collection: collection, Ended: m}, {Collection: collection, Failed: true, Ended: m.Add(time.Minute)},
		{Collection: other, Ended: m},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := (&Inspector{ix: ix}).ExecutionCounts(t.Context(), []contracts.CollectionRef{collection}, m, m.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []api.MinuteExecutions{{Minute: m, Succeeded: 1}, {Minute: m.Add(time.Minute), Failed: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
}
