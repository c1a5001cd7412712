package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
)

// cached is a job with its compiled schedule.
type cached struct {
	job   store.Job
	sched *planner.Schedule
	// plain keeps, by action name, the JSON the executions carry of an
	// action without a secret (see actionJSON).
	plain sync.Map
}

// compileError names the job whose schedule did not compile.
func compileError(j store.Job, err error) error {
	return fmt.Errorf("compiling the schedule of %s: %w", j.Ref.KVKey(), err)
}

// collState is a collection's firing state, and when it was looked up.
type collState struct {
	firing bool
	at     time.Time
}

// Jobs is the planner's view of the job store: the jobs the Follower has
// seen, with the store behind them for a job whose change has not reached
// this planner yet, and the collections' states. It is safe for concurrent
// use.
type Jobs struct {
	store     *store.Store
	now       func() time.Time
	calendars *Calendars
	logger    *slog.Logger

	mu   sync.RWMutex
	jobs map[string]*cached // by KV key, which is also the timer's job key

	collMu      sync.Mutex
	collections map[string]collState
}

func newJobs(st *store.Store, now func() time.Time, logger *slog.Logger) *Jobs {
	return &Jobs{store: st, now: now, calendars: newCalendars(), logger: logger, jobs: map[string]*cached{}, collections: map[string]collState{}}
}

// compile returns the job with its schedule compiled against the
// calendars it excludes.
func (js *Jobs) compile(j store.Job) (*cached, error) { return js.calendars.compile(j, js.logger) }

// Job returns the job stored under the key; false when it does not exist.
func (js *Jobs) Job(ctx context.Context, key string) (store.Job, bool, error) {
	c, err := js.get(ctx, key)
	if err != nil || c == nil {
		return store.Job{}, false, err
	}
	return c.job, true, nil
}

// get returns the job of a timer entry: from the jobs seen, or from the
// store when the change that created it has not arrived yet; nil for a job
// that no longer exists.
func (js *Jobs) get(ctx context.Context, key string) (*cached, error) {
	js.mu.RLock()
	c := js.jobs[key]
	js.mu.RUnlock()
	if c != nil {
		return c, nil
	}
	return js.read(ctx, key, nil)
}

// confirm reads a job from the store, bypassing what was seen: nil when it
// is gone.
func (js *Jobs) confirm(ctx context.Context, key string) (*cached, error) {
	js.mu.RLock()
	c := js.jobs[key]
	js.mu.RUnlock()
	return js.read(ctx, key, c)
}

// read reads the job from the store; seen is returned as it is when the
// store holds the same revision.
func (js *Jobs) read(ctx context.Context, key string, seen *cached) (*cached, error) {
	j, err := js.store.GetJobByKey(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading job %s: %w", key, err)
	case seen != nil && seen.job.Revision == j.Revision:
		return seen, nil
	}
	return js.compile(j)
}

// put records a job the Follower saw and returns the version seen before.
func (js *Jobs) put(c *cached) (prev *cached) {
	key := c.job.Ref.KVKey()
	js.mu.Lock()
	defer js.mu.Unlock()
	prev = js.jobs[key]
	js.jobs[key] = c
	return prev
}

// remove forgets a deleted job.
func (js *Jobs) remove(key string) {
	js.mu.Lock()
	delete(js.jobs, key)
	js.mu.Unlock()
}

// all returns every job seen.
func (js *Jobs) all() []*cached {
	js.mu.RLock()
	defer js.mu.RUnlock()
	out := make([]*cached, 0, len(js.jobs))
	for _, c := range js.jobs {
		out = append(out, c)
	}
	return out
}

// keys returns the keys of every job seen.
func (js *Jobs) keys() map[string]bool {
	js.mu.RLock()
	defer js.mu.RUnlock()
	out := make(map[string]bool, len(js.jobs))
	for k := range js.jobs {
		out[k] = true
	}
	return out
}

// fires reports whether the job may run now: it is enabled and its
// collection is enabled (nothing in a disabled or suspended collection
// fires). Collection states are looked up at most once a second; through a
// failed look-up the last known state holds.
func (js *Jobs) fires(ctx context.Context, j store.Job) bool {
	if j.Properties.State != contracts.JobStateEnabled {
		return false
	}
	ref := j.Ref.CollectionRef()
	key := ref.KVKey()
	now := js.now()
	js.collMu.Lock()
	st, ok := js.collections[key]
	js.collMu.Unlock()
	if ok && now.Sub(st.at) < time.Second {
		return st.firing
	}
	c, err := js.store.GetCollection(ctx, ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		st = collState{firing: false, at: now}
	case err != nil:
		return !ok || st.firing
	default:
		st = collState{firing: c.Properties.State == "" || c.Properties.State == contracts.JobCollectionStateEnabled, at: now}
	}
	js.collMu.Lock()
	js.collections[key] = st
	js.collMu.Unlock()
	return st.firing
}
