package dispatch

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
)

// Calendars holds the compiled holiday calendars of every collection, by
// their KV key ("cal.<sub>.<rg>.<collection>.<name>", the name's case
// folded), as the store's watch of calendars delivers them. It is safe for
// concurrent use.
type Calendars struct {
	mu    sync.RWMutex
	byKey map[string]*planner.Calendar
}

func newCalendars() *Calendars { return &Calendars{byKey: map[string]*planner.Calendar{}} }

// put compiles and records a calendar; a calendar that does not compile is
// recorded as absent, and the error returned.
func (cs *Calendars) put(c store.Calendar) error {
	compiled, err := planner.CompileCalendar(c.Name, &c.Properties)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if err != nil {
		delete(cs.byKey, c.Key())
		return err
	}
	cs.byKey[c.Key()] = compiled
	return nil
}

func (cs *Calendars) remove(key string) {
	cs.mu.Lock()
	delete(cs.byKey, key)
	cs.mu.Unlock()
}

// of returns the calendars a job excludes that are known.
func (cs *Calendars) of(j *store.Job) (found []*planner.Calendar) {
	r := j.Properties.Recurrence
	if r == nil || len(r.ExcludedCalendars) == 0 {
		return nil
	}
	ref := j.Ref.CollectionRef()
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	for _, name := range r.ExcludedCalendars {
		if c, ok := cs.byKey[ref.CalendarKVKey(name)]; ok {
			found = append(found, c)
		}
	}
	return found
}

// compile returns the job with its schedule compiled against the
// calendars it excludes. A calendar the planner does not know (deleted in
// a race with the job's write, or named by a job published on NATS before
// the calendar was created) holds no date: the job runs rather than stops,
// and a warning says so.
func (cs *Calendars) compile(j store.Job, logger *slog.Logger) (*cached, error) {
	sched, missing, err := planner.NewStoredSchedule(&j.Properties, j.Anchored, cs.of(&j)...)
	if err != nil {
		return nil, compileError(j, err)
	}
	if len(missing) > 0 {
		logger.Warn("a job excludes calendars its collection does not hold; it runs as if they held no date",
			slog.String("job", j.Ref.KVKey()), slog.String("calendars", strings.Join(missing, ", ")))
	}
	return &cached{job: j, sched: sched}, nil
}

// followCalendars keeps cs in step with the store's calendars until ctx
// ends, calling changed with the collection and name of each calendar put
// or deleted after the first ones; ready is closed once the calendars
// stored when the watch started are held. A watch that ends is started
// again.
func (f *Follower) followCalendars(ctx context.Context, ready chan<- struct{}) {
	first := true
	for ctx.Err() == nil {
		changes, initial, err := f.store.WatchCalendars(ctx)
		if err != nil {
			f.cfg.Logger.Warn("watching the calendars; trying again", slog.String("error", err.Error()))
			f.pause(ctx)
			continue
		}
		f.applyCalendars(ctx, changes, initial, func() {
			if first {
				first = false
				close(ready)
			}
		})
		if ctx.Err() == nil {
			f.cfg.Logger.Warn("the watch of the calendars ended; watching them again")
			f.pause(ctx)
		}
	}
}

// applyCalendars applies the changes of one watch of the calendars until
// it ends. Every change after the initial ones schedules again the jobs
// that exclude the calendar.
func (f *Follower) applyCalendars(ctx context.Context, changes <-chan store.CalendarChange, initial <-chan struct{}, synced func()) {
	live := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-initial:
			initial, live = nil, true
			synced()
		case c, ok := <-changes:
			if !ok {
				return
			}
			switch {
			case c.Err != nil:
				f.cfg.Logger.Error("reading a calendar", slog.String("calendar", c.Key), slog.String("error", c.Err.Error()))
				continue
			case c.Deleted:
				f.jobs.calendars.remove(c.Key)
			default:
				if err := f.jobs.calendars.put(*c.Calendar); err != nil {
					f.cfg.Logger.Error("compiling a calendar; jobs run as if it held no date", slog.String("calendar", c.Key), slog.String("error", err.Error()))
				}
			}
			if live {
				f.replanExcluding(ctx, c.Key)
			}
		}
	}
}

// replanExcluding compiles again the jobs that exclude the calendar stored
// under key and puts their next occurrence in the timer as the calendar
// now gives it.
func (f *Follower) replanExcluding(ctx context.Context, key string) {
	var batch []pendingJob
	for _, c := range f.jobs.all() {
		r := c.job.Properties.Recurrence
		if r == nil || !excludes(c.job, key) {
			continue
		}
		cj, err := f.jobs.compile(c.job)
		if err != nil {
			f.cfg.Logger.Error("compiling a job after its calendar changed", slog.String("error", err.Error()))
			continue
		}
		f.jobs.put(cj)
		batch = append(batch, pendingJob{job: cj.job, sched: cj.sched, calendarChanged: true})
	}
	for start := 0; start < len(batch); start += applyBatch {
		if err := f.schedule(ctx, batch[start:min(start+applyBatch, len(batch))]); err != nil && ctx.Err() == nil {
			f.stale.Store(true)
			f.cfg.Logger.Error("scheduling the jobs of a changed calendar; every job is scheduled again shortly", slog.String("error", err.Error()))
		}
	}
}

// excludes reports whether job j excludes the calendar stored under key.
func excludes(j store.Job, key string) bool {
	ref := j.Ref.CollectionRef()
	for _, name := range j.Properties.Recurrence.ExcludedCalendars {
		if ref.CalendarKVKey(name) == key {
			return true
		}
	}
	return false
}
