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
	"github.com/jobscheduler/scheduler/planner/timer"
)

// Dispatcher claims what is due in the timer, publishes each attempt on
// EXEC exactly once (Nats-Msg-Id = its occurrence id) and only then
// commits what follows it. Any number of dispatchers, in any number of
// processes, share one timer.
//
// Three goroutines make a pipeline, so that Redis and JetStream work side
// by side: the dispatch loop claims a batch and builds its messages; the
// publisher publishes each when its time comes; the settler waits for
// JetStream's acknowledgements in the order of publication and commits the
// stored attempts in batches. An attempt is published up to
// Config.PublishAhead before it is due (an attempt of a burst up to
// Config.Lookahead), carrying its due time, which the worker that takes
// it waits for. The loop claims the next batch while the
// publisher publishes the last. At most publishWindow acknowledgements are
// awaited at once, JetStream's limit on pending ones, so a publish never
// stalls.
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
	// batches carries the built attempts of each round to the publisher,
	// published carries each published attempt to the settler, and window
	// holds a token for each attempt published whose acknowledgement the
	// settler has not seen.
	batches   chan []pending
	published chan pending
	window    chan struct{}
	// unsettled counts the attempts built and not yet committed or
	// released; failures counts the publisher's and the settler's
	// failures. A round counts as progress only when it leaves nothing
	// unsettled and no failure came meanwhile.
	unsettled atomic.Int64
	failures  atomic.Int64
	// publishing is set while the publisher publishes a batch whose time
	// has come: the settler then leaves its commits for later, so as not to
	// take from the publisher the time the last of the batch wait for.
	// paused tells the settler that publishing was cleared.
	publishing atomic.Bool
	paused     chan struct{}
	// progressAt is when dispatch last made progress (unix ns of the real
	// clock): such a round, or a batch settled without a failure. lastErr
	// is the last failure.
	progressAt atomic.Int64
	errMu      sync.Mutex
	lastErr    error
}

// publishWindow is the most acknowledgements the publisher awaits at once,
// and its JetStream context's limit on pending ones
// (PublishAsyncMaxPending). It is above the default Batch, so that a batch
// of executions due at the same instant is published without waiting for
// an acknowledgement.
const publishWindow = 8192

// commitBatch is the most stored attempts the settler commits in one call.
const commitBatch = 1000

func newDispatcher(js jetstream.JetStream, ix *timer.Index, jobs *Jobs, fu *FollowUps, cfg Config) *Dispatcher {
	return &Dispatcher{
		js: js, ix: ix, jobs: jobs, followUps: fu, cfg: cfg, kick: make(chan struct{}, 1),
		batches: make(chan []pending), published: make(chan pending, publishWindow), window: make(chan struct{}, publishWindow),
		paused: make(chan struct{}, 1),
	}
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
// Config.StallAfter: rounds, publications or commits that keep failing, or
// a round that does not end. Empty while it makes progress.
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

// failed notes and logs a failure.
func (d *Dispatcher) failed(err error) {
	d.errMu.Lock()
	d.lastErr = err
	d.errMu.Unlock()
	d.cfg.Logger.Error("dispatching", slog.String("error", err.Error()))
}

// settled notes that n attempts are committed or released.
func (d *Dispatcher) settled(n int) { d.unsettled.Add(-int64(n)) }

// run claims due occurrences and builds their messages, hands them to the
// publisher, then sleeps until the earliest due time, a wake-up, or
// MaxIdle. The publisher and the settler run beside it and end with it.
func (d *Dispatcher) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { d.publish(ctx) })
	wg.Go(func() { d.settle(ctx) })
	defer wg.Wait()
	for ctx.Err() == nil {
		failures := d.failures.Load()
		n, err := d.round(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			d.failed(err)
		case d.unsettled.Load() == 0 && d.failures.Load() == failures:
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
	claim timer.Claim
	// ahead is how long before its due time it is published (see
	// Config.PublishAhead).
	ahead     time.Duration
	msg       *nats.Msg
	ack       jetstream.PubAckFuture
	next      *timer.Entry
	claimed   time.Time
	published time.Time
}

// round claims up to Batch occurrences due within the lookahead, builds
// their messages and hands them to the publisher, waiting while it
// publishes the batch before. It returns how many it claimed.
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
	ahead := d.cfg.PublishAhead
	if len(claims) == d.cfg.Batch && ahead >= 0 {
		ahead = d.cfg.Lookahead // a burst: published as soon as built
	}
	for i := range ready {
		ready[i].ahead = ahead
	}
	if len(ready) > 0 {
		d.unsettled.Add(int64(len(ready)))
		select {
		case d.batches <- ready:
		case <-ctx.Done():
			// Left claimed: the lease expiry returns them to the due set.
			return len(claims), ctx.Err()
		}
	}
	return len(claims), errors.Join(errs...)
}

// prepare builds the message of each claim. A claim whose job is gone, does
// not fire now, or whose message cannot be built is committed at once: the
// attempt is skipped and the schedule goes on; one whose job cannot be read
// is released, to be tried again. An occurrence of a job whose overlap
// policy is Skip or BufferOne, due while an earlier one is in flight, is
// committed without being published too (see admit).
func (d *Dispatcher) prepare(ctx context.Context, claims []timer.Claim, now time.Time, errs *[]error) []pending {
	ready := make([]pending, 0, len(claims))
	for _, c := range claims {
		job, err := d.jobs.get(ctx, c.JobKey)
		if err != nil {
			*errs = append(*errs, err, d.ix.Release(ctx, c))
			continue
		}
		next, missed := planClaim(c, job, now, d.cfg)
		if c.Slot == backfillSlot {
			if next, err = d.followUps.advanceBackfill(ctx, c, job, now); err != nil {
				*errs = append(*errs, err, d.ix.Release(ctx, c))
				continue
			}
		}
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
		if missed {
			// Skipped by the job's catch-up policy (see planClaim).
			reportSkipped(d.cfg, c.Entry, catchUpPolicy(&job.job.Properties))
			*errs = append(*errs, d.skip(ctx, c, next))
			continue
		}
		msg, err := buildExecution(d.cfg.Sealer, c, job, now, d.cfg.ActionTimeout, lastOccurrence(c, next))
		if err != nil {
			d.cfg.Logger.Error("building an execution", slog.String("job", c.JobKey), slog.String("error", err.Error()))
			*errs = append(*errs, d.skip(ctx, c, next))
			continue
		}
		if policy := overlapPolicy(c, &job.job); policy != "" {
			// Skip and BufferOne: an occurrence due while another is in
			// flight does not run now. Asked once its message is built,
			// so that only an occurrence that runs is marked in flight.
			run, err := d.admit(ctx, c, &job.job, policy, now)
			if err != nil {
				*errs = append(*errs, err, d.ix.Release(ctx, c))
				continue
			}
			if !run {
				*errs = append(*errs, d.ix.Commit(ctx, c, next))
				continue
			}
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

// publishAt is when an attempt due at due is published: ahead of it by
// ahead (see Config.PublishAhead), at its due time when ahead is negative.
func publishAt(due time.Time, ahead time.Duration) time.Time {
	return due.Add(-max(ahead, 0))
}

// publish publishes each attempt handed over at its time (publishAt),
// never earlier, and passes it on to the settler. It returns when ctx ends,
// leaving what it holds claimed: the lease expiry returns it to the due set.
func (d *Dispatcher) publish(ctx context.Context) {
	for {
		var batch []pending
		select {
		case batch = <-d.batches:
		case <-ctx.Done():
			return
		}
		var errs []error
		for _, p := range batch {
			if at := publishAt(p.claim.Due, p.ahead); d.cfg.Now().Before(at) {
				d.pause()
				if d.waitUntil(ctx, at) != nil {
					return
				}
			}
			d.publishing.Store(true)
			select {
			case d.window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			ack, err := d.js.PublishMsgAsync(p.msg)
			if err != nil {
				<-d.window
				errs = append(errs, fmt.Errorf("publishing %s: %w", p.claim.JobKey, err), d.ix.Release(ctx, p.claim))
				d.failures.Add(1)
				d.settled(1)
				continue
			}
			p.ack, p.published = ack, d.cfg.Now()
			d.published <- p // never blocks: it holds as many as the window
		}
		d.pause()
		if err := errors.Join(errs...); err != nil && ctx.Err() == nil {
			d.failed(err)
		}
	}
}

// pause clears publishing and tells the settler.
func (d *Dispatcher) pause() {
	d.publishing.Store(false)
	select {
	case d.paused <- struct{}{}:
	default:
	}
}

// settle waits for the acknowledgement of each published attempt, in the
// order of publication, and commits the stored ones in batches: when no
// acknowledgement is at hand or commitBatch are waiting. An attempt whose
// acknowledgement failed or did not come within PublishTimeout of its
// publication is released: it is due again at once, and its next
// publication under the same Nats-Msg-Id is stored once. It returns when
// ctx ends, leaving what it holds claimed: the leases expire and another
// planner (or this one, restarted) publishes those attempts again,
// deduplicated by their ids.
func (d *Dispatcher) settle(ctx context.Context) {
	stored := make([]pending, 0, commitBatch)
	var errs []error
	commit := func() {
		d.commit(ctx, stored, errs)
		stored, errs = stored[:0], nil
	}
	timeout := time.NewTimer(time.Hour)
	defer timeout.Stop()
	for {
		var p pending
		select {
		case p = <-d.published:
		case <-ctx.Done():
			return
		default:
			// Nothing published waits: commit what is stored, then wait.
			if !d.publishing.Load() {
				commit()
			}
			select {
			case p = <-d.published:
			case <-d.paused:
				continue // commit what is stored now
			case <-ctx.Done():
				return
			}
		}
		known, err := d.acknowledged(ctx, p, timeout, false)
		if !known {
			// Not there yet: commit what is stored while it comes.
			if !d.publishing.Load() {
				commit()
			}
			_, err = d.acknowledged(ctx, p, timeout, true)
		}
		if ctx.Err() != nil {
			return
		}
		<-d.window
		if err != nil {
			errs = append(errs, fmt.Errorf("publishing %s: %w", p.claim.JobKey, err), d.ix.Release(ctx, p.claim))
			// Counted after the release and before it counts as
			// settled: a round that sees nothing unsettled either
			// claimed it again or sees the failure.
			d.failures.Add(1)
			d.settled(1)
			continue
		}
		if d.cfg.Observer != nil {
			d.cfg.Observer.Dispatched(events.Dispatched{
				JobKey: p.claim.JobKey, Action: p.claim.Action, Occurrence: p.claim.Occurrence, Attempt: p.claim.Attempt,
				Due: p.claim.Due, TraceParent: p.msg.Header.Get(contracts.TraceParentHeader),
				Claimed: p.claimed, Published: p.published, Stored: d.cfg.Now(),
			})
		}
		stored = append(stored, p)
		if len(stored) >= commitBatch && !d.publishing.Load() || len(stored) >= publishWindow {
			commit()
		}
	}
}

// acknowledged reports the outcome of p's publication once it is known:
// nil once JetStream stored it, an error when it refused it or did not
// answer within PublishTimeout of its publication. Without wait it returns
// at once, with known false when the outcome is not there yet.
func (d *Dispatcher) acknowledged(ctx context.Context, p pending, timeout *time.Timer, wait bool) (known bool, err error) {
	select {
	case <-p.ack.Ok():
		return true, nil
	case err := <-p.ack.Err():
		return true, err
	default:
	}
	if !wait {
		return false, nil
	}
	timeout.Reset(max(p.published.Add(d.cfg.PublishTimeout).Sub(d.cfg.Now()), 0))
	select {
	case <-p.ack.Ok():
		return true, nil
	case err := <-p.ack.Err():
		return true, err
	case <-ctx.Done():
		return true, ctx.Err()
	case <-timeout.C:
		// Only an acknowledgement already there counts now.
		if known, err := d.acknowledged(ctx, p, timeout, false); known {
			return true, err
		}
		return true, fmt.Errorf("no acknowledgement within %s", d.cfg.PublishTimeout)
	}
}

// commit commits the stored attempts. failures are those of the attempts
// settled since the last commit: none and a commit without error are
// progress.
func (d *Dispatcher) commit(ctx context.Context, stored []pending, failures []error) {
	var err error
	if len(stored) > 0 {
		completions := make([]timer.Completion, len(stored))
		for i, p := range stored {
			completions[i] = timer.Completion{Claim: p.claim, Next: p.next}
		}
		if err = d.ix.CommitAll(ctx, completions); err != nil {
			// Counted before they count as settled, so that no round
			// sees nothing unsettled and this failure not yet counted.
			d.failures.Add(1)
		}
		d.settled(len(stored))
	}
	if ctx.Err() != nil {
		return // stopped: what failed is left claimed, as in a round
	}
	if err := errors.Join(append(failures, err)...); err != nil {
		d.failed(err)
	} else if len(stored) > 0 {
		d.progressAt.Store(time.Now().UnixNano())
	}
}

// waitUntil returns when the clock reaches at, so that no execution is
// published before its time.
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
