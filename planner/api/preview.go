package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
)

// maxPreview bounds the instants one preview returns.
const maxPreview = 1000

// PreviewResult is the body of GET …/jobs/{job}/preview: the next
// instants the job runs at (UTC), as the planner will run them.
type PreviewResult struct {
	// State is the job's state; only an Enabled job has instants.
	State contracts.JobState `json:"state"`
	// Value holds the instants, earliest first.
	Value []time.Time `json:"value"`
}

// previewJob answers GET …/jobs/{job}/preview?count=N (an extension of
// this API): the job's next N instants (5 by default, at most 1,000) from
// its next execution on, honouring its count and end time.
func (s *Server) previewJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	n := 5
	if v := r.URL.Query().Get("count"); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil || c < 1 || c > maxPreview {
			return newError(http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf("count must be an integer from 1 to %d, not %q", maxPreview, v))
		}
		n = c
	}
	ctx := r.Context()
	j, err := s.store.GetJob(ctx, ref)
	if err != nil {
		return storeError(err, jobWhat(ref))
	}
	out := PreviewResult{State: j.Properties.State, Value: []time.Time{}}
	if j.Properties.State != contracts.JobStateEnabled {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	var (
		scheduled time.Time
		tally     contracts.Tally
	)
	if s.sched != nil {
		if next, tallies, err := s.sched.Runtimes(ctx, []contracts.JobRef{j.Ref}); err == nil {
			scheduled, tally = next[0], tallies[0]
		}
	}
	sched, err := planner.NewSchedule(&j.Properties, j.Anchored)
	if err != nil {
		return newError(http.StatusInternalServerError, codeInternal, "the stored job's schedule cannot be read: "+err.Error())
	}
	if c := sched.Count(); c > 0 {
		n = min(n, max(c-int(tally.Occurrence), 0))
	}
	at, ok := s.nextExecution(j, scheduled, tally)
	for ok && len(out.Value) < n {
		out.Value = append(out.Value, at)
		at, ok = sched.Next(at)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
