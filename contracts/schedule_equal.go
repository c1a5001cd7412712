package contracts

import (
	"bytes"
	"encoding/json"
)

// SameSchedule reports whether p and q give the same schedule from the same
// anchor: the same start time and the same recurrence.
func (p *JobProperties) SameSchedule(q *JobProperties) bool {
	if (p.StartTime == nil) != (q.StartTime == nil) || (p.StartTime != nil && !p.StartTime.Equal(*q.StartTime)) {
		return false
	}
	rp, errP := json.Marshal(p.Recurrence)
	rq, errQ := json.Marshal(q.Recurrence)
	return errP == nil && errQ == nil && bytes.Equal(rp, rq)
}
