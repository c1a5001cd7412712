package dispatch

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/startstop"
	"github.com/jobscheduler/scheduler/planner/store"
)

// Janitor deletes the Completed and Faulted jobs that ended more than
// Config.EndedRetention ago. Every planner runs one: deleting a job twice
// is harmless.
type Janitor struct {
	startstop.Loop
	store *store.Store
	jobs  *Jobs
	cfg   Config
}

func newJanitor(st *store.Store, jobs *Jobs, cfg Config) *Janitor {
	return &Janitor{store: st, jobs: jobs, cfg: cfg}
}

// Start starts looking for ended jobs, every RetentionEvery.
func (j *Janitor) Start(ctx context.Context) error {
	return j.Loop.Start(ctx, func(ctx context.Context) {
		startstop.Every(ctx, j.cfg.RetentionEvery, func(ctx context.Context) {
			if err := j.deleteEnded(ctx); err != nil && ctx.Err() == nil {
				j.cfg.Logger.Warn("deleting ended jobs", slog.String("error", err.Error()))
			}
		})
	})
}

// deleteEnded deletes the jobs whose retention ran out.
func (j *Janitor) deleteEnded(ctx context.Context) error {
	now := j.cfg.Now()
	var expired []contracts.JobRef
	for _, c := range j.jobs.all() {
		if e := c.job.Ended; e != nil && now.Sub(*e) >= j.cfg.EndedRetention {
			expired = append(expired, c.job.Ref)
		}
	}
	var errs []error
	for _, ref := range expired {
		if err := j.store.DeleteJob(ctx, ref); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
		} else if err == nil {
			j.cfg.Logger.Info("deleted an ended job", slog.String("job", ref.Key()))
		}
	}
	return errors.Join(errs...)
}
