package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
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
	// Occurrences tells of the same instants, for a job with scheduling
	// policies (an extension: absent otherwise), when each runs within its
	// flexible window and which were moved from a date an excluded
	// calendar holds, and between them the occurrences such a calendar
	// skips.
	Occurrences []PreviewOccurrence `json:"occurrences,omitempty"`
}

// PreviewOccurrence is one occurrence in a preview's Occurrences.
type PreviewOccurrence struct {
	// Instant is the schedule's instant.
	Instant time.Time `json:"instant"`
	// RunAt is when it runs: Instant, or later within the flexible
	// window. Absent when skipped.
	RunAt *time.Time `json:"runAt,omitempty"`
	// Skipped: an excluded calendar holds its date and it does not run.
	Skipped bool `json:"skipped,omitempty"`
	// MovedFrom is the instant it was moved from, on a date an excluded
	// calendar holds.
	MovedFrom *time.Time `json:"movedFrom,omitempty"`
	// Calendar and Holiday name the calendar that holds the date of a
	// skipped or moved occurrence, and the holiday.
	Calendar string `json:"calendar,omitempty"`
	Holiday  string `json:"holiday,omitempty"`
}

// PreviewOccurrences converts a schedule's detailed occurrences into what
// a preview shows.
func PreviewOccurrences(detail []planner.Occurrence) []PreviewOccurrence {
	out := make([]PreviewOccurrence, 0, len(detail))
	for _, o := range detail {
		p := PreviewOccurrence{Instant: o.At.UTC(), Skipped: o.Skipped, Calendar: o.Calendar, Holiday: o.Holiday}
		if !o.Skipped {
			due := o.Due.UTC()
			p.RunAt = &due
		}
		if o.Moved() {
			from := o.MovedFrom.UTC()
			p.MovedFrom = &from
		}
		out = append(out, p)
	}
	return out
}

// previewJob answers GET …/jobs/{job}/preview?count=N (an extension of
// this API): the job's next N instants (5 by default, at most 1,000) from
// its next execution on, honouring its count and end time. The first is
// the occurrence the timer holds, and the count left is the timer's, so
// that an occurrence in flight or a schedule started again is counted as
// the dispatcher counts it; a job the timer does not hold yet goes on from
// its definition and tally, as the dispatcher will schedule it.
func (s *Server) previewJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	n, e := parsePreviewCount(r.URL.Query())
	if e != nil {
		return e
	}
	ctx := r.Context()
	j, err := s.store.GetJob(ctx, ref)
	if err != nil {
		return storeError(err, jobWhat(ref))
	}
	out, e := s.preview(ctx, j, n, false)
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// previewDraft answers POST …/jobs/{job}/preview?count=N (an extension of
// this API): the next N instants of the job the body defines, as a PUT of
// it would schedule it. The body is decoded and checked as a PUT's is
// (validation, the collection's quota, a final job refused), and nothing
// is stored. A definition that keeps the stored job's schedule goes on
// from the occurrence the timer holds, as the saved job would; a new
// schedule starts afresh.
func (s *Server) previewDraft(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	n, e := parsePreviewCount(r.URL.Query())
	if e != nil {
		return e
	}
	data, e := readBody(r)
	if e != nil {
		return e
	}
	ctx := r.Context()
	d, e := s.draftJob(ctx, ref, fromDefinition(data), false)
	if e != nil {
		return e
	}
	fresh := d.existing == nil || reanchors(&d.existing.Properties, &d.job.Properties)
	out, e := s.preview(ctx, d.job, n, fresh)
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// hasPolicies reports whether a recurrence names a policy a preview
// details: a flexible window or excluded calendars.
func hasPolicies(r *contracts.Recurrence) bool {
	return r != nil && (r.FlexibleWindow != "" || len(r.ExcludedCalendars) > 0)
}

// parsePreviewCount reads count: 1 to maxPreview, 5 by default.
func parsePreviewCount(q url.Values) (int, *apiError) {
	v := q.Get("count")
	if v == "" {
		return 5, nil
	}
	c, err := strconv.Atoi(v)
	if err != nil || c < 1 || c > maxPreview {
		return 0, newError(http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf("count must be an integer from 1 to %d, not %s", maxPreview, contracts.QuoteName(v)))
	}
	return c, nil
}

// preview returns the job's next n instants. A fresh job's schedule starts
// from its anchor, whatever the timer holds of the job stored under its
// name; another's goes on from the timer's occurrence (see upcoming).
func (s *Server) preview(ctx context.Context, j store.Job, n int, fresh bool) (PreviewResult, *apiError) {
	out := PreviewResult{State: j.Properties.State, Value: []time.Time{}}
	if j.Properties.State != contracts.JobStateEnabled {
		return out, nil
	}
	sched, err := s.schedules(ctx).of(&j)
	if err != nil {
		return out, newError(http.StatusInternalServerError, codeInternal, "the job's schedule cannot be read: "+err.Error())
	}
	var (
		at        time.Time
		remaining int64
		ok        bool
	)
	if fresh {
		at, remaining, ok = s.resumeCounted(sched, contracts.Tally{})
	} else {
		at, remaining, ok = s.upcoming(ctx, j, sched)
	}
	if ok && at.After(contracts.MaxDateTime) {
		return out, newError(http.StatusConflict, codeConflict, fmt.Sprintf(
			"%s runs next at %s, after %s, the last date-time this API can represent; give it an earlier startTime",
			jobWhat(j.Ref), at.Format(time.RFC3339), contracts.MaxDateTime.Format(time.RFC3339)))
	}
	if remaining >= 0 {
		n = int(min(int64(n), remaining+1))
	}
	// The instants after the last one the API can represent are left out.
	for ok && len(out.Value) < n && !at.After(contracts.MaxDateTime) {
		out.Value = append(out.Value, at)
		at, ok = sched.Next(at)
	}
	if hasPolicies(j.Properties.Recurrence) {
		from := s.cfg.Now().Truncate(time.Second)
		if len(out.Value) > 0 && out.Value[0].Before(from) {
			from = out.Value[0]
		}
		out.Occurrences = PreviewOccurrences(sched.Detail(j.Ref.KVKey(), from.Add(-time.Second), out.Value, !ok))
	}
	return out, nil
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
