package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jobscheduler/scheduler/internal/startstop"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Rebuilder puts the timer back together when Redis lost it (flushed,
// replaced, or the embedded server of `scheduler dev` started empty): the
// jobs' counters and the occurrences their schedules reached from history,
// every job's next occurrence from the store, and every pending retry,
// error action and run from the follow-ups bucket. Until it is done the
// planner is not ready; a rebuild that failed is tried again at the next
// look. Every planner runs one: two rebuilding at once write the same.
type Rebuilder struct {
	startstop.Loop
	ix        *timer.Index
	follower  *Follower
	followUps *FollowUps
	cfg       Config
	wake      func()
	kick      chan struct{}

	// rebuilding is set from the moment the timer is known to be lost
	// until it is rebuilt; talliesRestored when the planner restored the
	// tallies at start, before the follower scheduled the jobs.
	rebuilding, talliesRestored atomic.Bool
}

func newRebuilder(ix *timer.Index, f *Follower, fu *FollowUps, cfg Config, wake func()) *Rebuilder {
	return &Rebuilder{ix: ix, follower: f, followUps: fu, cfg: cfg, wake: wake, kick: make(chan struct{}, 1)}
}

// Rebuilding reports whether the timer is being rebuilt.
func (r *Rebuilder) Rebuilding() bool { return r.rebuilding.Load() }

// Start starts looking at the timer's marker, every maintenanceEvery
// and whenever kicked.
func (r *Rebuilder) Start(ctx context.Context) error {
	return r.Loop.Start(ctx, func(ctx context.Context) {
		t := time.NewTicker(maintenanceEvery(r.cfg.Lease))
		defer t.Stop()
		for {
			r.look(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-r.kick:
			}
		}
	})
}

// Kick makes the rebuilder look at once: the follower has scheduled every
// stored job.
func (r *Rebuilder) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Rebuilder) look(ctx context.Context) {
	if err := r.rebuildIfLost(ctx); err != nil && ctx.Err() == nil {
		r.cfg.Logger.Error("rebuilding the timer", slog.String("error", err.Error()))
	}
}

// rebuildIfLost rebuilds the timer when its marker is gone.
func (r *Rebuilder) rebuildIfLost(ctx context.Context) error {
	if !r.follower.Synced() {
		return nil // the first watch is still scheduling every job
	}
	built, err := r.ix.Built(ctx)
	if err != nil || built {
		return err
	}
	if !r.rebuilding.Swap(true) {
		r.cfg.Logger.Warn("the timer's state is gone; rebuilding it from the job store, history and the follow-ups")
	}
	// The tallies restored at start served the follower's first schedule;
	// a timer lost later needs them again, and every job scheduled again.
	if !r.talliesRestored.Load() {
		if err := r.restoreTallies(ctx); err != nil {
			return err
		}
		if err := r.follower.ScheduleAll(ctx); err != nil {
			return err
		}
	}
	n, err := r.followUps.restore(ctx)
	if err != nil {
		return err
	}
	if err := r.ix.MarkBuilt(ctx); err != nil {
		return err
	}
	r.talliesRestored.Store(false)
	r.rebuilding.Store(false)
	r.cfg.Logger.Info("rebuilt the timer", slog.Int("follow_ups", n))
	r.wake()
	return nil
}

// prepare restores the tallies when the timer was lost, before the
// follower first schedules every job from them; the loop finishes the
// rebuild once it has.
func (r *Rebuilder) prepare(ctx context.Context) error {
	built, err := r.ix.Built(ctx)
	if err != nil || built {
		return err
	}
	r.rebuilding.Store(true)
	if err := r.restoreTallies(ctx); err != nil {
		return err
	}
	r.talliesRestored.Store(true)
	return nil
}

// restoreTallies writes the tally of every job's newest history entry into
// the timer where it has none: the jobs' counters and the occurrences their
// schedules reached are in history.
func (r *Rebuilder) restoreTallies(ctx context.Context) error {
	if r.cfg.History == nil {
		return nil
	}
	tallies, err := r.cfg.History.Tallies(ctx)
	if err != nil {
		return fmt.Errorf("reading the jobs' tallies from history: %w", err)
	}
	if len(tallies) > 0 {
		r.cfg.Logger.Info("restoring the jobs' counters from history", slog.Int("jobs", len(tallies)))
	}
	return r.ix.RestoreStatuses(ctx, tallies)
}
