// Package dispatch turns due occurrences into execution messages: it keeps
// the Redis timer in step with the job store, claims what is due, publishes
// each execution on JetStream exactly once (Nats-Msg-Id = the occurrence id)
// and only then commits the next occurrence.
package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// scheduleSlot is the slot of a job's next occurrence. The attempts that
// follow an attempt (its retries, the error action) have a slot of their
// own, FollowUpSlot, so that the occurrences of one job retry side by side.
const scheduleSlot = ""

// FollowUpSlot returns the slot of the attempts that follow a failed
// attempt: "r<occurrence>" for an occurrence of the schedule, and for a run
// outside the schedule (occurrence 0) the run's own slot, "x<unix ms>" of
// the time it was requested (its expected time).
func FollowUpSlot(occurrence int64, expected time.Time) string {
	if occurrence == 0 {
		return runSlot(expected)
	}
	return "r" + strconv.FormatInt(occurrence, 10)
}

func runSlot(at time.Time) string { return "x" + strconv.FormatInt(at.UnixMilli(), 10) }

// Config configures a Dispatcher.
type Config struct {
	// Lease is how long a claimed occurrence stays with the planner that
	// claimed it before another may take it over. Defaults to 30s.
	Lease time.Duration
	// Batch is the most occurrences claimed and published in one round.
	// Defaults to 5000.
	Batch int
	// MaxIdle is the longest the dispatcher waits between looks at the timer
	// when it knows of nothing due sooner (another planner may have added
	// something). Defaults to 1s.
	MaxIdle time.Duration
	// ActionTimeout is the deadline of one attempt, sent with each execution.
	// Defaults to 60s.
	ActionTimeout time.Duration
	// MissedGrace is how late a first occurrence may be and still run when
	// the planner picks a job up (a job created while no planner ran); later
	// than that, it is skipped like any missed instant. Defaults to 1m.
	MissedGrace time.Duration
	// Settle delays the immediate first run of a job that was just written,
	// and its first occurrence is confirmed in the store before it is
	// published, so that a job the store takes back (refused by the quota
	// check a moment after it became visible) never fires. Defaults to 250ms.
	Settle time.Duration
	// Lookahead is how far ahead of their due time occurrences are claimed
	// and their messages built, so that thousands due at the same second are
	// ready when it comes. Each is still published at its due time, never
	// earlier. Defaults to 500ms.
	Lookahead time.Duration
	// Replicas of the EXEC stream. Defaults to 1.
	Replicas int
	// EndedRetention is how long a Completed or Faulted job is kept before
	// it is deleted. Defaults to 60 days.
	EndedRetention time.Duration
	// History restores the jobs' tallies after Redis lost them and forgets
	// the history of deleted jobs. Nil leaves both undone.
	History History
	// Sealer seals the secrets of the actions in execution messages.
	// Required.
	Sealer *seal.Sealer
	// Observer learns of every execution JetStream stored, for metrics and
	// traces. Defaults to none.
	Observer Observer
	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Lease = cmp.Or(c.Lease, 30*time.Second)
	c.Batch = cmp.Or(c.Batch, 5000)
	c.MaxIdle = cmp.Or(c.MaxIdle, time.Second)
	c.ActionTimeout = cmp.Or(c.ActionTimeout, 60*time.Second)
	c.MissedGrace = cmp.Or(c.MissedGrace, time.Minute)
	c.Settle = cmp.Or(c.Settle, 250*time.Millisecond)
	c.Lookahead = cmp.Or(c.Lookahead, 500*time.Millisecond)
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.EndedRetention = cmp.Or(c.EndedRetention, 60*24*time.Hour)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	if c.Sealer == nil {
		return errors.New("dispatch: Config.Sealer is required")
	}
	if c.Lease < time.Second {
		return fmt.Errorf("dispatch: Config.Lease %s is shorter than a second", c.Lease)
	}
	return nil
}

// Dispatched is what the dispatcher reports of one execution JetStream
// stored.
type Dispatched struct {
	// Claim is the timer entry the execution was built from.
	Claim timer.Claim
	// TraceParent is the trace context the execution carries.
	TraceParent string
	// Claimed is when the dispatcher claimed the entry, Published when it
	// handed the execution to JetStream, Stored when JetStream acknowledged
	// it. Published minus the claim's due time is the dispatch lateness.
	Claimed, Published, Stored time.Time
}

// Observer learns what the dispatcher did. Its methods are called from the
// dispatch loop, so they must be quick.
type Observer interface {
	Dispatched(d Dispatched)
}

// Observers tells each of its observers.
type Observers []Observer

// Dispatched tells each observer.
func (o Observers) Dispatched(d Dispatched) {
	for _, obs := range o {
		obs.Dispatched(d)
	}
}

// DuplicateWindow is the EXEC stream's duplicate window for a lease: longer
// than the lease, so a planner that takes over an expired claim and
// publishes the same occurrence again is dropped as a duplicate.
func DuplicateWindow(lease time.Duration) time.Duration { return max(2*time.Minute, 4*lease) }

// History is what the dispatcher needs of the job history.
type History interface {
	// Tallies returns the tally of the newest history entry of every job
	// that has one, by job key.
	Tallies(ctx context.Context) (map[string]contracts.Tally, error)
	// Purge deletes the history of the job with the key.
	Purge(ctx context.Context, jobKey string) error
}

// Dispatcher is the planner's timer loop. Any number of dispatchers, in any
// number of processes, can share one store and one timer.
type Dispatcher struct {
	js    jetstream.JetStream
	store *store.Store
	ix    *timer.Index
	cfg   Config

	mu   sync.RWMutex
	jobs map[string]*cached // by KV key, which is also the timer's job key

	collMu      sync.Mutex
	collections map[string]collState

	// retainedAt is when ended jobs were last looked for (unix ns of Now).
	retainedAt atomic.Int64

	kick  chan struct{}
	ready atomic.Bool
	// rebuilding is set while the timer is rebuilt after Redis lost it;
	// stale when job changes could not be written to the timer (Redis did
	// not answer), so that maintenance schedules every job again.
	rebuilding, stale atomic.Bool
	// beforeCommit, when set (by tests), runs after an execution's PubAck
	// and before its commit; false abandons the commit, as a planner that
	// dies at that moment would.
	beforeCommit func(timer.Claim) bool
	cancel       context.CancelFunc
	done         sync.WaitGroup
	stopped      atomic.Bool
}

type cached struct {
	job   store.Job
	sched *planner.Schedule
}

type collState struct {
	firing bool
	at     time.Time
}

// New returns a dispatcher; Start runs it.
func New(js jetstream.JetStream, st *store.Store, ix *timer.Index, cfg Config) (*Dispatcher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Dispatcher{
		js: js, store: st, ix: ix, cfg: cfg,
		jobs: map[string]*cached{}, collections: map[string]collState{},
		kick: make(chan struct{}, 1),
	}, nil
}

// Start creates the EXEC stream and starts following the store, dispatching
// and reclaiming expired leases. When Redis lost its state, the jobs'
// tallies are first restored from history, so that their schedules go on
// from the occurrence they reached. It returns once the loops run.
func (d *Dispatcher) Start(ctx context.Context) error {
	if err := streams.EnsureExec(ctx, d.js, d.cfg.Replicas, DuplicateWindow(d.cfg.Lease)); err != nil {
		return err
	}
	if built, err := d.ix.Built(ctx); err != nil {
		return err
	} else if !built {
		if err := d.restoreTallies(ctx); err != nil {
			return err
		}
	}
	changes, initial, err := d.store.WatchJobs(ctx)
	if err != nil {
		return fmt.Errorf("watching the job store: %w", err)
	}
	ctx, d.cancel = context.WithCancel(ctx)
	d.done.Add(3)
	go func() { defer d.done.Done(); d.follow(ctx, changes, initial) }()
	go func() { defer d.done.Done(); d.dispatchLoop(ctx) }()
	go func() { defer d.done.Done(); d.maintain(ctx) }()
	return nil
}

// Stop stops the loops and waits for them. An occurrence being published is
// finished or left claimed, to be taken over when its lease expires.
// Stop is idempotent.
func (d *Dispatcher) Stop() {
	if d.stopped.Swap(true) || d.cancel == nil {
		return
	}
	d.cancel()
	d.done.Wait()
}

// Ready reports whether the dispatcher has scheduled every job of the store.
func (d *Dispatcher) Ready() bool { return d.ready.Load() && !d.rebuilding.Load() }

// Runtimes returns, for each job, its next scheduled occurrence (zero when
// there is none) and its tally, in two round trips to Redis.
func (d *Dispatcher) Runtimes(ctx context.Context, refs []contracts.JobRef) ([]time.Time, []contracts.Tally, error) {
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.KVKey()
	}
	entries, found, err := d.ix.GetAll(ctx, keys, scheduleSlot)
	if err != nil {
		return nil, nil, err
	}
	tallies, _, err := d.ix.Statuses(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	next := make([]time.Time, len(refs))
	for i := range refs {
		if found[i] {
			next[i] = entries[i].Expected
		}
	}
	return next, tallies, nil
}

// Scheduled returns the job's scheduled occurrence: when it is due and how
// many occurrences of its schedule follow it (-1 for no limit). It reports
// false when the timer holds none (the job is new, disabled or ended).
func (d *Dispatcher) Scheduled(ctx context.Context, ref contracts.JobRef) (time.Time, int64, bool, error) {
	e, ok, err := d.ix.Get(ctx, ref.KVKey(), scheduleSlot)
	if err != nil || !ok {
		return time.Time{}, 0, false, err
	}
	return e.Expected, e.Remaining, true, nil
}

// RunNow schedules one execution of the job's main action now, outside its
// schedule: it has no occurrence number, and its retries and error action
// follow in its own slot.
func (d *Dispatcher) RunNow(ctx context.Context, j store.Job) error {
	now := d.cfg.Now().UTC().Truncate(time.Millisecond)
	err := d.ix.Schedule(ctx, timer.Entry{
		JobKey: j.Ref.KVKey(), Slot: runSlot(now), Due: now, Expected: now,
		Action: contracts.MainAction, Remaining: -1, Revision: j.Revision,
	})
	d.wake()
	return err
}

// Job returns the job stored under the key, from the dispatcher's cache
// when it has it; false when the job does not exist.
func (d *Dispatcher) Job(ctx context.Context, key string) (store.Job, bool, error) {
	c, err := d.job(ctx, key)
	if err != nil || c == nil {
		return store.Job{}, false, err
	}
	return c.job, true, nil
}

// Wake makes the dispatcher look at the timer now: an entry was scheduled
// that may be due sooner than what it waits for.
func (d *Dispatcher) Wake() { d.wake() }

func (d *Dispatcher) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// applyBatch is the most store changes applied in one round trip to Redis,
// and gatherFor how long changes are gathered into a batch: the store hands
// them over one at a time, a million of them at start.
const (
	applyBatch = 1000
	gatherFor  = 2 * time.Millisecond
)

// follow keeps the timer in step with the store. Changes that are waiting
// are applied together, so scheduling a million jobs at start costs a few
// thousand round trips, not millions.
func (d *Dispatcher) follow(ctx context.Context, changes <-chan store.Change, initial <-chan struct{}) {
	batch := make([]store.Change, 0, applyBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-initial:
			initial = nil
			if err := d.ix.MarkBuilt(ctx); err != nil {
				d.cfg.Logger.Warn("marking the timer built", slog.String("error", err.Error()))
			}
			d.ready.Store(true)
			d.wake()
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
			if err := d.apply(ctx, batch); err != nil && ctx.Err() == nil {
				// Maintenance schedules every job again once the timer
				// answers; a deleted job left in it is skipped when due.
				d.stale.Store(true)
				d.cfg.Logger.Error("scheduling jobs; every job is scheduled again shortly", slog.Int("changes", len(batch)), slog.String("error", err.Error()))
			}
		}
	}
}

// pendingJob is a job to (re)schedule, with the version seen before it.
type pendingJob struct {
	job   store.Job
	sched *planner.Schedule
	prev  *cached
}

// apply schedules, reschedules or unschedules the jobs of store changes.
func (d *Dispatcher) apply(ctx context.Context, changes []store.Change) error {
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
			d.mu.Lock()
			delete(d.jobs, c.Key)
			d.mu.Unlock()
			errs = append(errs, d.ix.RemoveJob(ctx, c.Key))
			if d.cfg.History != nil {
				errs = append(errs, d.cfg.History.Purge(ctx, c.Key))
			}
			continue
		}
		j := *c.Job
		sched, err := planner.NewSchedule(&j.Properties, j.Anchored)
		if err != nil {
			errs = append(errs, fmt.Errorf("compiling the schedule of %s: %w", c.Key, err))
			continue
		}
		key := j.Ref.KVKey()
		d.mu.Lock()
		prev := d.jobs[key]
		d.jobs[key] = &cached{job: j, sched: sched}
		d.mu.Unlock()
		jobs = append(jobs, pendingJob{job: j, sched: sched, prev: prev})
	}
	errs = append(errs, d.schedule(ctx, jobs))
	return errors.Join(errs...)
}

// schedule puts the next occurrence of each job in the timer, or takes out
// the jobs that are not enabled.
func (d *Dispatcher) schedule(ctx context.Context, jobs []pendingJob) error {
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
		errs = append(errs, d.ix.RemoveAll(ctx, disabled, scheduleSlot))
	}
	if len(enabled) == 0 {
		return errors.Join(errs...)
	}
	existing, found, err := d.ix.GetAll(ctx, keys, scheduleSlot)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	tallies, _, err := d.ix.Statuses(ctx, keys)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	now := d.cfg.Now()
	var entries []timer.Entry
	for i, p := range enabled {
		entry, keep := d.plan(p, existing[i], found[i], tallies[i], now)
		switch {
		case keep:
		case entry == nil:
			errs = append(errs, d.ix.Remove(ctx, keys[i], scheduleSlot))
		default:
			entries = append(entries, *entry)
		}
	}
	if len(entries) > 0 {
		errs = append(errs, d.ix.ScheduleAll(ctx, entries))
		d.wake()
	}
	return errors.Join(errs...)
}

// plan decides a job's timer entry: keep the existing one (already
// scheduled from this version), the existing occurrence under the new
// revision (the schedule is unchanged: only the action or a detail
// changed), or the first occurrence from here (see firstEntry); nil when
// the job never runs again.
func (d *Dispatcher) plan(p pendingJob, existing timer.Entry, found bool, tally contracts.Tally, now time.Time) (entry *timer.Entry, keep bool) {
	j := p.job
	if found && existing.Revision == j.Revision {
		return nil, true // another planner, or a replay, got here first
	}
	if found && p.prev != nil && p.prev.job.Anchored.Equal(j.Anchored) {
		existing.Revision = j.Revision
		return &existing, false
	}
	first, ok := firstEntry(j, p.sched, now, d.cfg.MissedGrace, tally)
	if !ok {
		return nil, false
	}
	if settled := j.Updated.Add(d.cfg.Settle); first.Due.Before(settled) {
		first.Due = settled
	}
	return &first, false
}

// firstEntry is the first occurrence of a job being (re)scheduled. A job
// whose schedule, as anchored now, already ran (the tally reached one of
// its occurrences: the job was rescheduled after Redis lost its timer, or
// changed after its last occurrence was dispatched) goes on after the
// occurrence reached, counting on; any other starts at its first instant.
// Either is moved to the next instant from now when it is more than grace
// in the past (missed instants are skipped, not caught up).
func firstEntry(j store.Job, sched *planner.Schedule, now time.Time, grace time.Duration, tally contracts.Tally) (timer.Entry, bool) {
	at, occurrence, ok := sched.Resume(tally.Occurrence, tally.OccurrenceTime)
	if ok && at.Before(now.Add(-grace)) {
		at, ok = sched.Next(now.Add(-time.Second))
	}
	if !ok {
		return timer.Entry{}, false
	}
	remaining := int64(-1)
	if c := sched.Count(); c > 0 {
		remaining = int64(c) - occurrence
	}
	return timer.Entry{
		JobKey: j.Ref.KVKey(), Slot: scheduleSlot, Due: at, Expected: at,
		Occurrence: occurrence, Action: contracts.MainAction, Remaining: remaining, Revision: j.Revision,
	}, true
}

// nextEntry is the occurrence after a dispatched one, or nil when the job
// has ended (count reached, endTime passed) or it was not an occurrence of
// the schedule (a retry, an error action, a run outside the schedule). A
// late occurrence ran once; the next is no earlier than now.
func nextEntry(c timer.Claim, sched *planner.Schedule, now time.Time) *timer.Entry {
	if c.Slot != scheduleSlot || c.Remaining == 0 || sched == nil {
		return nil
	}
	from := c.Expected
	if late := now.Add(-time.Second); from.Before(late) {
		from = late
	}
	at, ok := sched.Next(from)
	if !ok {
		return nil
	}
	remaining := c.Remaining
	if remaining > 0 {
		remaining--
	}
	return &timer.Entry{
		JobKey: c.JobKey, Slot: scheduleSlot, Due: at, Expected: at,
		Occurrence: c.Occurrence + 1, Action: contracts.MainAction, Remaining: remaining, Revision: c.Revision,
	}
}

// dispatchLoop claims and publishes due occurrences, then sleeps until the
// earliest due time, a wake-up, or MaxIdle.
func (d *Dispatcher) dispatchLoop(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := d.dispatchRound(ctx)
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Error("dispatching", slog.String("error", err.Error()))
		}
		if n >= d.cfg.Batch {
			continue // more may be due
		}
		d.sleep(ctx, err != nil)
	}
}

func (d *Dispatcher) sleep(ctx context.Context, failed bool) {
	wait := d.cfg.MaxIdle
	if !failed {
		if at, ok, err := d.ix.Earliest(ctx); err == nil && ok {
			wait = min(wait, max(at.Sub(d.cfg.Now())-d.cfg.Lookahead, 0))
		}
	}
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-d.kick:
	case <-t.C:
	}
}

// dispatchRound claims up to Batch occurrences due within the lookahead,
// builds their messages, publishes each at its due time and commits the
// published ones. It returns how many it claimed.
func (d *Dispatcher) dispatchRound(ctx context.Context) (int, error) {
	now := d.cfg.Now()
	// Claim may return claims together with an error: they are in flight
	// and are dispatched all the same. Claims come sorted by due time.
	claims, claimErr := d.ix.Claim(ctx, now.Add(d.cfg.Lookahead), d.cfg.Lease+d.cfg.Lookahead, d.cfg.Batch)
	if len(claims) == 0 {
		return 0, claimErr
	}
	type pending struct {
		claim     timer.Claim
		msg       *nats.Msg
		ack       jetstream.PubAckFuture
		next      *timer.Entry
		published time.Time
	}
	var (
		ready    []pending
		inFlight []pending
		errs     = []error{claimErr}
	)
	for _, c := range claims {
		job, err := d.job(ctx, c.JobKey)
		if err != nil {
			errs = append(errs, err, d.ix.Release(ctx, c))
			continue
		}
		var sched *planner.Schedule
		if job != nil {
			sched = job.sched
		}
		next := nextEntry(c, sched, now)
		if job != nil && c.Occurrence == 1 && c.Attempt == 0 && c.Slot == scheduleSlot && now.Sub(job.job.Updated) < confirmWindow {
			if job, err = d.confirm(ctx, c.JobKey); err != nil {
				errs = append(errs, err, d.ix.Release(ctx, c))
				continue
			}
		}
		if job == nil || !d.fires(ctx, job.job) {
			// Deleted, disabled or in a collection that does not fire: the
			// occurrence is skipped, the schedule goes on.
			errs = append(errs, d.ix.Commit(ctx, c, next))
			continue
		}
		msg, err := d.execution(c, job.job, now, lastOccurrence(c, next))
		if err != nil {
			d.cfg.Logger.Error("building an execution", slog.String("job", c.JobKey), slog.String("error", err.Error()))
			errs = append(errs, d.ix.Commit(ctx, c, next))
			continue
		}
		ready = append(ready, pending{claim: c, msg: msg, next: next})
	}
	for _, p := range ready {
		if err := d.waitUntil(ctx, p.claim.Due); err != nil {
			// Left claimed: the lease expiry returns it to the due set.
			return len(claims), err
		}
		ack, err := d.js.PublishMsgAsync(p.msg, jetstream.WithMsgID(p.msg.Header.Get(jetstream.MsgIDHeader)))
		if err != nil {
			errs = append(errs, fmt.Errorf("publishing %s: %w", p.claim.JobKey, err), d.ix.Release(ctx, p.claim))
			continue
		}
		p.ack, p.published = ack, d.cfg.Now()
		inFlight = append(inFlight, p)
	}
	completions := make([]timer.Completion, 0, len(inFlight))
	for _, p := range inFlight {
		select {
		case <-p.ack.Ok():
			if d.beforeCommit != nil && !d.beforeCommit(p.claim) {
				continue
			}
			completions = append(completions, timer.Completion{Claim: p.claim, Next: p.next})
			if d.cfg.Observer != nil {
				d.cfg.Observer.Dispatched(Dispatched{Claim: p.claim, TraceParent: p.msg.Header.Get(contracts.TraceParentHeader),
					Claimed: now, Published: p.published, Stored: d.cfg.Now()})
			}
		case err := <-p.ack.Err():
			errs = append(errs, fmt.Errorf("publishing %s: %w", p.claim.JobKey, err), d.ix.Release(ctx, p.claim))
		case <-ctx.Done():
			// Left claimed: its lease expires and another planner (or this
			// one, restarted) publishes it again, deduplicated by its id.
			return len(claims), ctx.Err()
		}
	}
	if len(completions) > 0 {
		errs = append(errs, d.ix.CommitAll(ctx, completions))
	}
	return len(claims), errors.Join(errs...)
}

// waitUntil returns when the clock reaches at, so that no execution is
// published before it is due.
func (d *Dispatcher) waitUntil(ctx context.Context, at time.Time) error {
	wait := at.Sub(d.cfg.Now())
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// job returns the job of a timer entry: from the cache this dispatcher
// keeps by following the store, or from the store when the change that
// created the job has not reached this dispatcher yet. It returns nil for a
// job that no longer exists.
func (d *Dispatcher) job(ctx context.Context, key string) (*cached, error) {
	d.mu.RLock()
	c := d.jobs[key]
	d.mu.RUnlock()
	if c != nil {
		return c, nil
	}
	j, err := d.store.GetJobByKey(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading job %s: %w", key, err)
	}
	sched, err := planner.NewSchedule(&j.Properties, j.Anchored)
	if err != nil {
		return nil, fmt.Errorf("compiling the schedule of %s: %w", key, err)
	}
	return &cached{job: j, sched: sched}, nil
}

// confirmWindow is how recently a job must have been written for its first
// occurrence to be confirmed in the store before it is published. The store
// takes back a job refused by the quota check within moments of writing it;
// an older job that was deleted is long gone from the cache.
const confirmWindow = 10 * time.Second

// confirm reads a job from the store, bypassing the cache: nil when it is
// gone.
func (d *Dispatcher) confirm(ctx context.Context, key string) (*cached, error) {
	d.mu.RLock()
	c := d.jobs[key]
	d.mu.RUnlock()
	j, err := d.store.GetJobByKey(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("confirming job %s: %w", key, err)
	case c != nil && c.job.Revision == j.Revision:
		return c, nil
	}
	sched, err := planner.NewSchedule(&j.Properties, j.Anchored)
	if err != nil {
		return nil, fmt.Errorf("compiling the schedule of %s: %w", key, err)
	}
	return &cached{job: j, sched: sched}, nil
}

// fires reports whether the job may run now: it is enabled and its
// collection is enabled (nothing in a disabled or suspended collection
// fires). Collection states are looked up at most once a second.
func (d *Dispatcher) fires(ctx context.Context, j store.Job) bool {
	if j.Properties.State != contracts.JobStateEnabled {
		return false
	}
	ref := j.Ref.CollectionRef()
	key := ref.KVKey()
	now := d.cfg.Now()
	d.collMu.Lock()
	st, ok := d.collections[key]
	d.collMu.Unlock()
	if ok && now.Sub(st.at) < time.Second {
		return st.firing
	}
	c, err := d.store.GetCollection(ctx, ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		st = collState{firing: false, at: now}
	case err != nil:
		return !ok || st.firing // keep the last known state through a blip
	default:
		st = collState{firing: c.Properties.State == "" || c.Properties.State == contracts.JobCollectionStateEnabled, at: now}
	}
	d.collMu.Lock()
	d.collections[key] = st
	d.collMu.Unlock()
	return st.firing
}

// lastOccurrence reports whether the claimed attempt belongs to the job's
// last occurrence: an occurrence of the schedule with none after it, or a
// follow-up attempt of such an occurrence (whose entry has no remaining
// occurrences). A run outside the schedule never is.
func lastOccurrence(c timer.Claim, next *timer.Entry) bool {
	switch {
	case c.Occurrence == 0:
		return false
	case c.Slot == scheduleSlot:
		return next == nil
	}
	return c.Remaining == 0
}

// AttemptIdentity returns the occurrence id and key of an attempt. A run
// outside the schedule (occurrence 0) has its own, its key naming the
// action "<action>/run": it may share its instant with an occurrence of the
// schedule.
func AttemptIdentity(ref contracts.JobRef, occurrence int64, expected time.Time, action contracts.ActionName, attempt int) (id, key string) {
	label := action
	if occurrence == 0 {
		label += "/run"
	}
	return contracts.OccurrenceID(ref, expected, label, attempt), contracts.OccurrenceKey(ref, expected, label, attempt)
}

// execution builds the message for a claimed attempt.
func (d *Dispatcher) execution(c timer.Claim, j store.Job, now time.Time, last bool) (*nats.Msg, error) {
	action := j.Properties.Action.ActionOf(c.Action)
	if action == nil {
		return nil, fmt.Errorf("the job has no %s", c.Action)
	}
	retries, _ := contracts.EffectiveRetry(j.Properties.Action.RetryPolicyOf(c.Action))
	id, key := AttemptIdentity(j.Ref, c.Occurrence, c.Expected, c.Action, c.Attempt)
	// The error action is sent as an action of its own: it never carries
	// another.
	single := *action
	single.ErrorAction = nil
	sealed, err := json.Marshal(d.cfg.Sealer.SealAction(&single, id))
	if err != nil {
		return nil, err
	}
	exec := contracts.Execution{
		Version: contracts.MessageVersion, OccurrenceID: id, OccurrenceKey: key,
		Job: j.Ref, ActionName: c.Action, Occurrence: c.Occurrence, Attempt: c.Attempt,
		ExpectedTime: c.Expected.UTC(), DispatchedAt: now.UTC(), Action: sealed,
		Timeout: contracts.MillisOf(d.cfg.ActionTimeout), Revision: c.Revision,
		LastAttempt: c.Attempt >= retries, LastOccurrence: last,
	}
	data, err := json.Marshal(exec)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(contracts.ExecSubjectPrefix + j.Ref.Tokens())
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, exec.OccurrenceID)
	msg.Header.Set(contracts.TraceParentHeader, contracts.TraceParent(id))
	return msg, nil
}

// maintain reclaims expired leases and rebuilds the timer when Redis lost
// its state.
func (d *Dispatcher) maintain(ctx context.Context) {
	t := time.NewTicker(max(d.cfg.Lease/4, 250*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := d.ix.Reclaim(ctx, d.cfg.Now()); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("reclaiming expired leases", slog.String("error", err.Error()))
		} else if n > 0 {
			d.wake()
		}
		if err := d.rebuildIfLost(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Error("rebuilding the timer", slog.String("error", err.Error()))
		}
		if d.stale.Load() && !d.rebuilding.Load() {
			d.stale.Store(false)
			if err := d.scheduleAll(ctx); err != nil && ctx.Err() == nil {
				d.stale.Store(true)
				d.cfg.Logger.Error("scheduling every job again", slog.String("error", err.Error()))
			} else if err == nil {
				d.cfg.Logger.Info("scheduled every job again after the timer failed to answer")
			}
		}
		if err := d.deleteEnded(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("deleting ended jobs", slog.String("error", err.Error()))
		}
	}
}

// retentionEvery is how often the dispatcher looks for ended jobs to delete.
const retentionEvery = time.Minute

// deleteEnded deletes the Completed and Faulted jobs that ended more than
// EndedRetention ago. Every planner does it; deleting a job twice is
// harmless.
func (d *Dispatcher) deleteEnded(ctx context.Context) error {
	now := d.cfg.Now()
	if last := d.retainedAt.Load(); last != 0 && now.Sub(time.Unix(0, last)) < retentionEvery {
		return nil
	}
	d.retainedAt.Store(now.UnixNano())
	var expired []contracts.JobRef
	d.mu.RLock()
	for _, c := range d.jobs {
		if e := c.job.Ended; e != nil && now.Sub(*e) >= d.cfg.EndedRetention {
			expired = append(expired, c.job.Ref)
		}
	}
	d.mu.RUnlock()
	var errs []error
	for _, ref := range expired {
		if err := d.store.DeleteJob(ctx, ref); err != nil && !errors.Is(err, store.ErrNotFound) {
			errs = append(errs, err)
		} else if err == nil {
			d.cfg.Logger.Info("deleted an ended job", slog.String("job", ref.Key()))
		}
	}
	return errors.Join(errs...)
}

// restoreTallies writes the tally of every job's newest history entry into
// the timer where it has none: Redis lost its state, and the jobs'
// counters and the occurrences their schedules reached are in history.
func (d *Dispatcher) restoreTallies(ctx context.Context) error {
	if d.cfg.History == nil {
		return nil
	}
	tallies, err := d.cfg.History.Tallies(ctx)
	if err != nil {
		return fmt.Errorf("reading the jobs' tallies from history: %w", err)
	}
	if len(tallies) > 0 {
		d.cfg.Logger.Info("restoring the jobs' counters from history", slog.Int("jobs", len(tallies)))
	}
	return d.ix.RestoreStatuses(ctx, tallies)
}

// rebuildIfLost puts every enabled job back at its next occurrence from now
// when the timer's marker is gone (Redis was flushed or replaced).
func (d *Dispatcher) rebuildIfLost(ctx context.Context) error {
	if !d.ready.Load() {
		return nil // the initial watch is still scheduling every job
	}
	built, err := d.ix.Built(ctx)
	if err != nil || built {
		return err
	}
	// Not ready until rebuilt: a failed rebuild is tried again at the next
	// maintenance, and readiness waits for it.
	d.rebuilding.Store(true)
	d.cfg.Logger.Warn("the timer's state is gone; rebuilding it from the job store and history")
	if err := d.restoreTallies(ctx); err != nil {
		return err
	}
	if err := d.scheduleAll(ctx); err != nil {
		return err
	}
	if err := d.ix.MarkBuilt(ctx); err != nil {
		return err
	}
	d.rebuilding.Store(false)
	return nil
}

// scheduleAll schedules every job the dispatcher knows again, in batches;
// a job already scheduled from its current version keeps its entry.
func (d *Dispatcher) scheduleAll(ctx context.Context) error {
	d.mu.RLock()
	jobs := make([]*cached, 0, len(d.jobs))
	for _, c := range d.jobs {
		jobs = append(jobs, c)
	}
	d.mu.RUnlock()
	var errs []error
	for start := 0; start < len(jobs); start += applyBatch {
		batch := make([]pendingJob, 0, applyBatch)
		for _, c := range jobs[start:min(start+applyBatch, len(jobs))] {
			batch = append(batch, pendingJob{job: c.job, sched: c.sched})
		}
		errs = append(errs, d.schedule(ctx, batch))
	}
	return errors.Join(errs...)
}
