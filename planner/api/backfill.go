package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/transient"
	"github.com/jobscheduler/scheduler/planner/store"
)

// MaxBackfill is the most instants one backfill runs.
const MaxBackfill = 10_000

// BackfillPlan is a backfill scheduled: how many runs, the first and last
// instants, and the pace they run at.
type BackfillPlan struct {
	Count       int
	First, Last time.Time
	Pace        time.Duration
}

// Duration is about how long the backfill takes: a pace between each two
// runs.
func (p BackfillPlan) Duration() time.Duration {
	return time.Duration(max(p.Count-1, 0)) * p.Pace
}

var (
	// ErrBackfillPending is returned for a backfill of a job that has one
	// pending: one at a time per job.
	ErrBackfillPending = errors.New("a backfill of the job is pending")
	// ErrBackfillNotRecurring is returned for a backfill of a job without
	// a recurrence.
	ErrBackfillNotRecurring = errors.New("the job has no recurrence")
)

// BackfillTooLargeError is returned for a range that holds more than
// MaxBackfill instants: Count of them, or more than Count when More.
type BackfillTooLargeError struct {
	Count int
	More  bool
}

func (e *BackfillTooLargeError) Error() string {
	more := ""
	if e.More {
		more = "more than "
	}
	return fmt.Sprintf("the range holds %s%d occurrences of the job's schedule, above the limit of %d for one backfill; backfill a shorter range",
		more, e.Count, MaxBackfill)
}

// backfillRequest is the body of POST …/backfill.
type backfillRequest struct {
	Start *string `json:"start"`
	End   *string `json:"end"`
}

// BackfillAnswer is the answer to POST …/backfill.
type BackfillAnswer struct {
	// Count is how many runs the backfill makes, First and Last the
	// expected times of the first and the last.
	Count int       `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Pace is the least time between two of its runs, and Duration about
	// how long they take: ISO 8601 durations.
	Pace     string `json:"pace"`
	Duration string `json:"duration"`
}

// backfillJob answers POST …/jobs/{job}/backfill (an extension of this
// API): it schedules a run of the job for each instant of its schedule in
// [start, end], as runs outside the schedule (see Scheduling.Backfill).
// One backfill of a job may be pending at a time: a second is refused
// with 409 until the first has run.
func (s *Server) backfillJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	data, e := readBody(r)
	if e != nil {
		return e
	}
	start, end, e := s.parseBackfill(data)
	if e != nil {
		return e
	}
	ctx := r.Context()
	j, e := s.runnableJob(ctx, ref, func(j store.Job) *apiError {
		if j.Properties.Recurrence == nil {
			return newError(http.StatusBadRequest, codeBadRequest, fmt.Sprintf("%s has no recurrence: only a recurring job can be backfilled", jobWhat(ref)))
		}
		return nil
	})
	if e != nil {
		return e
	}
	plan, _, err := retry(ctx, pointAttempt, transient.Refused, func(ctx context.Context) (BackfillPlan, error) {
		return s.sched.Backfill(ctx, j, start, end)
	})
	var tooLarge *BackfillTooLargeError
	switch {
	case err == nil && plan.Count == 0:
		return newError(http.StatusBadRequest, codeBadRequest, fmt.Sprintf("the schedule of %s has no occurrence from %s to %s: nothing to backfill",
			jobWhat(ref), start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)))
	case err == nil:
		s.audit(ctx, "job backfill requested", slog.String("job", jobID(ref)), slog.Int("runs", plan.Count),
			slog.Time("first", plan.First), slog.Time("last", plan.Last))
		writeJSON(w, http.StatusAccepted, BackfillAnswer{Count: plan.Count, First: plan.First.UTC(), Last: plan.Last.UTC(),
			Pace: isoDuration(plan.Pace), Duration: isoDuration(plan.Duration())})
		return nil
	case errors.As(err, &tooLarge):
		return newError(http.StatusBadRequest, codeBadRequest, err.Error())
	case errors.Is(err, ErrBackfillNotRecurring):
		return newError(http.StatusBadRequest, codeBadRequest, fmt.Sprintf("%s has no recurrence: only a recurring job can be backfilled", jobWhat(ref)))
	case errors.Is(err, ErrBackfillPending):
		return newError(http.StatusConflict, codeConflict, fmt.Sprintf("a backfill of %s is pending: one runs at a time; send this one once it has run", jobWhat(ref)))
	case transient.Is(err), errors.Is(err, context.Canceled):
		return unavailable("scheduling the backfill failed; retry").because(err)
	}
	return newError(http.StatusInternalServerError, codeInternal, "scheduling the backfill failed").because(err)
}

// parseBackfill reads the body of POST …/backfill: start and end, ISO
// 8601 date-times (UTC without an offset), start before end, end not after
// now.
func (s *Server) parseBackfill(data []byte) (start, end time.Time, e *apiError) {
	var req backfillRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return start, end, newError(http.StatusBadRequest, codeBadRequest,
			`the body must be a JSON object {"start": "<date-time>", "end": "<date-time>"}: `+err.Error())
	}
	var errs contracts.FieldErrors
	parse := func(field string, v *string) time.Time {
		if v == nil || *v == "" {
			errs.Add(field, "is required: an ISO 8601 date-time such as 2026-01-02T15:04:05Z")
			return time.Time{}
		}
		t, err := contracts.ParseDateTime(*v, time.UTC)
		if err != nil {
			errs.Add(field, "%s", err.Error())
		}
		return t
	}
	start, end = parse("start", req.Start), parse("end", req.End)
	if len(errs) == 0 {
		if now := s.cfg.Now(); end.After(now) {
			errs.Add("end", "%s is after now (%s): a backfill runs past instants only", end.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		if !start.Before(end) {
			errs.Add("end", "%s is not after start %s", end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
		}
	}
	if len(errs) > 0 {
		return start, end, invalidRequest("The backfill request is invalid", errs)
	}
	return start, end, nil
}

// invalidRequest is a 400 whose message, after what, holds every
// violation and whose details name each field.
func invalidRequest(what string, errs contracts.FieldErrors) *apiError {
	e := invalid(errs)
	lines := make([]string, len(errs))
	for i, fe := range errs {
		lines[i] = fe.Error()
	}
	e.body.Message = what + ": " + strings.Join(lines, "; ")
	return e
}

// isoDuration writes d as an ISO 8601 duration: PT1H2M3S, PT0.5S, PT0S.
func isoDuration(d time.Duration) string {
	if d <= 0 {
		return "PT0S"
	}
	var b strings.Builder
	b.WriteString("PT")
	if h := d / time.Hour; h > 0 {
		b.WriteString(strconv.FormatInt(int64(h), 10) + "H")
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		b.WriteString(strconv.FormatInt(int64(m), 10) + "M")
		d -= m * time.Minute
	}
	if d > 0 {
		b.WriteString(strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "S")
	}
	return b.String()
}
