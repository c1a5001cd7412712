package api

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// The bound that spares computing a job's occurrences is never above the
// shortest gap they have, in zones with daylight saving (Lord Howe's moves
// by half an hour), for jobs started on a day the clocks change.
func TestTheShortestGapBoundHolds(t *testing.T) {
	t.Parallel()
	starts := map[string][]time.Time{
		"UTC":                 {time.Date(2026, 1, 31, 2, 30, 0, 0, time.UTC)},
		"Europe/Berlin":       {time.Date(2026, 3, 29, 2, 30, 0, 0, time.UTC), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)},
		"America/New_York":    {time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC), time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)},
		"Australia/Lord_Howe": {time.Date(2026, 4, 4, 14, 45, 0, 0, time.UTC), time.Date(2026, 10, 3, 15, 15, 0, 0, time.UTC)},
	}
	for zone, times := range starts {
		for _, start := range times {
			for _, f := range contracts.Frequencies {
				for _, interval := range []int{1, 2, 7} {
					name := fmt.Sprintf("%s/%s/%s/%d", zone, start.Format(time.RFC3339), f, interval)
					p := &contracts.JobProperties{StartTime: &start, Recurrence: &contracts.Recurrence{Frequency: f, Interval: &interval, TimeZone: zone}}
					shortest, err := shortestGap(p, start)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if bound := shortestGapAtLeast(p.Recurrence); bound > shortest {
						t.Errorf("%s: bound %s over the shortest gap %s", name, bound, shortest)
					}
				}
			}
		}
	}
	one := 1
	withHours := &contracts.Recurrence{Frequency: contracts.FrequencyDay, Interval: &one, Schedule: &contracts.Schedule{Hours: []int{1, 2}}}
	if b := shortestGapAtLeast(withHours); b != 0 {
		t.Errorf("a schedule with hours: bound %s, want 0", b)
	}
}
