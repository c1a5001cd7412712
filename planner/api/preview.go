package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
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
// its next execution on, honouring its count and end time. The first is
// the occurrence the timer holds, and the count left is the timer's, so
// that an occurrence in flight or a schedule started again is counted as
// the dispatcher counts it; a job the timer does not hold yet goes on from
// its definition and tally, as the dispatcher will schedule it.
func (s *Server) previewJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	n := 5
	if v := r.URL.Query().Get("count"); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil || c < 1 || c > maxPreview {
			return newError(http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf("count must be an integer from 1 to %d, not %s", maxPreview, contracts.QuoteName(v)))
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
	sched, err := planner.NewSchedule(&j.Properties, j.Anchored)
	if err != nil {
		return newError(http.StatusInternalServerError, codeInternal, "the stored job's schedule cannot be read: "+err.Error())
	}
	at, remaining, ok := s.upcoming(ctx, j, sched)
	if ok && at.After(contracts.MaxDateTime) {
		return newError(http.StatusConflict, codeConflict, fmt.Sprintf(
			"%s runs next at %s, after %s, the last date-time this API can represent; give it an earlier startTime",
			jobWhat(ref), at.Format(time.RFC3339), contracts.MaxDateTime.Format(time.RFC3339)))
	}
	if remaining >= 0 {
		n = int(min(int64(n), remaining+1))
	}
	// The instants after the last one the API can represent are left out.
	for ok && len(out.Value) < n && !at.After(contracts.MaxDateTime) {
		out.Value = append(out.Value, at)
		at, ok = sched.Next(at)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// upcoming returns a job's next occurrence and how many follow it (-1 for
// no limit): the timer's when it holds one, else from the definition and
// the tally. When the timer does not answer, the definition alone decides,
// as for the job's status.
func (s *Server) upcoming(ctx context.Context, j store.Job, sched *planner.Schedule) (time.Time, int64, bool) {
	var tally contracts.Tally
	if s.sched != nil {
		at, remaining, ok, err := s.sched.Scheduled(ctx, j.Ref)
		if err == nil && ok {
			return at.UTC(), remaining, true
		}
		if _, tallies, err := s.sched.Runtimes(ctx, []contracts.JobRef{j.Ref}); err == nil {
			tally = tallies[0]
		}
	}
	return s.resumeCounted(sched, tally)
}

// resumeCounted returns the next occurrence of a schedule the timer does
// not hold (see resume) and how many follow it (-1 for no limit).
func (s *Server) resumeCounted(sched *planner.Schedule, tally contracts.Tally) (time.Time, int64, bool) {
	at, number, ok := s.resume(sched, tally)
	remaining := int64(-1)
	if c := sched.Count(); c > 0 {
		remaining = max(int64(c)-number, 0)
	}
	return at, remaining, ok
}
