package dispatch

import (
	"context"
	"log/slog"

	"github.com/jobscheduler/scheduler/internal/startstop"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Reclaimer returns the claims whose lease expired (their planner died or
// stalled before it committed them) to the due set, for any planner to
// dispatch again. Every planner runs one: reclaiming twice is harmless.
type Reclaimer struct {
	startstop.Loop
	ix   *timer.Index
	cfg  Config
	wake func()
}

func newReclaimer(ix *timer.Index, cfg Config, wake func()) *Reclaimer {
	return &Reclaimer{ix: ix, cfg: cfg, wake: wake}
}

// Start starts looking for expired leases, every maintenanceEvery.
func (r *Reclaimer) Start(ctx context.Context) error {
	return r.Loop.Start(ctx, func(ctx context.Context) {
		startstop.Every(ctx, maintenanceEvery(r.cfg.Lease), r.reclaim)
	})
}

func (r *Reclaimer) reclaim(ctx context.Context) {
	n, err := r.ix.Reclaim(ctx, r.cfg.Now())
	switch {
	case err != nil && ctx.Err() == nil:
		r.cfg.Logger.Warn("reclaiming expired leases", slog.String("error", err.Error()))
	case n > 0:
		r.wake()
	}
}
