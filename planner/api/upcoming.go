package api

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
)

// RunKind tells what an upcoming run is.
type RunKind string

const (
	// RunScheduled is an occurrence of the job's schedule.
	RunScheduled RunKind = "Scheduled"
	// RunRetry is a pending retry of a failed attempt.
	RunRetry RunKind = "Retry"
	// RunErrorAction is the pending error action of an attempt that
	// failed its last retry.
	RunErrorAction RunKind = "ErrorAction"
	// RunNow is a run asked for outside the schedule (POST …/run).
	RunNow RunKind = "RunNow"
	// RunBackfill is the next run of a backfill (POST …/backfill).
	RunBackfill RunKind = "Backfill"
)

// runKindOrder orders the kinds of runs due at the same instant.
var runKindOrder = map[RunKind]int{RunScheduled: 0, RunRetry: 1, RunErrorAction: 2, RunNow: 3, RunBackfill: 4}

// TimerEntry is a run the timer holds for a job.
type TimerEntry struct {
	Kind RunKind
	// Due is when the run is due: for the scheduled occurrence, its
	// scheduled time.
	Due time.Time
	// Remaining is, for the scheduled occurrence, how many occurrences of
	// the schedule follow it (-1 for no limit).
	Remaining int64
}

// The bounds of GET …/upcoming.
const (
	defaultUpcomingHours = 6
	maxUpcomingHours     = 7 * 24
	defaultUpcomingTop   = 1000
	maxUpcomingTop       = 10000
)

// UpcomingRun is one item of GET …/upcoming.
type UpcomingRun struct {
	// ID is the job's resource id.
	ID            string `json:"id"`
	JobCollection string `json:"jobCollection"`
	Job           string `json:"job"`
	// Due is when the run is due, in UTC.
	Due time.Time `json:"due"`
	// TimeZone is the time zone of the job's recurrence, when it has one,
	// and LocalTime the due time there.
	TimeZone  string `json:"timeZone,omitempty"`
	LocalTime string `json:"localTime,omitempty"`
	// ActionType is the type of the action that runs: the error action's
	// for an ErrorAction.
	ActionType contracts.ActionType `json:"actionType,omitempty"`
	Kind       RunKind              `json:"kind"`
}

// MinuteCount is how many runs are due in one minute.
type MinuteCount struct {
	Minute time.Time `json:"minute"`
	Count  int       `json:"count"`
}

// UpcomingResult is the body of GET …/upcoming: the runs due from now
// until the end of the window, earliest first.
type UpcomingResult struct {
	// From and To bound the window: runs due at From or later and before
	// To.
	From     time.Time     `json:"from"`
	To       time.Time     `json:"to"`
	Value    []UpcomingRun `json:"value"`
	NextLink *string       `json:"nextLink,omitempty"`
	// PerMinute counts the runs of the whole window (every page) by the
	// minute they are due in, for the minutes that have any; only with
	// $histogram=true.
	PerMinute []MinuteCount `json:"perMinute,omitempty"`
}

// upcomingQuery is a parsed query of GET …/upcoming.
type upcomingQuery struct {
	window    time.Duration
	page      page
	histogram bool
}

func parseUpcomingQuery(q url.Values) (upcomingQuery, *apiError) {
	out := upcomingQuery{window: defaultUpcomingHours * time.Hour, page: page{top: defaultUpcomingTop, hasTop: true}}
	bad := func(format string, args ...any) (upcomingQuery, *apiError) {
		return out, newError(http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf(format, args...))
	}
	if v := q.Get("hours"); v != "" {
		h, err := strconv.Atoi(v)
		if err != nil || h < 1 || h > maxUpcomingHours {
			return bad("hours must be an integer from 1 to %d (7 days), not %s", maxUpcomingHours, contracts.QuoteName(v))
		}
		out.window = time.Duration(h) * time.Hour
	}
	if v := q.Get("$top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxUpcomingTop {
			return bad("$top must be an integer from 1 to %d, not %s", maxUpcomingTop, contracts.QuoteName(v))
		}
		out.page.top = n
	}
	if v := q.Get("$skip"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return bad("$skip must be an integer of 0 or more, not %s", contracts.QuoteName(v))
		}
		out.page.skip = n
	}
	if v := q.Get("$histogram"); v != "" {
		b, err := strconv.ParseBool(strings.ToLower(v))
		if err != nil {
			return bad("$histogram must be true or false, not %s", contracts.QuoteName(v))
		}
		out.histogram = b
	}
	return out, nil
}

// listUpcoming answers GET …/upcoming (an extension of this API): the runs
// of the enabled jobs of the enabled collections in scope that the caller
// may read, due in the next hours (6 by default, at most 168), earliest
// first. Each job's scheduled occurrence and its pending retries, error
// actions and runs come from one read of the timer; the occurrences after
// the scheduled one are computed from the job's recurrence, honouring its
// count and end time, as preview does.
func (s *Server) listUpcoming(w http.ResponseWriter, r *http.Request, scope Scope, job string) *apiError {
	q, e := parseUpcomingQuery(r.URL.Query())
	if e != nil {
		return e
	}
	ctx := r.Context()
	var jobs []store.Job
	if job != "" {
		jobs, e = s.upcomingJob(ctx, scope, job)
	} else {
		jobs, e = s.upcomingJobs(ctx, scope)
	}
	if e != nil {
		return e
	}
	from := s.cfg.Now().UTC()
	out := UpcomingResult{From: from, To: from.Add(q.window), Value: []UpcomingRun{}}
	runs := s.upcomingRuns(ctx, jobs, from, out.To)
	zones := map[string]*time.Location{}
	total := 0
	for runs.Len() > 0 {
		src := runs[0]
		if total >= q.page.skip && len(out.Value) < q.page.top {
			out.Value = append(out.Value, src.localized(zones))
		}
		total++
		if q.histogram {
			out.PerMinute = countMinute(out.PerMinute, src.run.Due)
		} else if total > q.page.skip+q.page.top {
			break // the page is full and another follows it
		}
		if src.advance(out.To) {
			heap.Fix(&runs, 0)
		} else {
			heap.Pop(&runs)
		}
	}
	out.NextLink = s.nextLink(r, q.page, total)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// countMinute counts a run due at t in the histogram, whose last minute is
// the latest so far (runs come earliest first).
func countMinute(hist []MinuteCount, t time.Time) []MinuteCount {
	m := t.Truncate(time.Minute)
	if n := len(hist); n > 0 && hist[n-1].Minute.Equal(m) {
		hist[n-1].Count++
		return hist
	}
	return append(hist, MinuteCount{Minute: m, Count: 1})
}

// scopeCollections returns the collections in scope that the request's
// principal may read, in any state. A scope naming a collection answers
// 404 when it does not exist (the principal may read it: the request was
// authorized).
func (s *Server) scopeCollections(ctx context.Context, scope Scope) ([]store.Collection, *apiError) {
	if scope.Collection != "" {
		ref := contracts.CollectionRef{Subscription: scope.Subscription, ResourceGroup: scope.ResourceGroup, Collection: scope.Collection}
		c, err := s.store.GetCollection(ctx, ref)
		if err != nil {
			return nil, storeError(err, collectionWhat(ref))
		}
		return []store.Collection{c}, nil
	}
	cols, err := s.store.ListCollections(ctx, scope.Subscription, scope.ResourceGroup)
	if err != nil {
		return nil, storeError(err, "the job collections")
	}
	return visibleCollections(ctx, cols), nil
}

// upcomingJobs returns the enabled jobs of the enabled collections in
// scope that the request's principal may read. A scope naming a collection
// answers 404 when it does not exist.
func (s *Server) upcomingJobs(ctx context.Context, scope Scope) ([]store.Job, *apiError) {
	cols, e := s.scopeCollections(ctx, scope)
	if e != nil {
		return nil, e
	}
	var jobs []store.Job
	for _, c := range cols {
		if st := c.Properties.State; st != "" && st != contracts.JobCollectionStateEnabled {
			continue
		}
		list, err := s.store.ListSealedJobs(ctx, c.Ref)
		if err != nil {
			return nil, storeError(err, "the jobs of "+collectionWhat(c.Ref))
		}
		for _, j := range list {
			if j.Properties.State == contracts.JobStateEnabled {
				jobs = append(jobs, j)
			}
		}
	}
	return jobs, nil
}

// upcomingJob returns the job of scope's collection named job when it and
// its collection are Enabled, none when either is not, and 404 when either
// does not exist.
func (s *Server) upcomingJob(ctx context.Context, scope Scope, job string) ([]store.Job, *apiError) {
	cref := contracts.CollectionRef{Subscription: scope.Subscription, ResourceGroup: scope.ResourceGroup, Collection: scope.Collection}
	c, err := s.store.GetCollection(ctx, cref)
	if err != nil {
		return nil, storeError(err, collectionWhat(cref))
	}
	j, err := s.store.GetJob(ctx, cref.Job(job))
	if err != nil {
		return nil, storeError(err, jobWhat(cref.Job(job)))
	}
	if st := c.Properties.State; st != "" && st != contracts.JobCollectionStateEnabled || j.Properties.State != contracts.JobStateEnabled {
		return nil, nil
	}
	return []store.Job{j}, nil
}

// upcomingRuns returns the sources of the jobs' runs due in [from, to),
// as a heap whose top is the earliest run. The timer is read once for all
// the jobs; when it does not answer, each job's schedule goes on from its
// definition, as for the job's status.
func (s *Server) upcomingRuns(ctx context.Context, jobs []store.Job, from, to time.Time) runHeap {
	var (
		held    [][]TimerEntry
		tallies []contracts.Tally
	)
	if s.sched != nil && len(jobs) > 0 {
		var err error
		if held, tallies, err = s.sched.Pending(ctx, refsOf(jobs)); err != nil {
			s.cfg.Logger.Warn("reading the jobs' runs from the timer", slog.String("error", err.Error()))
			held, tallies = nil, nil
		}
	}
	var runs runHeap
	for i := range jobs {
		j := &jobs[i]
		sched, err := planner.NewSchedule(&j.Properties, j.Anchored)
		if err != nil {
			s.cfg.Logger.Warn("reading a stored job's schedule", slog.String("job", j.Ref.Key()), slog.String("error", err.Error()))
			continue
		}
		var entries []TimerEntry
		var tally contracts.Tally
		if held != nil {
			entries, tally = held[i], tallies[i]
		}
		scheduled := false
		for _, e := range entries {
			src := &runSource{job: j, run: runOf(j, e.Kind, e.Due.UTC())}
			if e.Kind == RunScheduled {
				scheduled = true
				src.sched, src.left = sched, e.Remaining
			}
			if src.start(from, to) {
				runs = append(runs, src)
			}
		}
		if !scheduled {
			if at, left, ok := s.resumeCounted(sched, tally); ok {
				src := &runSource{job: j, run: runOf(j, RunScheduled, at), sched: sched, left: left}
				if src.start(from, to) {
					runs = append(runs, src)
				}
			}
		}
	}
	heap.Init(&runs)
	return runs
}

// refsOf returns the jobs' references.
func refsOf(jobs []store.Job) []contracts.JobRef {
	refs := make([]contracts.JobRef, len(jobs))
	for i, j := range jobs {
		refs[i] = j.Ref
	}
	return refs
}

// runOf returns the run of a job of the kind due at due.
func runOf(j *store.Job, kind RunKind, due time.Time) UpcomingRun {
	run := UpcomingRun{ID: jobID(j.Ref), JobCollection: j.Ref.Collection, Job: j.Ref.Job, Due: due, Kind: kind}
	if a := j.Properties.Action; a != nil {
		run.ActionType = a.Type
		if kind == RunErrorAction && a.ErrorAction != nil {
			run.ActionType = a.ErrorAction.Type
		}
	}
	if rec := j.Properties.Recurrence; rec != nil {
		run.TimeZone = rec.TimeZone
	}
	return run
}

// runSource yields a job's runs in the window, earliest first: the
// occurrences of its schedule, or one pending run of the timer.
type runSource struct {
	job *store.Job
	// run is the source's current run.
	run UpcomingRun
	// sched computes the occurrences after run's; nil for a source of one
	// run.
	sched *planner.Schedule
	// left is how many occurrences may follow run's (-1 for no limit).
	left int64
}

// start moves the source to its first run due at from or later, and
// reports whether that run is due before to.
func (r *runSource) start(from, to time.Time) bool {
	for r.run.Due.Before(from) {
		if !r.advance(to) {
			return false
		}
	}
	return inWindow(r.run.Due, to)
}

// advance moves the source to its next run and reports whether there is
// one due before to.
func (r *runSource) advance(to time.Time) bool {
	if r.sched == nil || r.left == 0 {
		return false
	}
	at, ok := r.sched.Next(r.run.Due)
	if !ok || !inWindow(at, to) {
		return false
	}
	r.run.Due = at
	if r.left > 0 {
		r.left--
	}
	return true
}

// inWindow reports whether a run due at t is before to and representable.
func inWindow(t, to time.Time) bool {
	return t.Before(to) && !t.After(contracts.MaxDateTime)
}

// localized returns the source's current run with its local time, the
// time zones loaded once per request.
func (r *runSource) localized(zones map[string]*time.Location) UpcomingRun {
	run := r.run
	if run.TimeZone == "" {
		return run
	}
	loc, ok := zones[run.TimeZone]
	if !ok {
		if r.sched != nil {
			loc = r.sched.Location()
		} else if l, err := contracts.LoadZone(run.TimeZone); err == nil {
			loc = l
		}
		zones[run.TimeZone] = loc
	}
	if loc != nil {
		run.LocalTime = run.Due.In(loc).Format(time.RFC3339Nano)
	}
	return run
}

// runHeap orders sources by their current run: due time, then job id,
// then kind.
type runHeap []*runSource

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	a, b := h[i].run, h[j].run
	if c := a.Due.Compare(b.Due); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.ID, b.ID); c != 0 {
		return c < 0
	}
	return runKindOrder[a.Kind] < runKindOrder[b.Kind]
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runSource)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
