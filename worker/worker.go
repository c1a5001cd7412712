package worker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/streams"
)

// DefaultHold is how many executions received ahead of their due time a
// worker holds beside its Concurrency, unless configured.
const DefaultHold = 16384

// Config configures a Worker.
type Config struct {
	// Sender performs the actions. Required.
	Sender actions.Sender
	// Sealer opens the secrets the planner sealed in the execution
	// messages; it must hold the planners' key. Required.
	Sealer *seal.Sealer
	// Concurrency is the most actions performed at the same time; the
	// worker never holds more executions than that, pulled or performed,
	// but for those it held until they were due (see Hold) and those whose
	// result waits for the executions due now (at most Concurrency + Hold,
	// see report). Defaults to 128.
	Concurrency int
	// Hold is the most executions received ahead of their due time
	// (Execution.NotBefore) the worker holds until then beside the
	// Concurrency it performs, so that those due at one instant are in
	// hand when it comes; each stays counted until it is performed. One
	// received ahead while Hold are held waits in its slot. Defaults to
	// DefaultHold; negative holds none beside Concurrency.
	Hold int
	// AckWait is how long an execution may stay unacknowledged before
	// JetStream delivers it again; longer than the action deadline, and
	// extended while an action runs. Every worker must use the same. A
	// delivery is started only while more than a guard (a fifth of
	// AckWait, at most 5s) is left of AckWait since the pull request that
	// fetched it; an older one is skipped (see fresh). Defaults to 90s.
	AckWait time.Duration
	// MaxDeliveries is how often an execution may be delivered: one
	// delivered more often (it crashed or stalled the workers that took it)
	// is reported failed without being performed again. Defaults to 5.
	MaxDeliveries int
	// DrainTimeout is how long Stop lets the actions in flight finish and
	// publish their results before it cancels them and hands their
	// executions back; Stop returns soon after it, whether or not NATS
	// answers. Defaults to 30s.
	DrainTimeout time.Duration
	// Name identifies the worker in the results it publishes. Defaults to
	// the host name and the process id.
	Name string
	// Replicas of the streams the worker creates when no planner did yet.
	// Defaults to 1.
	Replicas int
	// Observer learns of every execution performed, for metrics. Defaults
	// to none.
	Observer Observer
	// Tracer traces the attempts and gives the trace context sent on with
	// each action. Defaults to none: the action is sent a child of the
	// execution's trace context, and nothing is exported.
	Tracer Tracer
	// Now returns the current time, written in the results. Defaults to
	// time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// clock measures how long ago a pull request was sent, to tell a stale
	// delivery (see fresh); unlike Now it is never faked by the tests of
	// other packages. Defaults to time.Now, whose readings carry the
	// monotonic clock.
	clock func() time.Time
}

// Observer learns what the worker does. Its methods are called from many
// goroutines at once.
type Observer interface {
	// Held is called with 1 when the worker starts holding an execution
	// received ahead of its due time, and with -1 when it stops.
	Held(delta int)
	// KeptBack is called with 1 when the result of an action performed
	// starts waiting for executions due now to be sent, and with -1 when
	// it stops waiting (see report).
	KeptBack(delta int)
	// Started is called when the worker starts on an execution.
	Started()
	// Finished is called when it is done with it: r is the result stored,
	// nil when the execution was handed back or its result could not be
	// stored (it is delivered again).
	Finished(r *contracts.Result)
	// Skipped is called for a delivery the worker left alone, neither
	// performed nor acknowledged nor handed back; reason is SkipStale or
	// SkipDuplicate.
	Skipped(reason string)
}

// Why a delivery was skipped.
const (
	// SkipStale is a delivery whose ack wait may have run out before the
	// worker could start it: JetStream may have delivered it to another
	// worker already.
	SkipStale = "stale"
	// SkipDuplicate is a second delivery of an attempt this worker is
	// performing already.
	SkipDuplicate = "duplicate"
)

// Tracer traces the attempts a worker performs.
type Tracer interface {
	// Perform starts the span of an attempt in the trace of parent (the
	// execution's traceparent header), and returns the trace context to
	// send on with the action and the function that ends the span with the
	// stored result (nil when the execution was handed back).
	Perform(parent string, exec contracts.Execution) (traceParent string, end func(r *contracts.Result))
}

func (c Config) withDefaults() Config {
	c.Concurrency = cmp.Or(c.Concurrency, 128)
	c.Hold = max(cmp.Or(c.Hold, DefaultHold), 0)
	c.AckWait = cmp.Or(c.AckWait, 90*time.Second)
	c.MaxDeliveries = cmp.Or(c.MaxDeliveries, 5)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, 30*time.Second)
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = cmp.Or(host, "worker") + "-" + strconv.Itoa(os.Getpid())
	}
	c.Replicas = max(c.Replicas, 1)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Sender == nil {
		errs = append(errs, errors.New("worker: Config.Sender is required"))
	}
	if c.Sealer == nil {
		errs = append(errs, errors.New("worker: Config.Sealer is required: the workers open the secrets the planners sealed"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("worker: Config.Concurrency is %d; it must be at least 1", c.Concurrency))
	}
	if c.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("worker: Config.AckWait is %s; it must be at least 1s", c.AckWait))
	}
	if c.MaxDeliveries < 1 {
		errs = append(errs, fmt.Errorf("worker: Config.MaxDeliveries is %d; it must be at least 1", c.MaxDeliveries))
	}
	return errors.Join(errs...)
}

// Worker performs executions from the EXEC stream's shared durable
// consumer. Any number of workers, in any number of processes, share it;
// each execution goes to one of them at a time.
type Worker struct {
	js  jetstream.JetStream
	cfg Config

	// slots holds one token per execution this worker holds: asked for in
	// a pull request, or being performed. It never holds more than
	// Concurrency, so that nothing delivered waits for a free slot.
	slots chan struct{}
	// holds holds one token per execution held until it is due without a
	// slot, kept while it is performed; at most Hold. Held executions that
	// come due are performed without taking slots back: the slots stay
	// free for the pull loop to fetch the rest of a burst behind them
	// (the performers bound the calls made at once to Concurrency).
	holds chan struct{}
	// due counts the executions due now that were not sent yet: those
	// held until their due time that came due, and those delivered due
	// with more waiting behind them (see hold); reports holds a token for
	// each result that waits for them without its slot or hold token (see
	// report).
	due     gate
	reports chan struct{}
	// behind counts in due, while set, the executions JetStream said wait
	// in the stream behind one delivered due already (see backlog).
	behind backlog
	// peers is what the other workers said about their executions due.
	peers    peers
	flights  flights
	inFlight sync.WaitGroup
	// performers decode and open the executions and make their actions'
	// calls.
	performers *performers
	// next is the subject of the consumer's pull requests.
	next string
	// stopPull ends the pull loop; pulled is closed once it has ended.
	stopPull context.CancelFunc
	pulled   chan struct{}
	// work is the context of the actions and of the result publishing;
	// Stop cancels it at the drain timeout.
	work   context.Context
	cancel context.CancelFunc
	// halt is closed when Stop has ended the pull loop: executions held
	// until they are due, and those received since, are handed back at
	// once.
	halt     chan struct{}
	stopOnce sync.Once
}

// Start creates the execution consumer (and the EXEC and RESULTS streams
// when no planner created them yet) and starts performing executions.
func Start(ctx context.Context, js jetstream.JetStream, cfg Config) (*Worker, error) {
	w, _, err := open(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	var pullCtx context.Context
	pullCtx, w.stopPull = context.WithCancel(context.WithoutCancel(ctx))
	w.pulled = make(chan struct{})
	if err := w.peers.listen(js.Conn(), w.cfg.Name, w.cfg.clock); err != nil {
		return nil, fmt.Errorf("listening to the other workers: %w", err)
	}
	w.due.changed = w.peers.announce
	go w.pull(pullCtx)
	w.cfg.Logger.Info("worker started", slog.String("worker", w.cfg.Name), slog.Int("concurrency", w.cfg.Concurrency))
	return w, nil
}

// open returns a worker that does not pull yet, and the consumer to pull
// from.
func open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Worker, jetstream.Consumer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	exec, err := streams.ExecStream(ctx, js, cfg.Replicas)
	if err != nil {
		return nil, nil, err
	}
	if _, err := streams.EnsureResults(ctx, js, cfg.Replicas); err != nil {
		return nil, nil, err
	}
	cons, err := streams.EnsureConsumer(ctx, exec, jetstream.ConsumerConfig{
		Durable:       contracts.WorkersConsumer,
		Description:   "Executions for the workers, shared by all of them",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1, // the worker gives up after MaxDeliveries, with a result
		MaxAckPending: 100_000,
		FilterSubject: contracts.ExecSubjectPrefix + ">",
	})
	if err != nil {
		return nil, nil, fmt.Errorf("creating the %s consumer: %w", contracts.WorkersConsumer, err)
	}
	info := cons.CachedInfo()
	w := &Worker{js: js, cfg: cfg, next: nextSubject(js, info.Stream, info.Name), slots: make(chan struct{}, cfg.Concurrency), holds: make(chan struct{}, cfg.Hold),
		reports: make(chan struct{}, cfg.Concurrency+cfg.Hold),
		flights: flights{byID: map[string]*flight{}}, performers: newPerformers(cfg.Concurrency), stopPull: func() {}, pulled: make(chan struct{}), halt: make(chan struct{})}
	w.behind.g = &w.due
	close(w.pulled) // until Start starts pulling
	w.work, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return w, cons, nil
}

// receive starts on a message delivered in answer to a pull request sent
// at pulledAt. The caller holds a slot for it, which is given back once
// the worker is done with the message.
func (w *Worker) receive(m message, pulledAt time.Time) {
	w.inFlight.Add(1)
	go func() {
		d := &delivery{Msg: m, pulledAt: pulledAt, token: w.slots, renewed: pulledAt}
		defer func() {
			d.release()
			w.inFlight.Done()
		}()
		w.handle(d)
	}()
}

// delivery is a message delivered to this worker.
type delivery struct {
	Msg message
	// pulledAt is when the pull request it answers was sent.
	pulledAt time.Time
	// token is the channel of the token it holds: a slot (Worker.slots),
	// a hold token once held until due (Worker.holds), or none while its
	// result waits with a report token (see report).
	token chan struct{}
	// due is whether it counts among the executions due now that have not
	// been sent yet (Worker.due): held until its due time, or delivered
	// due with more behind it (see hold).
	due bool

	// renewed is when its ack wait last started, as far as the worker
	// knows: pulledAt, or when it last told JetStream it is in progress.
	mu      sync.Mutex
	renewed time.Time
}

// release gives back the slot or hold token d holds, if any.
func (d *delivery) release() {
	if d.token != nil {
		<-d.token
		d.token = nil
	}
}

// renewedAt returns when d's ack wait last started.
func (d *delivery) renewedAt() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.renewed
}

// renew tells JetStream that d is in progress, restarting its ack wait,
// unless that wait may have run out already (see fresh): then another
// worker may hold a copy, whose ack wait it would restart instead. It
// reports whether it told JetStream.
func (w *Worker) renew(d *delivery) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !w.fresh(d.renewed) {
		return false
	}
	_ = d.Msg.InProgress()
	d.renewed = w.cfg.clock()
	return true
}

// handle performs a delivered execution unless the delivery is stale or a
// copy of an attempt in flight here. Once the worker is stopping, what it
// still receives is handed back at once.
func (w *Worker) handle(d *delivery) {
	m := d.Msg
	log := w.cfg.Logger
	// Decoded and opened before the hold, so that less is left to do
	// when it is due, and on a performer, whose stack has grown already:
	// the goroutine that holds the delivery keeps a small one.
	var (
		exec            contracts.Execution
		unreadable, bad error
		action          *contracts.JobAction
		openErr         error
	)
	w.performers.decode(func() {
		if exec, unreadable = contracts.DecodeExecution(m.Data()); unreadable != nil {
			return
		}
		if bad = exec.Validate(); bad != nil {
			return
		}
		action, openErr = w.open(exec)
	})
	if unreadable != nil {
		log.Error("dropping an unreadable execution", slog.String("subject", m.Subject()), slog.String("error", unreadable.Error()))
		_ = m.TermWithReason("unreadable execution")
		return
	}
	if bad != nil {
		log.Error("dropping an invalid execution", slog.String("subject", m.Subject()), slog.String("error", bad.Error()))
		_ = m.TermWithReason("invalid execution")
		return
	}
	if w.stale(d, exec) {
		return
	}
	f, first := w.flights.enter(exec.OccurrenceID, m)
	if !first {
		log.Warn("skipping a second delivery of an attempt in flight in this worker", slog.String("occurrence", exec.OccurrenceKey))
		w.skipped(SkipDuplicate)
		return
	}
	var stored *contracts.Result
	defer func() { w.flights.leave(exec.OccurrenceID, f, stored != nil) }()
	if w.halted() {
		_ = m.Nak()
		return
	}
	defer w.progress(d)()
	defer w.sent(d)
	if !w.hold(d, exec.NotBefore) {
		_ = m.Nak() // stopping: another worker holds it until it is due
		return
	}
	// Held, the worker may have been paused past the ack wait: checked
	// again before it is performed.
	if w.stale(d, exec) {
		return
	}
	if w.cfg.Observer == nil {
		stored = w.perform(d, exec, action, openErr)
		return
	}
	w.cfg.Observer.Started()
	stored = w.perform(d, exec, action, openErr)
	w.cfg.Observer.Finished(stored)
}

// halted reports whether Stop has ended the pull loop: what the worker
// holds or receives now is handed back.
func (w *Worker) halted() bool {
	select {
	case <-w.halt:
		return true
	default:
		return false
	}
}

// stale reports, logs and counts a delivery whose ack wait may have run
// out since it last started (see fresh): another worker may have it. A
// stale delivery is neither performed nor acknowledged nor handed back: a
// Nak would have it delivered yet again while another worker, or this
// one, performs it.
func (w *Worker) stale(d *delivery, exec contracts.Execution) bool {
	renewed := d.renewedAt()
	if w.fresh(renewed) {
		return false
	}
	w.cfg.Logger.Warn("skipping an execution whose ack wait may have run out: another worker may have it",
		slog.String("occurrence", exec.OccurrenceKey), slog.Duration("since_renewed", w.cfg.clock().Sub(renewed)),
		slog.Duration("ack_wait", w.cfg.AckWait))
	w.skipped(SkipStale)
	return true
}

func (w *Worker) skipped(reason string) {
	if w.cfg.Observer != nil {
		w.cfg.Observer.Skipped(reason)
	}
}

// hold returns once the clock reaches at, the execution's due time, so
// that it is never performed earlier: at once for one due already,
// counted among those due now when more wait behind it in the stream. It
// gives the delivery's slot up for a hold token while it waits, when one
// is free, and keeps that token while the execution is performed. It
// returns false when the worker stops meanwhile.
func (w *Worker) hold(d *delivery, at time.Time) bool {
	wait := at.Sub(w.cfg.Now())
	if wait <= 0 {
		// Due already, with more waiting behind it, or the last of
		// such: a burst larger than the workers could hold. It counts
		// among those due now, as one held would, and so do those
		// behind it until they come.
		d.due = w.behind.saw(pending(d.Msg))
		return true
	}
	select {
	case w.holds <- struct{}{}:
		d.release()
		d.token = w.holds
	default: // every hold token is taken: wait in the slot
	}
	if w.cfg.Observer != nil {
		w.cfg.Observer.Held(1)
		defer w.cfg.Observer.Held(-1)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-w.halt:
			return false
		}
		// The timer runs on the monotonic clock: wait on when the wall
		// clock, read by Now, is behind it.
		if wait = at.Sub(w.cfg.Now()); wait <= 0 {
			break
		}
		t.Reset(wait)
	}
	d.due = true
	w.due.enter()
	return true
}

// pending returns how many executions wait in the stream behind m, as
// JetStream said when it delivered m.
func pending(m message) uint64 {
	meta, err := m.Metadata()
	if err != nil {
		return 0
	}
	return meta.NumPending
}

// backlogExpiry is how long a worker counts the executions behind one
// delivered due already among those due now without receiving another:
// another worker may have taken the rest.
const backlogExpiry = 200 * time.Millisecond

// backlog counts, in the executions due now (a gate), the rest of a burst
// larger than the workers could hold, from the first of it delivered due
// already with more behind it until one comes with none behind it, or for
// backlogExpiry after the last. Between two of them, and between the last
// one held and the first of the rest, none may be in hand: without it the
// gate would open there, and the results kept back would all go while the
// rest of the burst is still to be fetched and sent.
type backlog struct {
	g     *gate
	mu    sync.Mutex
	set   bool
	until time.Time
	timer *time.Timer
}

// saw notes an execution delivered due already with n more behind it in
// the stream, and reports whether it counts among those due now (entered
// in g for it): with more behind it, or as the last of a backlog.
func (b *backlog) saw(n uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n == 0 {
		if !b.set {
			return false
		}
		b.g.enter() // before the mark leaves, so that g stays shut
		b.clearLocked()
		return true
	}
	b.g.enter()
	b.until = time.Now().Add(backlogExpiry)
	if b.set {
		return true
	}
	b.set = true
	b.g.enter()
	if b.timer == nil {
		b.timer = time.AfterFunc(backlogExpiry, b.expire)
	} else {
		b.timer.Reset(backlogExpiry)
	}
	return true
}

// expire clears the mark once backlogExpiry passed since the last
// execution with more behind it.
func (b *backlog) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.set {
		return
	}
	if left := time.Until(b.until); left > 0 {
		b.timer.Reset(left)
		return
	}
	b.clearLocked()
}

// clear clears the mark.
func (b *backlog) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clearLocked()
}

func (b *backlog) clearLocked() {
	if !b.set {
		return
	}
	b.set = false
	b.timer.Stop()
	b.g.leave()
}

// sent notes that the execution of d was sent, or will not be: it no
// longer counts among those due now.
func (w *Worker) sent(d *delivery) {
	if d.due {
		d.due = false
		w.due.leave()
	}
}

// maxReportDelay bounds how long a result waits for the executions due
// now to be sent before it is published.
const maxReportDelay = time.Second

// report lets the executions due now go first (see Worker.due): while any
// of them waits to be sent, on this worker or on another (see peers), the
// result of an execution already performed waits too (at most
// maxReportDelay), without its slot or hold token, so that the cores do
// the calls due now before the work each result causes. It returns the
// function that ends the wait's hold on a report token. When no token is
// free, or nothing due waits, the result goes at once.
func (w *Worker) report(d *delivery) (done func()) {
	if w.due.opened() == nil && w.peers.waiting() == nil {
		return func() {}
	}
	select {
	case w.reports <- struct{}{}:
	default:
		return func() {}
	}
	d.release()
	if w.cfg.Observer != nil {
		w.cfg.Observer.KeptBack(1)
		defer w.cfg.Observer.KeptBack(-1)
	}
	t := time.NewTimer(maxReportDelay)
	defer t.Stop()
wait:
	for {
		own, peer := w.due.opened(), w.peers.waiting()
		if own == nil && peer == nil {
			break
		}
		select {
		case <-own:
		case <-peer:
		case <-t.C:
			break wait
		case <-w.halt:
			break wait
		}
	}
	return func() { <-w.reports }
}

// gate counts things in progress and tells when none is; changed, when
// set, is told when the count leaves or reaches 0, in order.
type gate struct {
	mu      sync.Mutex
	n       int
	none    chan struct{} // closed when n falls to 0
	changed func(some bool)
}

func (g *gate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.none = make(chan struct{})
		if g.changed != nil {
			g.changed(true)
		}
	}
	g.n++
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		close(g.none)
		if g.changed != nil {
			g.changed(false)
		}
	}
}

// opened returns a channel closed once nothing is in progress, or nil
// when nothing is now.
func (g *gate) opened() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		return nil
	}
	return g.none
}

// progress tells JetStream that d is being worked on (renew), every third
// of AckWait from a third of AckWait after the pull request that fetched
// it, until the returned function is called or its ack wait may have run
// out meanwhile (the worker was paused). No copy of d is delivered
// elsewhere before pulledAt + AckWait (see fresh), so an action that ends
// within the first third, as nearly all do, costs no progress message; one
// started later than that reports at once.
func (w *Worker) progress(d *delivery) (stop func()) {
	every := w.cfg.AckWait / 3
	first := every - w.cfg.clock().Sub(d.pulledAt)
	if first <= 0 {
		w.renew(d)
		first = every
	}
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock() // t is set before its function may read it
	t = time.AfterFunc(first, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped || !w.renew(d) {
			return
		}
		t.Reset(every)
	})
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// Stop stops fetching executions, hands back those fetched but not started,
// lets the actions in flight finish and publish their results for up to
// DrainTimeout (or until ctx ends), then cancels the rest and hands their
// executions back. It returns soon after the drain timeout, whether or not
// NATS answers. It is idempotent.
func (w *Worker) Stop(ctx context.Context) {
	w.stopOnce.Do(func() {
		// The pull loop ends first, its last request's subscription with
		// it, so that nothing handed back is delivered to that request
		// (see fetch).
		w.stopPull()
		<-w.pulled
		close(w.halt)
		finished := make(chan struct{})
		go func() {
			w.inFlight.Wait()
			close(finished)
		}()
		timer := time.NewTimer(w.cfg.DrainTimeout)
		defer timer.Stop()
		select {
		case <-finished:
		case <-timer.C:
		case <-ctx.Done():
		}
		w.cancel()
		<-finished
		w.behind.clear()
		w.performers.stop()
		w.peers.stop()
		w.cfg.Logger.Info("worker stopped", slog.String("worker", w.cfg.Name))
	})
}

// perform runs one execution, its action as opened by open (err when it
// did not open), and acknowledges it once its result is stored, and
// returns that result. One whose action was cancelled by Stop, or whose
// result could not be stored, is handed back.
func (w *Worker) perform(d *delivery, exec contracts.Execution, action *contracts.JobAction, err error) *contracts.Result {
	m := d.Msg
	log := w.cfg.Logger
	delivered := uint64(1)
	if meta, err := m.Metadata(); err == nil {
		delivered = meta.NumDelivered
	}
	parent := ""
	if h := m.Headers(); h != nil {
		parent = h.Get(contracts.TraceParentHeader)
	}
	var (
		traceParent string
		stored      *contracts.Result
	)
	if w.cfg.Tracer != nil {
		var end func(*contracts.Result)
		traceParent, end = w.cfg.Tracer.Perform(parent, exec)
		defer func() { end(stored) }()
	} else {
		traceParent = contracts.ChildTraceParent(parent, exec.OccurrenceID, spanID())
	}

	start := w.cfg.Now()
	var (
		outcome    actions.Outcome
		actionType contracts.ActionType
	)
	switch {
	case delivered > uint64(w.cfg.MaxDeliveries):
		outcome = actions.Failure(fmt.Sprintf("The execution was delivered %d times without completing; it is not performed again.", delivered), nil)
	case err != nil:
		outcome = w.refuse(exec, err)
	default:
		actionType = action.Type
		var sent bool
		if outcome, sent = w.send(d, exec, action, traceParent); !sent {
			return nil // stale by the time a performer took it
		}
		if w.work.Err() != nil {
			// Stopped while the action ran: another worker performs it.
			_ = m.Nak()
			return nil
		}
	}
	result := exec.Result(actionType)
	result.StartTime, result.EndTime = start.UTC(), w.cfg.Now().UTC()
	result.Outcome = contracts.Failed
	if outcome.Succeeded {
		result.Outcome = contracts.Succeeded
	}
	result.StatusCode, result.Error, result.Message, result.Response = outcome.StatusCode, outcome.Error, outcome.Message, outcome.Response
	result.Worker = w.cfg.Name
	w.sent(d)
	defer w.report(d)()
	if err := w.publish(w.work, result); err != nil {
		log.Error("publishing a result", slog.String("occurrence", exec.OccurrenceKey), slog.String("error", err.Error()))
		if w.work.Err() != nil {
			_ = m.Nak() // stopped: hand it back at once
		} else {
			_ = m.NakWithDelay(time.Second)
		}
		return nil
	}
	_ = m.Ack()
	stored = &result
	return stored
}

// open decodes the execution's action and opens its secrets.
func (w *Worker) open(exec contracts.Execution) (*contracts.JobAction, error) {
	var sealed contracts.JobAction
	if err := json.Unmarshal(exec.Action, &sealed); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	action, err := w.cfg.Sealer.OpenAction(&sealed, exec.OccurrenceID)
	if err != nil {
		return nil, fmt.Errorf("%w (do the workers and the planners share one encryption key?)", err)
	}
	return action, nil
}

// refuse returns the outcome of an execution whose action did not open,
// and logs why: as a warning naming the job and the occurrence when a
// sealed secret does not open for where the action now sends it (the
// execution was changed after the planner sealed it) or was sealed in
// format v1, which binds it to no destination; as an error otherwise.
// Neither names a secret.
func (w *Worker) refuse(exec contracts.Execution, err error) actions.Outcome {
	log := w.cfg.Logger.With(slog.String("job", exec.Job.Key()), slog.String("occurrence", exec.OccurrenceKey))
	var unbound *seal.DestinationError
	switch {
	case errors.As(err, &unbound):
		log.Warn("refusing an execution: a sealed secret is not bound to where its action sends it",
			slog.String("secret", unbound.Path), slog.String("destination", unbound.Destination.String()))
		return actions.Failure(fmt.Sprintf("The action was not performed: the sealed %s is not bound to this destination (%s): "+
			"the execution was changed after it was sealed, or the workers and the planners do not share one encryption key.",
			unbound.Secret, unbound.Destination), nil)
	case errors.Is(err, seal.ErrFormatV1):
		log.Warn("refusing an execution sealed by an earlier planner, whose secrets are not bound to where they are sent", slog.String("error", err.Error()))
		return actions.Failure("The action was not performed: its secrets were sealed by an earlier planner in format v1, "+
			"which does not bind them to where they are sent; upgrade every planner.", nil)
	}
	log.Error("opening an execution's action", slog.String("error", err.Error()))
	return actions.Failure("The action could not be read: "+err.Error(), nil)
}

// send performs the action within the execution's deadline, on one of
// the performers, unless the delivery is stale by the time one takes it
// (sent false): the check is made as late as the worker can, since a
// worker paused between it and the call would call after another worker
// had the execution.
func (w *Worker) send(d *delivery, exec contracts.Execution, action *contracts.JobAction, traceParent string) (outcome actions.Outcome, sent bool) {
	ctx, cancel := context.WithTimeout(w.work, exec.Timeout.Duration())
	defer cancel()
	attempt := actions.Attempt{
		ID: exec.OccurrenceID, Job: exec.Job, ActionName: exec.ActionName, Expected: exec.ExpectedTime,
		Number: exec.Attempt, TraceParent: traceParent,
	}
	w.performers.run(func() {
		if w.stale(d, exec) {
			return
		}
		sent = true
		outcome = w.cfg.Sender.Send(ctx, action, attempt)
	})
	return outcome, sent
}

// spanID returns a random span id, 16 hex digits.
func spanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
