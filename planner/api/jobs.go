package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/transient"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
)

func jobID(ref contracts.JobRef) string {
	return collectionID(ref.CollectionRef()) + "/jobs/" + ref.Job
}

func jobWhat(ref contracts.JobRef) string {
	return fmt.Sprintf("job %q in job collection %q", ref.Job, ref.Collection)
}

// final reports whether a job's state is final: only DELETE is allowed then.
func final(s contracts.JobState) bool {
	return s == contracts.JobStateCompleted || s == contracts.JobStateFaulted
}

// renderJob returns the job as the API shows it: secrets removed, status
// filled in.
func (s *Server) renderJob(ctx context.Context, j store.Job) contracts.JobDefinition {
	return s.renderJobs(ctx, []store.Job{j})[0]
}

// renderJobs renders jobs with their status, asking the timer about all of
// them at once. When the timer does not answer, counters show 0 and the
// next execution is computed from the definition.
func (s *Server) renderJobs(ctx context.Context, jobs []store.Job) []contracts.JobDefinition {
	next, tallies := s.runtimes(ctx, jobs)
	return s.render(ctx, jobs, next, tallies)
}

// renderNewJob renders a job just created without asking the timer, which
// holds nothing of it yet: no counters, and its next execution from its
// definition.
func (s *Server) renderNewJob(ctx context.Context, j store.Job) contracts.JobDefinition {
	return s.render(ctx, []store.Job{j}, nil, nil)[0]
}

// render renders jobs with what the timer said of them (nil when nothing).
func (s *Server) render(ctx context.Context, jobs []store.Job, next []time.Time, tallies []contracts.Tally) []contracts.JobDefinition {
	out := make([]contracts.JobDefinition, len(jobs))
	scheds := s.schedules(ctx)
	for i, j := range jobs {
		props := j.Properties.Redacted()
		props.SetSecrets = j.Properties.SecretsSet()
		status := contracts.JobStatus{}
		if tallies != nil {
			status = tallies[i].Status()
		}
		if props.State == contracts.JobStateEnabled {
			var at time.Time
			if next != nil {
				at = next[i]
			}
			var tally contracts.Tally
			if tallies != nil {
				tally = tallies[i]
			}
			if at, ok := s.nextExecution(scheds, j, at, tally); ok {
				status.NextExecutionTime = &at
			}
		}
		status.StateReason = j.StateReason
		props.Status = &status
		out[i] = contracts.JobDefinition{
			ID: jobID(j.Ref), Type: contracts.JobResourceType, Name: j.Ref.Collection + "/" + j.Ref.Job, Properties: props,
		}
	}
	return out
}

// runtimes asks the timer, once, when each job runs next and for its
// tally; nil, nil when the timer does not answer (which is logged) or
// there is none.
func (s *Server) runtimes(ctx context.Context, jobs []store.Job) ([]time.Time, []contracts.Tally) {
	if s.sched == nil || len(jobs) == 0 {
		return nil, nil
	}
	next, tallies, err := s.sched.Runtimes(ctx, refsOf(jobs))
	if err != nil {
		s.cfg.Logger.Warn("reading the jobs' status from the timer", slog.String("error", err.Error()))
		return nil, nil
	}
	return next, tallies
}

// nextExecution returns the timer's next execution of the job, scheduled;
// a job the timer does not hold (just written, or its schedule ran out)
// gets its next occurrence from its definition and the occurrence its
// schedule reached.
func (s *Server) nextExecution(scheds *schedules, j store.Job, scheduled time.Time, tally contracts.Tally) (time.Time, bool) {
	if !scheduled.IsZero() {
		return scheduled.UTC(), !scheduled.After(contracts.MaxDateTime)
	}
	sched, err := scheds.of(&j)
	if err != nil {
		return time.Time{}, false
	}
	first, _, ok := s.resume(sched, tally)
	return first, ok && !first.After(contracts.MaxDateTime)
}

// resume returns the next occurrence of a schedule the timer does not
// hold, and its 1-based number, as the dispatcher will schedule it: the
// occurrence after the one the tally reached (from 1 when the schedule
// started again since), or the next one from now when that one is past.
func (s *Server) resume(sched *planner.Schedule, tally contracts.Tally) (time.Time, int64, bool) {
	now := s.cfg.Now().Truncate(time.Second)
	at, n, ok := sched.Resume(tally.Occurrence, tally.OccurrenceTime)
	if ok && at.Before(now) {
		at, ok = sched.Next(now.Add(-time.Second))
	}
	return at, n, ok
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	j, err := s.store.GetJob(r.Context(), ref)
	if err != nil {
		return storeError(err, jobWhat(ref))
	}
	writeJSON(w, http.StatusOK, s.renderJob(r.Context(), j))
	return nil
}

func (s *Server) putJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	data, e := readBody(r)
	if e != nil {
		return e
	}
	return s.saveJob(w, r, ref, fromDefinition(data), true)
}

// fromDefinition builds a job's properties from a full definition, as
// PUT replaces a job with.
func fromDefinition(data []byte) func(now time.Time, _ *store.Job) (contracts.JobProperties, *apiError) {
	return func(now time.Time, _ *store.Job) (contracts.JobProperties, *apiError) {
		props, errs := planner.ParseJob(data, now)
		if len(errs) > 0 {
			return props, invalid(errs)
		}
		return props, nil
	}
}

func (s *Server) patchJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	data, e := readBody(r)
	if e != nil {
		return e
	}
	return s.saveJob(w, r, ref, func(now time.Time, existing *store.Job) (contracts.JobProperties, *apiError) {
		if existing == nil {
			return contracts.JobProperties{}, storeError(store.ErrNotFound, jobWhat(ref))
		}
		base := existing.Properties.Clone()
		base.Status = nil
		merged, enveloped, e := mergePatchEnvelope(base, data, true)
		if e != nil {
			return contracts.JobProperties{}, e
		}
		props, errs := planner.ParseJob(merged, now)
		if len(errs) == 0 {
			errs = keptSecretsStayBound(existing.Properties.Action, props.Action, data)
		}
		if len(errs) > 0 {
			if enveloped {
				for i := range errs {
					errs[i].Path = strings.TrimSuffix("properties."+errs[i].Path, ".")
				}
			}
			return props, invalid(errs)
		}
		return props, nil
	}, false)
}

// jobDraft is a job as a PUT or PATCH would write it, checked against its
// collection and the job it replaces, before anything is written.
type jobDraft struct {
	job store.Job
	// existing is the job it replaces, nil for a new one.
	existing *store.Job
	// collection is the revision of the collection record read, and
	// maxJobs its quota of jobs.
	collection    uint64
	maxJobs       int
	maxRecurrence time.Duration
}

// draftJob reads the job's collection and the job it replaces, and builds
// the job with the properties build returns, refusing a change of a final
// job and a recurrence over the collection's quota. Nothing is written.
//
// asNew drafts a new job without reading the job, and reads the collection
// as the store last saw it (store.Store.CollectionForCreate): for a create
// that is tried before anything else, as the store refuses it when the job
// exists or the collection changed since (and it is then drafted again).
func (s *Server) draftJob(ctx context.Context, ref contracts.JobRef,
	build func(now time.Time, existing *store.Job) (contracts.JobProperties, *apiError), asNew bool) (jobDraft, *apiError) {
	now := s.cfg.Now().Truncate(time.Second).UTC()
	read := s.store.GetCollection
	if asNew {
		read = s.store.CollectionForCreate
	}
	coll, err := read(ctx, ref.CollectionRef())
	if err != nil {
		return jobDraft{}, storeError(err, collectionWhat(ref.CollectionRef()))
	}
	var existing *store.Job
	if !asNew {
		switch j, err := s.store.GetJob(ctx, ref); {
		case err == nil:
			existing = &j
		case !errors.Is(err, store.ErrNotFound):
			return jobDraft{}, storeError(err, jobWhat(ref))
		}
	}
	if existing != nil && final(existing.Properties.State) {
		return jobDraft{}, newError(http.StatusConflict, codeConflict, fmt.Sprintf(
			"%s is %s: a Completed or Faulted job cannot be changed, only deleted", jobWhat(ref), existing.Properties.State))
	}
	props, e := build(now, existing)
	if e != nil {
		return jobDraft{}, e
	}
	cals, e := s.checkExcludedCalendars(ctx, ref.CollectionRef(), &props)
	if e != nil {
		return jobDraft{}, e
	}
	if len(cals) > 0 {
		// Checked again with the calendars: they may leave no day to run on.
		if errs := planner.ValidateJobWithCalendars(&props, "properties.", now, nil, cals...); len(errs) > 0 {
			return jobDraft{}, invalid(errs)
		}
	}
	if props.State == "" {
		props.State = contracts.JobStateEnabled
	}
	job := store.Job{Ref: ref, Properties: props, Created: now, Anchored: now, Updated: now}
	if existing != nil {
		// Names are case-insensitive: the job keeps the names it was created with.
		job.Ref, job.Created, job.Anchored = existing.Ref, existing.Created, existing.Anchored
		if reanchors(&existing.Properties, &props) {
			job.Anchored = now
		}
		keepReason(existing, &job)
	}
	d := jobDraft{job: job, existing: existing, collection: coll.Revision}
	d.maxJobs, d.maxRecurrence = effectiveQuota(coll.Properties)
	if e := checkRecurrenceQuota(&d.job.Properties, d.job.Anchored, d.maxRecurrence); e != nil {
		return jobDraft{}, e
	}
	return d, nil
}

// saveAttempts bounds how often saveJob drafts a job again: after the
// first try of a PUT as a new job, and after a conflict with another
// request.
const saveAttempts = 4

// saveJob creates or replaces a job with the properties build returns,
// enforcing the collection's quotas and the final states, and retrying when
// another request changed the job at the same time.
func (s *Server) saveJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef,
	build func(now time.Time, existing *store.Job) (contracts.JobProperties, *apiError), mayCreate bool) *apiError {
	ctx := r.Context()
	for attempt := 0; ; attempt++ {
		// A PUT first tries the job as new, which spares reading it (and
		// the collection) when it is.
		d, e := s.draftJob(ctx, ref, build, mayCreate && attempt == 0)
		if e != nil {
			return e
		}
		job, existing := d.job, d.existing
		var err error
		var saved store.Job
		status := http.StatusOK
		switch {
		case existing == nil && !mayCreate:
			return storeError(store.ErrNotFound, jobWhat(ref))
		case existing == nil:
			// Kept only if the collection is still as read: its quota, and
			// not being deleted (ErrConflict otherwise, and the draft is
			// made again).
			saved, err = s.store.CreateJobIn(ctx, job, store.Admission{CollectionRevision: d.collection, MaxJobs: d.maxJobs})
			status = http.StatusCreated
		default:
			if enabling(existing, job.Properties.State) {
				if e := s.resetFaults(ctx, ref); e != nil {
					return e
				}
			}
			saved, err = s.store.UpdateJob(ctx, job, existing.Revision)
		}
		if (errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict)) && attempt < saveAttempts {
			continue
		}
		if err != nil {
			return storeError(err, jobWhat(ref))
		}
		event := "job updated"
		if existing == nil {
			event = "job created"
		}
		s.audit(ctx, event, slog.String("job", jobID(ref)))
		if existing == nil {
			writeJSON(w, status, s.renderNewJob(r.Context(), saved))
		} else {
			writeJSON(w, status, s.renderJob(ctx, saved))
		}
		return nil
	}
}

// reanchors reports whether a change restarts a job's schedule from now: a
// new start time or recurrence, or enabling a disabled job whose catchUp is
// Earliest (the default: missed instants are skipped, not caught up; under
// another policy the job keeps its anchor and the planner catches up what
// it missed as the policy says). Saving an unchanged job does not, so a
// repeated PUT never adds a run.
func reanchors(old, updated *contracts.JobProperties) bool {
	if old.State == contracts.JobStateDisabled && updated.State == contracts.JobStateEnabled &&
		(updated.CatchUp == "" || updated.CatchUp == contracts.CatchUpEarliest) {
		return true
	}
	return !old.SameSchedule(updated)
}

// setJobState enables or disables a job for its collection's enable and
// disable; final jobs and jobs already in that state are left alone.
func (s *Server) setJobState(ctx context.Context, j store.Job, state contracts.JobState) *apiError {
	ref := j.Ref
	for attempt := 0; ; attempt++ {
		if final(j.Properties.State) || j.Properties.State == state {
			return nil
		}
		updated := j
		updated.Properties = j.Properties.Clone()
		updated.Properties.State = state
		if enabling(&j, state) {
			updated.StateReason = ""
			if e := s.resetFaults(ctx, ref); e != nil {
				return e
			}
		}
		now := s.cfg.Now().Truncate(time.Second).UTC()
		updated.Updated = now
		if reanchors(&j.Properties, &updated.Properties) {
			updated.Anchored = now
		}
		_, err := s.store.UpdateJob(ctx, updated, j.Revision)
		switch {
		case err == nil, errors.Is(err, store.ErrNotFound):
			return nil
		case errors.Is(err, store.ErrConflict) && attempt < 3:
			if j, err = s.store.GetJob(ctx, ref); errors.Is(err, store.ErrNotFound) {
				return nil
			} else if err != nil {
				return storeError(err, jobWhat(ref))
			}
			continue
		}
		return storeError(err, jobWhat(ref))
	}
}

func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	if err := s.store.DeleteJob(r.Context(), ref); err != nil {
		return storeError(err, jobWhat(ref))
	}
	s.audit(r.Context(), "job deleted", slog.String("job", jobID(ref)))
	w.WriteHeader(http.StatusOK)
	return nil
}

// runJob runs the job's action once now. A run is not idempotent: it is
// retried only after a fault that left it undone (transient.Refused).
// runnableJob reads a job that runs may be requested of, refusing one
// that check refuses (when check is not nil), one that is not Enabled or
// whose collection is not, and any while the planner does not run.
func (s *Server) runnableJob(ctx context.Context, ref contracts.JobRef, check func(store.Job) *apiError) (store.Job, *apiError) {
	j, err := s.store.GetJob(ctx, ref)
	if err != nil {
		return j, storeError(err, jobWhat(ref))
	}
	if check != nil {
		if e := check(j); e != nil {
			return j, e
		}
	}
	coll, err := s.store.GetCollection(ctx, ref.CollectionRef())
	if err != nil {
		return j, storeError(err, collectionWhat(ref.CollectionRef()))
	}
	if e := runnable(coll, j); e != nil {
		return j, e
	}
	if s.sched == nil {
		return j, unavailable("the planner is not running")
	}
	return j, nil
}

func (s *Server) runJob(w http.ResponseWriter, r *http.Request, ref contracts.JobRef) *apiError {
	ctx := r.Context()
	j, e := s.runnableJob(ctx, ref, nil)
	if e != nil {
		return e
	}
	_, _, err := retry(ctx, pointAttempt, transient.Refused, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.sched.RunNow(ctx, j)
	})
	switch {
	case err == nil:
		s.audit(ctx, "job run requested", slog.String("job", jobID(ref)))
		w.WriteHeader(http.StatusOK)
		return nil
	case transient.Is(err), errors.Is(err, context.Canceled):
		return unavailable("scheduling the run failed; retry").because(err)
	}
	return newError(http.StatusInternalServerError, codeInternal, "scheduling the run failed").because(err)
}

// runnable returns why the job cannot run now, or nil: it has ended, or it
// or its collection is not enabled.
func runnable(coll store.Collection, j store.Job) *apiError {
	if final(j.Properties.State) {
		return newError(http.StatusConflict, codeConflict, fmt.Sprintf("%s is %s and cannot run", jobWhat(j.Ref), j.Properties.State))
	}
	if st := coll.Properties.State; st != "" && st != contracts.JobCollectionStateEnabled {
		return newError(http.StatusConflict, codeConflict, fmt.Sprintf(
			"%s is %s: its jobs cannot run; enable it (POST …/enable) to run them", collectionWhat(coll.Ref), st))
	}
	if j.Properties.State == contracts.JobStateDisabled {
		return newError(http.StatusConflict, codeConflict, fmt.Sprintf("%s is Disabled: enable it to run it", jobWhat(j.Ref)))
	}
	return nil
}
