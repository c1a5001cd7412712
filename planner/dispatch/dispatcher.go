package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
	"github.com/jobscheduler/scheduler/internal/startstop"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Dispatcher claims what is due in the timer, publishes each attempt on
// EXEC exactly once (Nats-Msg-Id = its occurrence id) and only then
// commits what follows it. Any number of dispatchers, in any number of
// processes, share one timer.
//
// No publish is waited for without a bound: an attempt JetStream has not
// acknowledged within Config.PublishTimeout (its stream's leader died, the
// connection broke) is released, to be claimed and published again under
// the same Nats-Msg-Id, which JetStream stores once.
type Dispatcher struct {
	startstop.Loop
	js        jetstream.JetStream
	ix        *timer.Index
	jobs      *Jobs
	followUps *FollowUps
	cfg       Config

	kick chan struct{}
	// sleepUntil is when the loop, asleep, looks at the timer next (unix
	// ns of Config.Now); 0 while it is not asleep.
	sleepUntil atomic.Int64
	// progressAt is when the loop last finished a round without a failure
	// (unix ns of the real clock), lastErr the failure of the last round.
	progressAt atomic.Int64
	errMu      sync.Mutex
	lastErr    error
}

func newDispatcher(js jetstream.JetStream, ix *timer.Index, jobs *Jobs, fu *FollowUps, cfg Config) *Dispatcher {
	return &Dispatcher{js: js, ix: ix, jobs: jobs, followUps: fu, cfg: cfg, kick: make(chan struct{}, 1)}
}

// Start starts dispatching.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.progressAt.Store(time.Now().UnixNano())
	return d.Loop.Start(ctx, d.run)
}

// Wake makes the dispatcher look at the timer now: an entry was scheduled
// that may be due sooner than what it waits for.
func (d *Dispatcher) Wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// WakeFor wakes the dispatcher for an entry scheduled at due, unless it
// looks at the timer by then anyway: scheduling many jobs due later costs
// no rounds of claims.
func (d *Dispatcher) WakeFor(due time.Time) {
	until := d.sleepUntil.Load()
	if until == 0 || due.Add(-d.cfg.Lookahead).UnixNano() < until {
		d.Wake()
	}
}

// Stalled reports why the dispatcher made no progress for longer than
// Config.StallAfter: rounds that keep failing, or a round that does not
// end. Empty while it makes progress.
func (d *Dispatcher) Stalled() string {
	since := time.Since(time.Unix(0, d.progressAt.Load()))
	if since <= d.cfg.StallAfter {
		return ""
	}
	d.errMu.Lock()
	err := d.lastErr
	d.errMu.Unlock()
	why := fmt.Sprintf("dispatch has made no progress for %s", since.Round(time.Second))
	if err != nil {
		why += ": " + err.Error()
	}
	return why
}

// run claims and publishes due occurrences, then sleeps until the earliest
// due time, a wake-up, or MaxIdle.
func (d *Dispatcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := d.round(ctx)
		if ctx.Err() != nil {
			return
		}
		d.errMu.Lock()
		d.lastErr = err
		d.errMu.Unlock()
		if err != nil {
			d.cfg.Logger.Error("dispatching", slog.String("error", err.Error()))
		} else {
			d.progressAt.Store(time.Now().UnixNano())
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
	d.sleepUntil.Store(d.cfg.Now().Add(wait).UnixNano())
	defer d.sleepUntil.Store(0)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-d.kick:
	case <-t.C:
	}
}

// pending is a claimed attempt on its way to EXEC.
type pending struct {
	claim     timer.Claim
	msg       *nats.Msg
	ack       jetstream.PubAckFuture
	next      *timer.Entry
	published time.Time
}

// round claims up to Batch occurrences due within the lookahead, builds
// their messages, publishes each at its due time and commits the published
// ones. It returns how many it claimed.
func (d *Dispatcher) round(ctx context.Context) (int, error) {
	now := d.cfg.Now()
	// Claim may return claims together with an error: they are in flight
	// and are dispatched all the same. Claims come sorted by due time.
	claims, claimErr := d.ix.Claim(ctx, now.Add(d.cfg.Lookahead), d.cfg.Lease+d.cfg.Lookahead, d.cfg.Batch)
	if len(claims) == 0 {
		return 0, claimErr
	}
	errs := []error{claimErr}
	ready := d.prepare(ctx, claims, now, &errs)
	inFlight := make([]pending, 0, len(ready))
	for i, p := range ready {
		if err := d.waitUntil(ctx, p.claim.Due); err != nil {
			// Left claimed: the lease expiry returns them to the due set.
			return len(claims), err
		}
		ack, err := d.js.PublishMsgAsync(p.msg)
		if err != nil {
			errs = append(errs, fmt.Errorf("publishing %s: %w", p.claim.JobKey, err), d.ix.Release(ctx, p.claim))
			continue
		}
		ready[i].ack, ready[i].published = ack, d.cfg.Now()
		inFlight = append(inFlight, ready[i])
	}
	completions, err := d.await(ctx, inFlight, now)
	errs = append(errs, err)
	if len(completions) > 0 {
		errs = append(errs, d.ix.CommitAll(ctx, completions))
	}
	return len(claims), errors.Join(errs...)
}

// prepare builds the message of each claim. A claim whose job is gone, does
// not fire now, or whose message cannot be built is committed at once: the
// attempt is skipped and the schedule goes on; one whose job cannot be read
// is released, to be tried again.
func (d *Dispatcher) prepare(ctx context.Context, claims []timer.Claim, now time.Time, errs *[]error) []pending {
	ready := make([]pending, 0, len(claims))
	for _, c := range claims {
		job, err := d.jobs.get(ctx, c.JobKey)
		if err != nil {
			*errs = append(*errs, err, d.ix.Release(ctx, c))
			continue
		}
		var sched *planner.Schedule
		if job != nil {
			sched = job.sched
		}
		next := nextEntry(c, sched, now)
		if job != nil && c.Occurrence == 1 && c.Attempt == 0 && c.Slot == scheduleSlot && now.Sub(job.job.Updated) < confirmWindow {
			if job, err = d.jobs.confirm(ctx, c.JobKey); err != nil {
				*errs = append(*errs, err, d.ix.Release(ctx, c))
				continue
			}
		}
		if job == nil || !d.jobs.fires(ctx, job.job) {
			// Deleted, disabled or in a collection that does not fire: the
			// attempt is skipped, the schedule goes on.
			*errs = append(*errs, d.skip(ctx, c, next))
			continue
		}
		msg, err := buildExecution(d.cfg.Sealer, c, job.job, now, d.cfg.ActionTimeout, lastOccurrence(c, next))
		if err != nil {
			d.cfg.Logger.Error("building an execution", slog.String("job", c.JobKey), slog.String("error", err.Error()))
			*errs = append(*errs, d.skip(ctx, c, next))
			continue
		}
		ready = append(ready, pending{claim: c, msg: msg, next: next})
	}
	return ready
}

// skip commits a claim without publishing it: a follow-up skipped is
// forgotten in the follow-ups bucket too.
func (d *Dispatcher) skip(ctx context.Context, c timer.Claim, next *timer.Entry) error {
	if c.Slot != scheduleSlot {
		if err := d.followUps.drop(ctx, c.Entry); err != nil {
			return errors.Join(err, d.ix.Release(ctx, c))
		}
	}
	return d.ix.Commit(ctx, c, next)
}

// await waits for JetStream to acknowledge the published attempts, at most
// PublishTimeout after the last was published, and returns the
// completions of those stored. An attempt whose acknowledgement failed or
// did not come in time is released: it is due again at once, and its next
// publication under the same Nats-Msg-Id is stored once.
func (d *Dispatcher) await(ctx context.Context, inFlight []pending, claimed time.Time) ([]timer.Completion, error) {
	completions := make([]timer.Completion, 0, len(inFlight))
	var errs []error
	deadline := time.NewTimer(d.cfg.PublishTimeout)
	defer deadline.Stop()
	expired := false
	for _, p := range inFlight {
		var err error
		if !expired {
			select {
			case <-p.ack.Ok():
			case err = <-p.ack.Err():
			case <-ctx.Done():
				// Left claimed: its lease expires and another planner (or
				// this one, restarted) publishes it again, deduplicated by
				// its id.
				return completions, ctx.Err()
			case <-deadline.C:
				expired = true
			}
		}
		if expired {
			// Only an acknowledgement already there counts now.
			select {
			case <-p.ack.Ok():
			case err = <-p.ack.Err():
			default:
				err = fmt.Errorf("no acknowledgement within %s", d.cfg.PublishTimeout)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("publishing %s: %w", p.claim.JobKey, err), d.ix.Release(ctx, p.claim))
			continue
		}
		completions = append(completions, timer.Completion{Claim: p.claim, Next: p.next})
		if d.cfg.Observer != nil {
			d.cfg.Observer.Dispatched(events.Dispatched{
				JobKey: p.claim.JobKey, Action: p.claim.Action, Occurrence: p.claim.Occurrence, Attempt: p.claim.Attempt,
				Due: p.claim.Due, TraceParent: p.msg.Header.Get(contracts.TraceParentHeader),
				Claimed: claimed, Published: p.published, Stored: d.cfg.Now(),
			})
		}
	}
	return completions, errors.Join(errs...)
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

// confirmWindow is how recently a job must have been written for its first
// occurrence to be confirmed in the store before it is published. The store
// takes back a job refused by the quota check within moments of writing it;
// an older job that was deleted is long gone from the cache.
const confirmWindow = 10 * time.Second
