package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/startstop"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// applyBatch is the most store changes applied in one round trip to Redis,
// and gatherFor how long changes are gathered into a batch: the store hands
// them over one at a time, a million of them at start.
const (
	applyBatch = 1000
	gatherFor  = 10 * time.Millisecond
)

// rewatchAfter bounds the wait before the Follower watches the store again
// after its watch ended, and before it schedules every job again after the
// timer failed to answer.
const rewatchAfter = time.Second

// Follower keeps the timer in step with the job store: it follows every
// change of a job and puts the job's next occurrence in the timer, or takes
// out the entries of a job disabled or deleted. A watch that ends (the
// connection to NATS was lost for good, the bucket's leader moved) is
// started again; changes the timer could not take (Redis did not answer)
// are made good by scheduling every job again once it answers.
type Follower struct {
	startstop.Loop
	store     *store.Store
	ix        *timer.Index
	jobs      *Jobs
	followUps *FollowUps
	cfg       Config
	wake      func()
	// wakeFor wakes the dispatcher for an entry due at a time.
	wakeFor func(time.Time)
	// onSynced, when set, is called once the first watch delivered every
	// stored job.
	onSynced func()

	// synced is set once the first watch delivered every stored job.
	synced atomic.Bool
	// stale is set when changes could not be written to the timer.
	stale atomic.Bool
}

func newFollower(st *store.Store, ix *timer.Index, jobs *Jobs, fu *FollowUps, cfg Config, wake func()) *Follower {
	return &Follower{store: st, ix: ix, jobs: jobs, followUps: fu, cfg: cfg, wake: wake}
}

// Start starts following the store.
func (f *Follower) Start(ctx context.Context) error { return f.Loop.Start(ctx, f.run) }

// Synced reports whether every stored job has been seen and scheduled
// once.
func (f *Follower) Synced() bool { return f.synced.Load() }

func (f *Follower) run(ctx context.Context) {
	// The calendars come first: a job is compiled against the calendars it
	// excludes.
	calendarsReady := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { f.followCalendars(ctx, calendarsReady) })
	defer wg.Wait()
	select {
	case <-calendarsReady:
	case <-ctx.Done():
		return
	}
	for first := true; ctx.Err() == nil; first = false {
		changes, initial, err := f.store.WatchJobs(ctx)
		if err != nil {
			f.cfg.Logger.Warn("watching the job store; trying again", slog.String("error", err.Error()))
			f.pause(ctx)
			continue
		}
		if !first {
			f.cfg.Logger.Info("watching the job store again")
		}
		f.follow(ctx, changes, initial)
		if ctx.Err() == nil {
			f.cfg.Logger.Warn("the watch of the job store ended; watching it again")
			f.pause(ctx)
		}
	}
}

// pause waits rewatchAfter or until ctx ends.
func (f *Follower) pause(ctx context.Context) {
	t := time.NewTimer(rewatchAfter)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// follow applies the changes of one watch until it ends. Changes that are
// waiting are applied together, so scheduling a million jobs at start
// costs a few thousand round trips, not millions. Jobs deleted while no
// watch ran are taken out once the watch delivered every stored job.
func (f *Follower) follow(ctx context.Context, changes <-chan store.Change, initial <-chan struct{}) {
	seen := map[string]bool{}
	retry := time.NewTicker(rewatchAfter)
	defer retry.Stop()
	batch := make([]store.Change, 0, applyBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-retry.C:
			f.scheduleAgainIfStale(ctx)
		case <-initial:
			initial = nil
			f.forgetUnseen(ctx, seen)
			seen = nil
			if !f.synced.Swap(true) && f.onSynced != nil {
				f.onSynced()
			}
			f.wake()
		case c, ok := <-changes:
			if !ok {
				return
			}
			batch = append(batch[:0], c)
			gather := time.NewTimer(gatherFor)
		drain:
			for len(batch) < applyBatch {
				select {
				case c, ok := <-changes:
					if !ok {
						break drain
					}
					batch = append(batch, c)
				case <-gather.C:
					break drain
				}
			}
			gather.Stop()
			if seen != nil {
				for _, c := range batch {
					seen[c.Key] = true
				}
			}
			if err := f.apply(ctx, batch); err != nil && ctx.Err() == nil {
				// Every job is scheduled again once the timer answers; a
				// deleted job left in it is skipped when due.
				f.stale.Store(true)
				f.cfg.Logger.Error("scheduling jobs; every job is scheduled again shortly", slog.Int("changes", len(batch)), slog.String("error", err.Error()))
			}
		}
	}
}

// forgetUnseen takes out the jobs seen by an earlier watch that this one's
// initial values did not hold: they were deleted while no watch ran.
func (f *Follower) forgetUnseen(ctx context.Context, seen map[string]bool) {
	var gone []store.Change
	for key := range f.jobs.keys() {
		if !seen[key] {
			gone = append(gone, store.Change{Key: key, Deleted: true})
		}
	}
	if len(gone) == 0 {
		return
	}
	if err := f.apply(ctx, gone); err != nil && ctx.Err() == nil {
		f.stale.Store(true)
		f.cfg.Logger.Error("taking out jobs deleted while the store was not watched", slog.Int("jobs", len(gone)), slog.String("error", err.Error()))
	}
}

// scheduleAgainIfStale schedules every job again when changes could not be
// written to the timer.
func (f *Follower) scheduleAgainIfStale(ctx context.Context) {
	if !f.stale.Load() {
		return
	}
	f.stale.Store(false)
	if err := f.ScheduleAll(ctx); err != nil {
		f.stale.Store(true)
		if ctx.Err() == nil {
			f.cfg.Logger.Error("scheduling every job again", slog.String("error", err.Error()))
		}
		return
	}
	f.cfg.Logger.Info("scheduled every job again after the timer failed to answer")
}

// pendingJob is a job to (re)schedule, with the version seen before it.
type pendingJob struct {
	job   store.Job
	sched *planner.Schedule
	prev  *cached
	// calendarChanged is set when a calendar the job excludes changed: its
	// next occurrence is planned again although the job did not change.
	calendarChanged bool
}

// apply schedules, reschedules or unschedules the jobs of store changes.
func (f *Follower) apply(ctx context.Context, changes []store.Change) error {
	var (
		errs []error
		jobs []pendingJob
	)
	for _, c := range changes {
		if c.Err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", c.Key, c.Err))
			continue
		}
		if c.Deleted || c.Job == nil {
			f.jobs.remove(c.Key)
			errs = append(errs, f.forget(ctx, c.Key)...)
			continue
		}
		cj, err := f.jobs.compile(*c.Job)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		prev := f.jobs.put(cj)
		if prev != nil && !prev.job.Created.Equal(cj.job.Created) {
			// A job created again under the key of one whose delete this
			// watch did not read: the bucket keeps one write of a key, and
			// a create made before the watch read the delete took its
			// place. The old job goes as its delete would have taken it,
			// and the new one starts with nothing of it.
			errs = append(errs, f.forget(ctx, c.Key)...)
			prev = nil
		}
		jobs = append(jobs, pendingJob{job: cj.job, sched: cj.sched, prev: prev})
	}
	errs = append(errs, f.schedule(ctx, jobs))
	return errors.Join(errs...)
}

// forget takes out what the planner keeps of a deleted job: its timer
// entries and status, its follow-ups and its history.
func (f *Follower) forget(ctx context.Context, key string) []error {
	errs := []error{f.ix.RemoveJob(ctx, key), f.followUps.removeJob(ctx, key)}
	if f.cfg.History != nil {
		errs = append(errs, f.cfg.History.Purge(ctx, key))
	}
	return errs
}

// ScheduleAll schedules every job seen again, in batches; a job already
// scheduled from its current version keeps its entry.
func (f *Follower) ScheduleAll(ctx context.Context) error {
	jobs := f.jobs.all()
	var errs []error
	for start := 0; start < len(jobs); start += applyBatch {
		batch := make([]pendingJob, 0, applyBatch)
		for _, c := range jobs[start:min(start+applyBatch, len(jobs))] {
			batch = append(batch, pendingJob{job: c.job, sched: c.sched})
		}
		errs = append(errs, f.schedule(ctx, batch))
	}
	return errors.Join(errs...)
}

// schedule puts the next occurrence of each job in the timer, or takes out
// the jobs that are not enabled.
func (f *Follower) schedule(ctx context.Context, jobs []pendingJob) error {
	var (
		errs     []error
		keys     []string
		enabled  []pendingJob
		disabled []string
	)
	for _, p := range jobs {
		key := p.job.Ref.KVKey()
		if p.job.Properties.State != contracts.JobStateEnabled {
			disabled = append(disabled, key)
			continue
		}
		keys = append(keys, key)
		enabled = append(enabled, p)
	}
	if len(disabled) > 0 {
		errs = append(errs, f.ix.RemoveAll(ctx, disabled, scheduleSlot))
	}
	if len(enabled) == 0 {
		return errors.Join(errs...)
	}
	existing, found, err := f.ix.GetAll(ctx, keys, scheduleSlot)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	tallies, _, err := f.ix.Statuses(ctx, keys)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	now := f.cfg.Now()
	var entries []timer.Entry
	for i, p := range enabled {
		entry, keep := f.plan(p, existing[i], found[i], tallies[i], now)
		switch {
		case keep:
		case entry == nil:
			errs = append(errs, f.ix.Remove(ctx, keys[i], scheduleSlot))
		default:
			entries = append(entries, *entry)
		}
	}
	if len(entries) > 0 {
		errs = append(errs, f.ix.ScheduleAll(ctx, entries))
		earliest := entries[0].Due
		for _, e := range entries[1:] {
			if e.Due.Before(earliest) {
				earliest = e.Due
			}
		}
		f.wakeFor(earliest)
	}
	return errors.Join(errs...)
}

// plan decides a job's timer entry: keep the existing one (already
// scheduled from this version), the existing occurrence under the new
// revision (the schedule is unchanged: only the action or a detail
// changed), or the first occurrence from here (see firstEntry); nil when
// the job never runs again.
func (f *Follower) plan(p pendingJob, existing timer.Entry, found bool, tally contracts.Tally, now time.Time) (entry *timer.Entry, keep bool) {
	j := p.job
	if found && existing.Revision == j.Revision && !p.calendarChanged {
		return nil, true // another planner, or a replay, got here first
	}
	if found && p.prev != nil && !p.calendarChanged && sameSchedule(&p.prev.job, &j) {
		existing.Revision = j.Revision
		return &existing, false
	}
	first, skipped, ok := firstEntry(j, p.sched, now, f.cfg.MissedGrace, tally)
	if skipped != nil {
		reportSkipped(f.cfg, *skipped, catchUpPolicy(&j.Properties))
	}
	if !ok {
		return nil, false
	}
	if settled := j.Updated.Add(f.cfg.Settle); first.Due.Before(settled) {
		first.Due = settled
	}
	return &first, false
}

// sameSchedule reports whether two versions of a job have the same
// schedule: the same anchor, start time and recurrence. The anchor alone
// does not tell, as it has whole seconds: a start time changed in the
// second the job was anchored keeps it.
func sameSchedule(a, b *store.Job) bool {
	return a.Anchored.Equal(b.Anchored) && a.Properties.SameSchedule(&b.Properties)
}

// firstEntry is the first occurrence of a job being (re)scheduled. A job
// whose schedule, as anchored now, already ran (the tally reached one of
// its occurrences: the job was rescheduled after Redis lost its timer, or
// changed after its last occurrence was dispatched) goes on after the
// occurrence reached, counting on; any other starts at its first instant.
// Either, when it is more than grace in the past, is moved as the job's
// catch-up policy says (see catchUpFrom): under Earliest, to the next
// instant from now (missed instants are skipped, not caught up). skipped
// is the occurrence a policy other than Earliest skipped, nil when none.
func firstEntry(j store.Job, sched *planner.Schedule, now time.Time, grace time.Duration, tally contracts.Tally) (entry timer.Entry, skipped *timer.Entry, ok bool) {
	at, occurrence, ok := sched.Resume(tally.Occurrence, tally.OccurrenceTime)
	remaining := int64(-1)
	if c := sched.Count(); c > 0 {
		remaining = int64(c) - occurrence
	}
	entry = timer.Entry{
		JobKey: j.Ref.KVKey(), Slot: scheduleSlot, Due: at, Expected: at,
		Occurrence: occurrence, Action: contracts.MainAction, Remaining: remaining, Revision: j.Revision,
	}
	if ok && late(sched.Due(entry.JobKey, at), now, grace) {
		switch policy := catchUpPolicy(&j.Properties); policy {
		case contracts.CatchUpEarliest:
			at, ok = sched.Next(now.Add(-time.Second))
		default:
			if at, ok = catchUpFrom(policy, sched, entry.Expected, now, catchUpWindow(&j.Properties)); !ok || !at.Equal(entry.Expected) {
				missed := entry
				skipped = &missed
			}
		}
	}
	if !ok {
		return timer.Entry{}, skipped, false
	}
	entry.Due, entry.Expected = sched.Due(entry.JobKey, at), at
	return entry, skipped, true
}
