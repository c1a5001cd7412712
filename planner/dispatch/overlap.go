package dispatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// BufferSlot is the slot of an occurrence of a job with the overlap policy
// BufferOne that came due while an earlier one was in flight: it waits
// there, and runs as soon as that one is over (the feedback loop makes it
// due then), with its own expected time.
const BufferSlot = "b"

// overlapPolicy returns the overlap policy of the claim's job when it
// applies to the claim, "" when it does not: only the first attempt of the
// main action of an occurrence of the schedule (or of one buffered) of a
// job whose policy is not Allow. Jobs with Allow pay nothing more.
func overlapPolicy(c timer.Claim, j *store.Job) contracts.OverlapPolicy {
	p := j.Properties.Overlap
	if p == "" || p == contracts.OverlapAllow || c.Occurrence == 0 || c.Attempt != 0 || c.Action != contracts.MainAction {
		return ""
	}
	if c.Slot != scheduleSlot && c.Slot != BufferSlot {
		return ""
	}
	return p
}

// InFlightTTL is how long an occurrence of a job with an overlap policy
// counts as in flight when its end is never learnt (its result was lost):
// every attempt of the main action timing out, with the retry intervals
// between them, and a margin for queueing.
func InFlightTTL(action *contracts.JobAction, timeout time.Duration) time.Duration {
	retries, interval := 0, time.Duration(0)
	if action != nil {
		retries, interval = contracts.EffectiveRetry(action.RetryPolicyOf(contracts.MainAction))
	}
	return time.Duration(retries+1)*timeout + time.Duration(retries)*interval + inFlightMargin
}

// inFlightMargin is what InFlightTTL adds for the time an execution waits
// in EXEC and its result in RESULTS.
const inFlightMargin = 2 * time.Minute

// admit decides whether claim c of job j, whose overlap policy applies,
// runs now. An occurrence of the schedule runs when no other is in flight
// (it is marked in flight then); otherwise it waits in the buffer slot
// (BufferOne, none waiting there yet) or is skipped. A buffered one always
// runs: it was made due because the one before it is over, or its wait
// reached that one's expiry.
func (d *Dispatcher) admit(ctx context.Context, c timer.Claim, j *store.Job, policy contracts.OverlapPolicy, now time.Time) (bool, error) {
	ttl := InFlightTTL(j.Properties.Action, d.cfg.ActionTimeout)
	o := timer.Occurrence{Number: c.Occurrence, Expected: c.Expected}
	if c.Slot == BufferSlot {
		if err := d.ix.Hold(ctx, c.JobKey, o, now, ttl); err != nil {
			return false, err
		}
		// It is on its way: the bucket no longer needs to restore it.
		if err := d.followUps.drop(ctx, c.Entry); err != nil {
			d.cfg.Logger.Warn("forgetting a buffered occurrence", slog.String("job", c.JobKey), slog.String("error", err.Error()))
		}
		return true, nil
	}
	var buffer *timer.Entry
	if policy == contracts.OverlapBufferOne {
		e := c.Entry
		e.Slot, e.Due = BufferSlot, now.Add(ttl).Truncate(time.Millisecond)
		buffer = &e
	}
	admission, err := d.ix.Admit(ctx, c.JobKey, o, now, ttl, buffer)
	if err != nil {
		return false, err
	}
	switch admission {
	case timer.Run:
		return true, nil
	case timer.Buffered:
		// Kept in the bucket too, so that a Redis that loses it restores
		// it; should that fail, Redis keeps it all the same.
		rec := record(j.Ref, *buffer)
		if err := d.followUps.update(ctx, c.JobKey, BufferSlot, c.Expected, ordinal(c.Action, 0), &rec); err != nil {
			d.cfg.Logger.Warn("keeping a buffered occurrence", slog.String("job", c.JobKey), slog.String("error", err.Error()))
		}
		d.cfg.Logger.Info("occurrence buffered: an earlier one is in flight", slog.String("job", c.JobKey),
			slog.Int64("occurrence", c.Occurrence), slog.Time("expected", c.Expected))
	default:
		d.cfg.Logger.Info("occurrence skipped: an earlier one is in flight", slog.String("job", c.JobKey),
			slog.Int64("occurrence", c.Occurrence), slog.Time("expected", c.Expected), slog.String("overlap", string(policy)))
		observeSkipped(d.cfg, c.Entry, events.SkipOverlap)
	}
	return false, nil
}

// SkipObserver learns of each occurrence that did not run. An Observer
// that is one too is told.
type SkipObserver interface {
	Skipped(s events.Skipped)
}

// Skipped tells each observer that is a SkipObserver.
func (o Observers) Skipped(s events.Skipped) {
	for _, obs := range o {
		if so, ok := obs.(SkipObserver); ok {
			so.Skipped(s)
		}
	}
}

// observeSkipped tells the observer, when it is a SkipObserver, that the
// occurrence of entry e was skipped for reason.
func observeSkipped(cfg Config, e timer.Entry, reason string) {
	if so, ok := cfg.Observer.(SkipObserver); ok {
		so.Skipped(events.Skipped{JobKey: e.JobKey, Occurrence: e.Occurrence, Expected: e.Expected, Reason: reason})
	}
}
