package api

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// resettingScheduling is a fakeScheduling that also resets consecutive
// faults, as the planner's does.
type resettingScheduling struct {
	*fakeScheduling
	mu     sync.Mutex
	resets []string
}

func (r *resettingScheduling) ResetFaults(_ context.Context, ref contracts.JobRef) error {
	r.fakeScheduling.mu.Lock()
	tally := r.tallies[ref.Job]
	tally.ConsecutiveFaults = 0
	r.tallies[ref.Job] = tally
	r.fakeScheduling.mu.Unlock()
	r.mu.Lock()
	r.resets = append(r.resets, ref.Job)
	r.mu.Unlock()
	return nil
}

func (r *resettingScheduling) resetCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.resets)
}

// A job the scheduler disabled shows why, and its consecutive faults, in
// its status; enabling it again with PUT or PATCH clears both, and only
// that: a write that leaves it disabled keeps the reason.
func TestAPausedJobShowsWhyUntilItIsEnabledAgain(t *testing.T) {
	t.Parallel()
	const reason = "disabled after 3 consecutive Faulted occurrences; the last at 2016-03-30T19:00:00Z: the target answered 500"
	tests := []struct {
		name, method, body string
	}{
		{"PATCH", "PATCH", `{"properties": {"state": "Enabled"}}`},
		{"PUT", "PUT", weeklyJob},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var sched *resettingScheduling
			b := setupWith(t, testkit.NATS(t), Config{}, func(b *bundle) {
				sched = &resettingScheduling{fakeScheduling: b.sched}
				b.api.sched = sched
			})
			b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
			b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/weekly", weeklyJob)
			ref := contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc", Job: "weekly"}
			j, err := b.store.GetJob(t.Context(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if paused, err := b.store.PauseJob(t.Context(), ref, j.Revision, reason); err != nil || !paused {
				t.Fatalf("paused %v: %v", paused, err)
			}
			b.sched.set("weekly", nil, contracts.Tally{Executions: 3, Failures: 3, Faulted: 3, ConsecutiveFaults: 3})
			props := func(t *testing.T) map[string]any {
				t.Helper()
				return b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/weekly", "").json(t)["properties"].(map[string]any)
			}
			p := props(t)
			status := p["status"].(map[string]any)
			if p["state"] != "Disabled" || status["stateReason"] != reason || status["consecutiveFaults"] != 3.0 {
				t.Fatalf("state %v, status %v", p["state"], status)
			}

			// Still disabled: the reason stays.
			b.mustDo(t, http.StatusOK, "PATCH", base+"/jc/jobs/weekly", `{"properties": {"state": "Disabled"}}`)
			if status := props(t)["status"].(map[string]any); status["stateReason"] != reason || sched.resetCount() != 0 {
				t.Fatalf("after a write that keeps it disabled: status %v, %d resets", status, sched.resetCount())
			}

			b.mustDo(t, http.StatusOK, tt.method, base+"/jc/jobs/weekly", tt.body)
			p = props(t)
			status = p["status"].(map[string]any)
			if p["state"] != "Enabled" || status["stateReason"] != nil || status["consecutiveFaults"] != nil || sched.resetCount() != 1 {
				t.Fatalf("enabled again: state %v, status %v, %d resets", p["state"], status, sched.resetCount())
			}
		})
	}
}
