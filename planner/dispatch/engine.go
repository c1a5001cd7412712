// Package dispatch turns due occurrences into execution messages. Its
// components, each a loop of its own started and stopped by the Engine:
//
//   - Follower keeps the Redis timer in step with the job store;
//   - Dispatcher claims what is due, publishes each execution on JetStream
//     exactly once (Nats-Msg-Id = the occurrence id) and only then commits
//     what follows it;
//   - Reclaimer returns expired claims, Rebuilder rebuilds a lost timer,
//     Janitor deletes ended jobs after their retention;
//   - FollowUps keeps retries, error actions and runs durable in NATS;
//   - Inspector answers the API's reads.
package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// DefaultLookahead is how far ahead of its due time an occurrence is
// claimed and built, unless configured, and how far ahead a burst is
// published (see Config.PublishAhead). A burst of 20,000 due at one
// instant takes a planner on two cores about a second to claim and
// publish: two seconds publish it all before it is due, for the workers
// to hold, where half a second left all but a few hundred of it to be
// published after, beside the calls.
const DefaultLookahead = 2 * time.Second

// DefaultPublishAhead is how far ahead of its due time an execution is
// published, unless configured or part of a burst. Held longer, the
// executions of a steady load cost the workers memory and the calls
// latency (more held at once) without making them sooner.
const DefaultPublishAhead = 500 * time.Millisecond

// Config configures the Engine and its components.
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
	// PublishTimeout is how long the dispatcher waits for JetStream to
	// acknowledge an execution before it releases the attempt, to publish
	// it again. Defaults to 5s, or a third of Lease when that is shorter.
	PublishTimeout time.Duration
	// StallAfter is how long the dispatcher may go without finishing a
	// round before the planner reports itself not ready. Defaults to
	// 2 × (PublishTimeout + MaxIdle) + Lookahead, at least 10s.
	StallAfter time.Duration
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
	// CatchUpPace is the least time between two runs of one job that
	// catch up missed occurrences (catchUp All) or backfill a range: the
	// bounded rate at which they run. Defaults to 1s.
	CatchUpPace time.Duration
	// Lookahead is how far ahead of their due time occurrences are claimed
	// and their messages built, so that thousands due at the same second are
	// ready when it comes. Defaults to DefaultLookahead.
	Lookahead time.Duration
	// PublishAhead is how far ahead of its due time an execution is
	// published, at most Lookahead: JetStream stores the thousands due at
	// one second before it comes, and a worker holds each execution until
	// the due time it carries (Execution.NotBefore), never performing it
	// earlier. The executions of a round that claimed a full Batch (a
	// burst: more are due within the lookahead than a round takes) are
	// published as soon as they are built, up to Lookahead ahead.
	// Defaults to DefaultPublishAhead; negative publishes each at its due
	// time, bursts too, for workers of releases that do not hold
	// executions.
	PublishAhead time.Duration
	// Replicas of the EXEC stream and the follow-ups bucket. Defaults to 1.
	Replicas int
	// EndedRetention is how long a Completed or Faulted job is kept before
	// it is deleted. Defaults to 60 days.
	EndedRetention time.Duration
	// RetentionEvery is how often the Janitor looks for ended jobs to
	// delete. Defaults to 1m.
	RetentionEvery time.Duration
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
	c.PublishTimeout = cmp.Or(c.PublishTimeout, min(DefaultPublishTimeout, c.Lease/3))
	c.ActionTimeout = cmp.Or(c.ActionTimeout, 60*time.Second)
	c.MissedGrace = cmp.Or(c.MissedGrace, time.Minute)
	c.Settle = cmp.Or(c.Settle, 250*time.Millisecond)
	c.Lookahead = cmp.Or(c.Lookahead, DefaultLookahead)
	c.PublishAhead = min(cmp.Or(c.PublishAhead, DefaultPublishAhead), c.Lookahead)
	c.CatchUpPace = cmp.Or(c.CatchUpPace, time.Second)
	c.StallAfter = cmp.Or(c.StallAfter, max(10*time.Second, 2*(c.PublishTimeout+c.MaxIdle)+c.Lookahead))
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.EndedRetention = cmp.Or(c.EndedRetention, 60*24*time.Hour)
	c.RetentionEvery = cmp.Or(c.RetentionEvery, time.Minute)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Sealer == nil {
		errs = append(errs, errors.New("dispatch: Config.Sealer is required"))
	}
	if c.Lease < time.Second {
		errs = append(errs, fmt.Errorf("dispatch: Config.Lease %s is shorter than a second", c.Lease))
	}
	if c.Lease <= c.PublishTimeout+c.Lookahead {
		errs = append(errs, fmt.Errorf("dispatch: Config.Lease %s must be longer than PublishTimeout %s plus Lookahead %s: a claim must outlive its publication",
			c.Lease, c.PublishTimeout, c.Lookahead))
	}
	return errors.Join(errs...)
}

// DefaultPublishTimeout is Config.PublishTimeout's default, when a third
// of the lease is not shorter.
const DefaultPublishTimeout = 5 * time.Second

// maintenanceEvery is how often the Reclaimer and the Rebuilder look: an
// eighth of the lease, between 100ms and 1s, so that the claims of a planner
// that died are dispatched again at most a second after their lease ends.
func maintenanceEvery(lease time.Duration) time.Duration {
	return min(max(lease/8, 100*time.Millisecond), time.Second)
}

// DuplicateWindow is the EXEC stream's duplicate window for a lease: longer
// than the lease, so a planner that takes over an expired claim and
// publishes the same occurrence again is dropped as a duplicate.
func DuplicateWindow(lease time.Duration) time.Duration { return max(2*time.Minute, 4*lease) }

// Observer learns what the dispatcher did. Its methods are called from the
// dispatch loop, so they must be quick.
type Observer interface {
	Dispatched(d events.Dispatched)
}

// Observers tells each of its observers.
type Observers []Observer

// Dispatched tells each observer.
func (o Observers) Dispatched(d events.Dispatched) {
	for _, obs := range o {
		obs.Dispatched(d)
	}
}

// History is what the engine needs of the job history.
type History interface {
	// Tallies returns the tally of the newest history entry of every job
	// that has one, by job key.
	Tallies(ctx context.Context) (map[string]contracts.Tally, error)
	// Purge deletes the history of the job with the key.
	Purge(ctx context.Context, jobKey string) error
}

// Engine is the planner's side of dispatch: its components, started and
// stopped together. Any number of engines, in any number of processes,
// share one store and one timer.
type Engine struct {
	cfg Config
	js  jetstream.JetStream
	ix  *timer.Index

	jobs       *Jobs
	followUps  *FollowUps
	inspector  *Inspector
	follower   *Follower
	dispatcher *Dispatcher
	reclaimer  *Reclaimer
	rebuilder  *Rebuilder
	janitor    *Janitor
}

// New returns an engine over the job store st, the follow-ups fu and the
// timer ix; Start runs it. Executions are published on js's connection
// through a JetStream context of their own, which forgets the
// acknowledgements that do not come within PublishTimeout and allows as
// many pending as the dispatcher's window.
func New(js jetstream.JetStream, st *store.Store, fu *store.FollowUps, ix *timer.Index, cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	publisher, err := jetstream.New(js.Conn(), jetstream.WithPublishAsyncTimeout(cfg.PublishTimeout),
		jetstream.WithPublishAsyncMaxPending(publishWindow))
	if err != nil {
		return nil, fmt.Errorf("dispatch: JetStream: %w", err)
	}
	e := &Engine{cfg: cfg, js: js, ix: ix, jobs: newJobs(st, cfg.Now, cfg.Logger), inspector: &Inspector{ix: ix}}
	e.dispatcher = newDispatcher(publisher, ix, e.jobs, nil, cfg)
	wake := e.dispatcher.Wake
	e.followUps = newFollowUps(fu, ix, js, e.jobs, cfg, wake)
	e.dispatcher.followUps = e.followUps
	e.follower = newFollower(st, ix, e.jobs, e.followUps, cfg, wake)
	e.follower.wakeFor = e.dispatcher.WakeFor
	e.rebuilder = newRebuilder(ix, e.follower, e.followUps, cfg, wake)
	e.follower.onSynced = e.rebuilder.Kick
	e.reclaimer = newReclaimer(ix, cfg, wake)
	e.janitor = newJanitor(st, e.jobs, cfg)
	return e, nil
}

// Start creates the EXEC stream, restores the jobs' tallies when Redis lost
// its state (so that their schedules go on from the occurrence they
// reached), and starts every component. It returns once they run.
func (e *Engine) Start(ctx context.Context) error {
	if err := streams.EnsureExec(ctx, e.js, e.cfg.Replicas, DuplicateWindow(e.cfg.Lease)); err != nil {
		return err
	}
	if err := e.rebuilder.prepare(ctx); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	for _, c := range []interface{ Start(context.Context) error }{
		e.follower, e.dispatcher, e.reclaimer, e.rebuilder, e.janitor,
	} {
		if err := c.Start(ctx); err != nil {
			e.Stop()
			return err
		}
	}
	return nil
}

// Stop stops every component and waits for them. An occurrence being
// published is finished or left claimed, to be taken over when its lease
// expires. Stop is idempotent.
func (e *Engine) Stop() {
	e.dispatcher.Stop()
	e.follower.Stop()
	e.reclaimer.Stop()
	e.rebuilder.Stop()
	e.janitor.Stop()
}

// Problems returns what keeps the engine from being ready: the stored jobs
// not all scheduled yet, the timer being rebuilt, or dispatch making no
// progress. None means ready.
func (e *Engine) Problems() []string {
	var problems []string
	if !e.follower.Synced() {
		problems = append(problems, "scheduling the stored jobs")
	}
	if e.rebuilder.Rebuilding() {
		problems = append(problems, "rebuilding the timer")
	}
	if why := e.dispatcher.Stalled(); why != "" {
		problems = append(problems, why)
	}
	return problems
}

// Ready reports whether the engine has scheduled every stored job and
// dispatches.
func (e *Engine) Ready() bool { return len(e.Problems()) == 0 }

// Wake makes the dispatcher look at the timer at once, as when the clock
// jumped or an entry was scheduled sooner than it waits for.
func (e *Engine) Wake() { e.dispatcher.Wake() }

// Jobs returns the engine's view of the job store.
func (e *Engine) Jobs() *Jobs { return e.jobs }

// FollowUps returns the keeper of retries, error actions and runs.
func (e *Engine) FollowUps() *FollowUps { return e.followUps }

// Scheduling is what the REST API needs of the engine: the inspector's
// reads, and runs on demand.
type Scheduling struct {
	*Inspector
	*FollowUps
}

// Scheduling returns the engine's reads and runs for the API.
func (e *Engine) Scheduling() Scheduling { return Scheduling{e.inspector, e.followUps} }
