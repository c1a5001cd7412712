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
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/streams"
)

// Config configures a Worker.
type Config struct {
	// Sender performs the actions. Required.
	Sender actions.Sender
	// Sealer opens the secrets the planner sealed in the execution
	// messages; it must hold the planners' key. Required.
	Sealer *seal.Sealer
	// Concurrency is the most actions performed at the same time. Defaults
	// to 128.
	Concurrency int
	// AckWait is how long an execution may stay unacknowledged before
	// JetStream delivers it again; longer than the action deadline, and
	// extended while an action runs. Every worker must use the same.
	// Defaults to 90s.
	AckWait time.Duration
	// MaxDeliveries is how often an execution may be delivered: one
	// delivered more often (it crashed or stalled the workers that took it)
	// is reported failed without being performed again. Defaults to 5.
	MaxDeliveries int
	// DrainTimeout is how long Stop lets the actions in flight finish
	// before it cancels them and hands their executions back. Defaults to
	// 30s.
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
	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Observer learns what the worker does. Its methods are called from many
// goroutines at once.
type Observer interface {
	// Started is called when the worker starts on an execution.
	Started()
	// Finished is called when it is done with it: r is the result stored,
	// nil when the execution was handed back or its result could not be
	// stored (it is delivered again).
	Finished(r *contracts.Result)
}

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

	consume  jetstream.ConsumeContext
	slots    chan struct{}
	inFlight sync.WaitGroup
	// work is the context of the actions; Stop cancels it after the drain
	// timeout.
	work     context.Context
	cancel   context.CancelFunc
	stopping atomic.Bool
	stopOnce sync.Once
}

// Start creates the execution consumer (and the EXEC and RESULTS streams
// when no planner created them yet) and starts performing executions.
func Start(ctx context.Context, js jetstream.JetStream, cfg Config) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	exec, err := streams.ExecStream(ctx, js, cfg.Replicas)
	if err != nil {
		return nil, err
	}
	if _, err := streams.EnsureResults(ctx, js, cfg.Replicas); err != nil {
		return nil, err
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
		return nil, fmt.Errorf("creating the %s consumer: %w", contracts.WorkersConsumer, err)
	}
	w := &Worker{js: js, cfg: cfg, slots: make(chan struct{}, cfg.Concurrency)}
	w.work, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	w.consume, err = cons.Consume(w.take, jetstream.PullMaxMessages(cfg.Concurrency),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrNoHeartbeat) {
				cfg.Logger.Warn("consuming executions", slog.String("error", err.Error()))
			}
		}))
	if err != nil {
		w.cancel()
		return nil, fmt.Errorf("consuming executions: %w", err)
	}
	cfg.Logger.Info("worker started", slog.String("worker", cfg.Name), slog.Int("concurrency", cfg.Concurrency))
	return w, nil
}

// take starts performing an execution as soon as a slot is free. Once the
// worker is stopping, what it still receives is handed back at once.
func (w *Worker) take(m jetstream.Msg) {
	if w.stopping.Load() {
		_ = m.Nak()
		return
	}
	w.slots <- struct{}{}
	w.inFlight.Add(1)
	go func() {
		defer func() {
			<-w.slots
			w.inFlight.Done()
		}()
		if w.cfg.Observer == nil {
			w.perform(m)
			return
		}
		w.cfg.Observer.Started()
		w.cfg.Observer.Finished(w.perform(m))
	}()
}

// Stop stops fetching executions, hands back those fetched but not started,
// lets the actions in flight finish for up to DrainTimeout (or until ctx
// ends), then cancels the rest and hands their executions back. It is
// idempotent.
func (w *Worker) Stop(ctx context.Context) {
	w.stopOnce.Do(func() {
		w.stopping.Store(true)
		w.consume.Drain()
		finished := make(chan struct{})
		go func() {
			<-w.consume.Closed()
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
		w.cfg.Logger.Info("worker stopped", slog.String("worker", w.cfg.Name))
	})
}

// perform runs one execution and acknowledges it once its result is
// stored, and returns that result. An execution that cannot be read is
// terminated; one whose action was cancelled by Stop is handed back.
func (w *Worker) perform(m jetstream.Msg) *contracts.Result {
	log := w.cfg.Logger
	var exec contracts.Execution
	if err := json.Unmarshal(m.Data(), &exec); err != nil {
		log.Error("dropping an unreadable execution", slog.String("subject", m.Subject()), slog.String("error", err.Error()))
		_ = m.TermWithReason("unreadable execution")
		return nil
	}
	if err := exec.Validate(); err != nil {
		log.Error("dropping an invalid execution", slog.String("subject", m.Subject()), slog.String("error", err.Error()))
		_ = m.TermWithReason("invalid execution")
		return nil
	}
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
	action, err := w.open(exec)
	switch {
	case delivered > uint64(w.cfg.MaxDeliveries):
		outcome = actions.Failure(fmt.Sprintf("The execution was delivered %d times without completing; it is not performed again.", delivered), nil)
	case err != nil:
		log.Error("opening an execution's action", slog.String("occurrence", exec.OccurrenceKey), slog.String("error", err.Error()))
		outcome = actions.Failure("The action could not be read: "+err.Error(), nil)
	default:
		actionType = action.Type
		outcome = w.send(m, exec, action, traceParent)
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
	if err := w.publish(result); err != nil {
		log.Error("publishing a result", slog.String("occurrence", exec.OccurrenceKey), slog.String("error", err.Error()))
		_ = m.NakWithDelay(time.Second)
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

// send performs the action within the execution's deadline, telling
// JetStream the execution is in progress while it runs.
func (w *Worker) send(m jetstream.Msg, exec contracts.Execution, action *contracts.JobAction, traceParent string) actions.Outcome {
	ctx, cancel := context.WithTimeout(w.work, exec.Timeout.Duration())
	defer cancel()
	go func() {
		t := time.NewTicker(w.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	return w.cfg.Sender.Send(ctx, action, actions.Attempt{
		ID: exec.OccurrenceID, Job: exec.Job, ActionName: exec.ActionName, Expected: exec.ExpectedTime,
		Number: exec.Attempt, TraceParent: traceParent,
	})
}

// publishAttempts bounds how often publishing a result is tried before the
// execution is handed back.
const publishAttempts = 5

// publish stores the result event on RESULTS, its id the attempt's
// occurrence id, so that a result published twice is stored once.
func (w *Worker) publish(r contracts.Result) error {
	data, err := json.Marshal(r.Event())
	if err != nil {
		return err
	}
	msg := nats.NewMsg(contracts.ResultSubjectPrefix + r.Job.Tokens())
	msg.Data = data
	var errs []error
	for i := range publishAttempts {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := w.js.PublishMsg(ctx, msg, jetstream.WithMsgID(r.OccurrenceID))
		cancel()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		time.Sleep(time.Duration(i+1) * 100 * time.Millisecond) // back off before trying again
	}
	return errors.Join(errs...)
}

// spanID returns a random span id, 16 hex digits.
func spanID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
