// Package feedback is the planner's consumer of result events: it counts
// each attempt in the job's status and in the executions per minute,
// schedules the retry or the error action that follows a failed attempt
// through the Redis timer, ends a job whose last occurrence ended
// (Completed when it succeeded, Faulted when it faulted), clears the
// running mark of an occurrence that is over (overlap policies) and
// disables a job after pauseAfterFaults consecutive Faulted occurrences.
package feedback

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
	"github.com/jobscheduler/scheduler/internal/streams"
	"github.com/jobscheduler/scheduler/planner/dispatch"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Jobs is what the consumer needs of the planner's view of the jobs.
type Jobs interface {
	// Job returns the job stored under the key; false when it does not
	// exist.
	Job(ctx context.Context, key string) (store.Job, bool, error)
}

// FollowUps is what the consumer needs of the keeper of follow-ups.
type FollowUps interface {
	// Settle makes the follow-ups bucket hold next in the slot of result
	// r, or nothing when next is nil; before next is put in the timer.
	Settle(ctx context.Context, r contracts.Result, next *timer.Entry) error
}

// Config configures a Consumer.
type Config struct {
	// Batch is the most results recorded in one round trip to Redis.
	// Defaults to 256.
	Batch int
	// Replicas of the RESULTS stream when the planner creates it. Defaults
	// to 1.
	Replicas int
	// Observer learns of the results counted and the jobs ended, for
	// metrics. Defaults to none.
	Observer Observer
	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Observer learns what the feedback loop did. Its methods are called from
// several goroutines at once, so they must be safe for that, and quick.
type Observer interface {
	// Recorded is called once for each result counted for the first time,
	// with what follows it.
	Recorded(r events.Recorded)
	// Ended is called for each job that ended, in state Completed or
	// Faulted.
	Ended(state contracts.JobState)
}

func (c Config) withDefaults() Config {
	c.Batch = cmp.Or(c.Batch, 256)
	c.Replicas = max(c.Replicas, 1)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Consumer processes result events from the planners' durable consumer.
// Any number of planners share it.
type Consumer struct {
	js        jetstream.JetStream
	jobs      Jobs
	followUps FollowUps
	wake      func()
	store     *store.Store
	ix        *timer.Index
	cfg       Config

	consume  jetstream.ConsumeContext
	incoming chan jetstream.Msg
	done     chan struct{}
	stopOnce sync.Once
	cancel   context.CancelFunc
}

// Start creates the RESULTS stream and its consumers when no other role
// did yet, and starts processing results. wake makes the dispatcher look
// at the timer at once, for a follow-up due now.
func Start(ctx context.Context, js jetstream.JetStream, jobs Jobs, followUps FollowUps, wake func(), st *store.Store, ix *timer.Index, cfg Config) (*Consumer, error) {
	cfg = cfg.withDefaults()
	results, err := streams.EnsureResults(ctx, js, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	cons, err := streams.EnsureConsumer(ctx, results, streams.ResultsConsumerConfig(contracts.PlannerConsumer))
	if err != nil {
		return nil, fmt.Errorf("creating the %s consumer: %w", contracts.PlannerConsumer, err)
	}
	c := &Consumer{js: js, jobs: jobs, followUps: followUps, wake: wake, store: st, ix: ix, cfg: cfg, incoming: make(chan jetstream.Msg, cfg.Batch), done: make(chan struct{})}
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	c.consume, err = cons.Consume(func(m jetstream.Msg) { c.incoming <- m }, jetstream.PullMaxMessages(2*cfg.Batch),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrNoHeartbeat) {
				cfg.Logger.Warn("consuming results", slog.String("error", err.Error()))
			}
		}))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("consuming results: %w", err)
	}
	go c.loop(work)
	return c, nil
}

// Stop stops fetching results, processes those already fetched and
// returns. It is idempotent.
func (c *Consumer) Stop() {
	c.stopOnce.Do(func() {
		c.consume.Drain()
		<-c.consume.Closed()
		close(c.incoming)
		<-c.done
		c.cancel()
	})
}

// loop gathers the results waiting into batches and processes each.
func (c *Consumer) loop(ctx context.Context) {
	defer close(c.done)
	batch := make([]jetstream.Msg, 0, c.cfg.Batch)
	for m := range c.incoming {
		batch = append(batch[:0], m)
	gather:
		for len(batch) < c.cfg.Batch {
			select {
			case m, ok := <-c.incoming:
				if !ok {
					break gather
				}
				batch = append(batch, m)
			default:
				break gather
			}
		}
		c.process(ctx, batch)
	}
}

// pending is a result being processed.
type pending struct {
	msg      jetstream.Msg
	result   contracts.Result
	job      store.Job
	decision contracts.Decision
	next     *timer.Entry
}

// process records a batch of results: it keeps what follows each in the
// follow-ups bucket, records the results in Redis (counters, the follow-up
// in the timer), ends the jobs whose last occurrence ended, and
// acknowledges each result once done with it. A result whose processing
// failed is delivered again a moment later: processing it twice is
// harmless.
func (c *Consumer) process(ctx context.Context, batch []jetstream.Msg) {
	now := c.cfg.Now()
	var (
		work []pending
		wake bool
	)
	for _, m := range batch {
		r, err := contracts.ParseResultEvent(m.Data())
		if err != nil {
			c.cfg.Logger.Error("dropping an unreadable result event", slog.String("subject", m.Subject()), slog.String("error", err.Error()))
			_ = m.Term()
			continue
		}
		j, ok, err := c.jobs.Job(ctx, r.Job.KVKey())
		if err != nil {
			c.cfg.Logger.Warn("reading the job of a result", slog.String("job", r.Job.Key()), slog.String("error", err.Error()))
			_ = m.NakWithDelay(time.Second)
			continue
		}
		if !ok {
			_ = m.Ack() // the job was deleted: nothing to count or follow up
			continue
		}
		d := contracts.Decide(r, j.Properties.Action)
		next := FollowUp(r, d, j, now)
		if next != nil && !next.Due.After(now) {
			wake = true
		}
		work = append(work, pending{msg: m, result: r, job: j, decision: d, next: next})
	}
	if len(work) > 0 && !c.timerBuilt(ctx) {
		// Redis lost the timer: counting now would start the jobs' counters
		// from zero before the rebuild restores them from history, and the
		// restore does not overwrite a status. The results wait.
		for _, p := range work {
			_ = p.msg.NakWithDelay(time.Second)
		}
		return
	}
	work = c.settle(ctx, work)
	if len(work) > 0 {
		records := make([]timer.Record, len(work))
		for i, p := range work {
			r := p.result
			executions, failures, faulted := r.Counts()
			records[i] = timer.Record{
				JobKey: r.Job.KVKey(), AttemptID: r.OccurrenceID,
				Executions: executions, Failures: failures, Faulted: faulted, Started: r.StartTime,
				Status: r.LastStatus(), Ended: r.EndTime,
				Occurrence: r.Occurrence, OccurrenceTime: r.ExpectedTime, Next: p.next,
			}
		}
		recorded, err := c.ix.RecordAll(ctx, records)
		if err != nil {
			c.cfg.Logger.Warn("recording results", slog.Int("results", len(records)), slog.String("error", err.Error()))
			for _, p := range work {
				_ = p.msg.NakWithDelay(time.Second)
			}
			return
		}
		if c.cfg.Observer != nil {
			for i, first := range recorded {
				if first {
					c.cfg.Observer.Recorded(events.Recorded{Result: work[i].result, Decision: work[i].decision})
				}
			}
		}
		c.countExecutions(ctx, work, recorded)
	}
	overErrs, woke := c.over(ctx, work)
	if (wake || woke) && c.wake != nil {
		c.wake()
	}
	errs := c.end(ctx, work, now)
	pauseErrs := c.pause(ctx, work)
	for i := range errs {
		errs[i] = errors.Join(errs[i], overErrs[i], pauseErrs[i])
	}
	for i, p := range work {
		if errs[i] != nil {
			c.cfg.Logger.Warn("ending an occurrence or a job", slog.String("job", p.result.Job.Key()), slog.String("error", errs[i].Error()))
			_ = p.msg.NakWithDelay(time.Second)
			continue
		}
		_ = p.msg.Ack()
	}
}

// countExecutions counts, in the executions per minute, each attempt whose
// result was recorded for the first time (recorded[i] for work[i]): of the
// main action or of the error action alike, by its outcome, in the minute
// it ended. The counts are a statistic: a failure to count is logged, and
// the results go on.
func (c *Consumer) countExecutions(ctx context.Context, work []pending, recorded []bool) {
	executions := make([]timer.Execution, 0, len(recorded))
	for i, first := range recorded {
		if !first {
			continue // delivered again: counted the first time
		}
		r := work[i].result
		executions = append(executions, timer.Execution{
			Collection: r.Job.CollectionRef(), Failed: r.Outcome != contracts.Succeeded, Ended: r.EndTime,
		})
	}
	if len(executions) == 0 {
		return
	}
	if err := c.ix.CountExecutions(ctx, executions); err != nil {
		c.cfg.Logger.Warn("counting executions per minute", slog.Int("executions", len(executions)), slog.String("error", err.Error()))
	}
}

// timerBuilt reports whether the timer holds the jobs' counters: it was not
// emptied since it was last built.
func (c *Consumer) timerBuilt(ctx context.Context) bool {
	built, err := c.ix.Built(ctx)
	if err != nil {
		c.cfg.Logger.Warn("looking at the timer", slog.String("error", err.Error()))
		return false
	}
	if !built {
		c.cfg.Logger.Info("the timer is being rebuilt; results wait until it is")
	}
	return built
}

// settle keeps what follows each result in the follow-ups bucket, several
// at a time, before the timer learns of it: a retry, error action or run
// written only to Redis would be lost with Redis. It returns the results it
// settled; the others are delivered again a moment later.
func (c *Consumer) settle(ctx context.Context, work []pending) []pending {
	errs := make([]error, len(work))
	slots := make(chan struct{}, endParallelism)
	var wg sync.WaitGroup
	for i, p := range work {
		if !dispatch.SettleNeeded(p.result, p.next) {
			continue // most results: spare them a goroutine
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			errs[i] = c.followUps.Settle(ctx, p.result, p.next)
		}()
	}
	wg.Wait()
	settled := work[:0:0]
	for i, p := range work {
		if errs[i] != nil {
			c.cfg.Logger.Warn("keeping a follow-up", slog.String("job", p.result.Job.Key()), slog.String("error", errs[i].Error()))
			_ = p.msg.NakWithDelay(time.Second)
			continue
		}
		settled = append(settled, p)
	}
	return settled
}

// FollowUp returns the timer entry of the attempt that d (the decision on
// result r of job j, processed at now) says follows: a retry due its retry
// interval from now, or the error action due at once; nil when nothing
// follows. Times are the planner's, whatever the worker's clock says.
func FollowUp(r contracts.Result, d contracts.Decision, j store.Job, now time.Time) *timer.Entry {
	next := timer.Entry{
		JobKey: r.Job.KVKey(), Slot: dispatch.FollowUpSlot(r.Occurrence, r.ExpectedTime),
		Expected: r.ExpectedTime, Occurrence: r.Occurrence, Action: r.ActionName, Remaining: -1, Revision: j.Revision,
	}
	if r.LastOccurrence {
		next.Remaining = 0
	}
	switch d.Next {
	case contracts.RetrySameAction:
		next.Attempt, next.Due = r.Attempt+1, now.Add(d.Delay)
	case contracts.RunErrorAction:
		next.Action, next.Attempt, next.Due = contracts.ErrorAction, 0, now
	default:
		return nil
	}
	next.Due = next.Due.Truncate(time.Millisecond)
	next.Expected = next.Expected.Truncate(time.Millisecond)
	return &next
}

// endParallelism is how many jobs end at the same time.
const endParallelism = 16

// end makes Completed or Faulted each job whose last occurrence a result
// ended and for which nothing else is scheduled (it was not given a new
// schedule meanwhile), and returns the error of each result's work. Only an
// enabled job ends; ending one twice is harmless.
func (c *Consumer) end(ctx context.Context, work []pending, now time.Time) []error {
	errs := make([]error, len(work))
	var (
		ending []int
		keys   []string
	)
	for i, p := range work {
		if p.decision.EndState != "" {
			ending = append(ending, i)
			keys = append(keys, p.result.Job.KVKey())
		}
	}
	if len(ending) == 0 {
		return errs
	}
	entries, scheduled, err := c.ix.GetAll(ctx, keys, "")
	if err != nil {
		for _, i := range ending {
			errs[i] = err
		}
		return errs
	}
	ends := ending[:0]
	for n, i := range ending {
		r := work[i].result
		// The schedule's entry may still be this occurrence's, claimed by a
		// planner that has not committed it yet (the worker was faster):
		// only another occurrence means the job goes on.
		if e := entries[n]; scheduled[n] && (e.Occurrence != r.Occurrence || !e.Expected.Equal(r.ExpectedTime)) {
			continue
		}
		ends = append(ends, i)
	}
	// A few goroutines share the jobs, rather than one each: ending a job
	// grows a goroutine's stack, once per goroutine.
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(endParallelism, len(ends)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := next.Add(1) - 1; k < int64(len(ends)); k = next.Add(1) - 1 {
				i := ends[k]
				r, state := work[i].result, work[i].decision.EndState
				ended, err := c.store.EndJobAt(ctx, r.Job, work[i].job.Revision, state, now)
				if ended {
					c.cfg.Logger.Info("job ended", slog.String("job", r.Job.Key()), slog.String("state", string(state)))
					if c.cfg.Observer != nil {
						c.cfg.Observer.Ended(state)
					}
				}
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	return errs
}
