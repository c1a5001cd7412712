package dispatch

import (
	"log/slog"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// What a job's catch-up policy (contracts.CatchUpPolicy) makes of an
// occurrence of its schedule more than Config.MissedGrace late: the
// planners were down or stalled (the dispatcher claims it late), or the job
// is scheduled again (enabled again, or the timer was rebuilt after Redis
// lost it) and the Follower finds its next occurrence in the past.
//
//   - Earliest: the dispatcher runs the late occurrence once and the job
//     goes on from its next instant after now; the Follower runs none.
//   - Skip: none runs; the job goes on from its next instant after now.
//   - Latest: the last instant at or before now runs, once.
//   - All: each instant within the catch-up window runs, in order, at most
//     one per Config.CatchUpPace; then the job is back on its schedule.
//
// An instant skipped does not count toward the recurrence's count, and the
// occurrence that runs instead keeps its number; each caught-up run counts.

// defaultCatchUpWindow is how far back CatchUpAll reaches when the job
// names no catchUpWindow.
const defaultCatchUpWindow = 24 * time.Hour

// catchUpSteps bounds the instants walked to find the latest missed one.
// Past it (a schedule of many instants per second of the outage, which the
// jump near now in latestMissed makes unlikely) the job goes on from its
// next instant, as under Skip.
const catchUpSteps = 10_000

// catchUpPolicy returns the job's policy, CatchUpEarliest when it names
// none.
func catchUpPolicy(p *contracts.JobProperties) contracts.CatchUpPolicy {
	if p.CatchUp == "" {
		return contracts.CatchUpEarliest
	}
	return p.CatchUp
}

// catchUpWindow returns the job's catch-up window: defaultCatchUpWindow when
// it names none or one that does not parse (validation rejects those).
func catchUpWindow(p *contracts.JobProperties) time.Duration {
	if p.CatchUpWindow == "" {
		return defaultCatchUpWindow
	}
	d, err := contracts.ParseDuration(p.CatchUpWindow)
	if err != nil || d <= 0 {
		return defaultCatchUpWindow
	}
	return d
}

// late reports whether an occurrence expected at expected is late enough at
// now for the catch-up policy to apply.
func late(expected, now time.Time, grace time.Duration) bool {
	return expected.Before(now.Add(-grace))
}

// catchUpFrom returns the instant a job goes on from under policy when its
// occurrence at, later than the grace, is missed at now: at itself when it
// runs (Earliest; All within the window), else an instant after it. It
// reports false when the schedule has no instant left.
func catchUpFrom(policy contracts.CatchUpPolicy, sched *planner.Schedule, at, now time.Time, window time.Duration) (time.Time, bool) {
	switch policy {
	case contracts.CatchUpSkip:
		return nextAfterNow(sched, at, now)
	case contracts.CatchUpLatest:
		if latest, ok := latestMissed(sched, at, now, catchUpSteps); ok {
			return latest, true
		}
		return nextAfterNow(sched, at, now)
	case contracts.CatchUpAll:
		if cutoff := now.Add(-window); at.Before(cutoff) {
			// The first instant at or after the cutoff.
			return sched.Next(cutoff.Add(-time.Nanosecond))
		}
	}
	return at, true
}

// nextAfterNow is the job's next instant from now, as a late occurrence's
// successor has always been computed (an instant within the second before
// now still runs), and always after at.
func nextAfterNow(sched *planner.Schedule, at, now time.Time) (time.Time, bool) {
	from := now.Add(-time.Second)
	if from.Before(at) {
		from = at
	}
	return sched.Next(from)
}

// latestMissed returns the last instant of the schedule at or before now,
// at or after at, walking the schedule forward with Next for at most steps
// instants; false when the walk did not reach now within them. It first
// jumps near now: the first instant after now−d, for d = 1s, 2s, 4s, …
// while now−d is after at, starts the walk when it is at or before now.
func latestMissed(sched *planner.Schedule, at, now time.Time, steps int) (time.Time, bool) {
	from := at
	for d := time.Second; now.Add(-d).After(at); d *= 2 {
		if t, ok := sched.Next(now.Add(-d)); ok && !t.After(now) {
			from = t
			break
		}
	}
	for range steps {
		t, ok := sched.Next(from)
		if !ok || t.After(now) {
			return from, true
		}
		from = t
	}
	return time.Time{}, false
}

// missedEntry is the entry that replaces a skipped occurrence c of the
// schedule: the instant at, with c's number and the occurrences remaining
// after it, as an instant skipped does not count. Nil when there is none.
func missedEntry(c timer.Entry, sched *planner.Schedule, at time.Time, ok bool) *timer.Entry {
	if !ok {
		return nil
	}
	return &timer.Entry{
		JobKey: c.JobKey, Slot: scheduleSlot, Due: sched.Due(c.JobKey, at), Expected: at,
		Occurrence: c.Occurrence, Action: contracts.MainAction, Remaining: c.Remaining, Revision: c.Revision,
	}
}

// caughtUpEntry is the occurrence after c under CatchUpAll: the schedule's
// next instant after c's, not after now, so that missed instants run in
// turn; one already past is due no sooner than pace after now. Nil when
// the job has ended.
func caughtUpEntry(c timer.Claim, sched *planner.Schedule, now time.Time, pace time.Duration) *timer.Entry {
	if c.Remaining == 0 {
		return nil
	}
	at, ok := sched.Next(c.Expected)
	if !ok {
		return nil
	}
	due := sched.Due(c.JobKey, at)
	if !at.After(now) {
		// Paced from when c is published: its due time, or now when that
		// has passed.
		due = maxTime(at, maxTime(now, c.Due).Add(pace))
	}
	remaining := c.Remaining
	if remaining > 0 {
		remaining--
	}
	return &timer.Entry{
		JobKey: c.JobKey, Slot: scheduleSlot, Due: due, Expected: at,
		Occurrence: c.Occurrence + 1, Action: contracts.MainAction, Remaining: remaining, Revision: c.Revision,
	}
}

// maxTime returns the later of two times.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// planClaim decides what becomes of a claimed attempt: whether its
// catch-up policy skips it (an occurrence of the schedule more than grace
// late) and the entry that follows it (see nextEntry), or replaces it when
// it is skipped. job is nil for a job that is gone.
func planClaim(c timer.Claim, job *cached, now time.Time, cfg Config) (next *timer.Entry, skipped bool) {
	if job == nil || c.Slot != scheduleSlot {
		return nextEntry(c, nil, now), false
	}
	p := &job.job.Properties
	policy := catchUpPolicy(p)
	if policy != contracts.CatchUpEarliest && late(job.sched.Due(c.JobKey, c.Expected), now, cfg.MissedGrace) {
		at, ok := catchUpFrom(policy, job.sched, c.Expected, now, catchUpWindow(p))
		if !ok || !at.Equal(c.Expected) {
			return missedEntry(c.Entry, job.sched, at, ok), true
		}
	}
	if policy == contracts.CatchUpAll {
		return caughtUpEntry(c, job.sched, now, cfg.CatchUpPace), false
	}
	return nextEntry(c, job.sched, now), false
}

// reportSkipped logs and observes an occurrence that the job's catch-up
// policy skipped.
func reportSkipped(cfg Config, e timer.Entry, policy contracts.CatchUpPolicy) {
	cfg.Logger.Info("a missed occurrence is skipped by the job's catch-up policy",
		slog.String("job", e.JobKey), slog.Time("expected", e.Expected.UTC()), slog.String("catchUp", string(policy)))
	observeSkipped(cfg, e, events.SkipCatchUp)
}
