package planner

import (
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// Preview returns the first n instants a job would run at if it were created
// at now: fewer when the job completes first. An invalid definition returns
// every violation (a contracts.FieldErrors) and no instants.
func Preview(data []byte, now time.Time, n int) ([]time.Time, error) {
	now = now.Truncate(time.Second)
	p, errs := ParseJob(data, now)
	if len(errs) > 0 {
		return nil, errs
	}
	s, err := NewSchedule(&p, now)
	if err != nil {
		return nil, contracts.FieldErrors{{Path: "recurrence", Message: err.Error()}}
	}
	return s.Upcoming(n), nil
}
