package dispatch

import (
	"context"
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
