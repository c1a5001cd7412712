package history

import (
	"context"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/streams"
)

// Regression: the counters restored after Redis lost them missed the
// results the history consumer had not stored yet, though the planners had
// counted them. Tallies waits for the history consumer to catch up.
func TestTalliesWaitForTheHistoryConsumerToCatchUp(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := streams.EnsureResults(context.Background(), e.js, 1); err != nil {
		t.Fatal(err)
	}
	job := jobRef("behind")
	r := result(job, 1, 0, contracts.Succeeded)
	e.publish(t, r, r.OccurrenceID) // no history consumer runs yet
	type answer struct {
		tallies map[string]contracts.Tally
		err     error
	}
	got := make(chan answer, 1)
	go func() {
		tallies, err := NewReader(e.js).Tallies(context.Background())
		got <- answer{tallies, err}
	}()
	select {
	case a := <-got:
		t.Fatalf("Tallies answered %+v (%v) before the history consumer stored the result", a.tallies, a.err)
	case <-time.After(500 * time.Millisecond): // it is still waiting
	}
	e.consumer(t, Config{})
	select {
	case a := <-got:
		if a.err != nil || a.tallies[job.KVKey()].Executions != 1 {
			t.Fatalf("tallies %+v (%v), want the stored result counted", a.tallies, a.err)
		}
	case <-time.After(CatchUpWait):
		t.Fatal("Tallies did not answer once the history consumer caught up")
	}
}
