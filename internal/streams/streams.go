// Package streams defines the JetStream streams and durable consumers the
// roles share (EXEC, RESULTS, HISTORY), so that every role that starts
// first creates them the same way, and how a role connects and waits at
// start-up for a cluster that is not answering yet: every Ensure function
// retries with backoff (see Retry) until the cluster answers or its
// context ends.
package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
)

// Retention of the streams.
const (
	// ResultsMaxAge bounds how long a result event waits for the planner
	// and history consumers: a week, long enough to outlast an outage of
	// either.
	ResultsMaxAge = 7 * 24 * time.Hour
	// ResultsDuplicates is the RESULTS stream's duplicate window: a result
	// published twice (its execution redelivered after the worker stored it
	// but before it acked) within it is stored once.
	ResultsDuplicates = 10 * time.Minute
	// HistoryDuplicates is the HISTORY stream's duplicate window.
	HistoryDuplicates = 10 * time.Minute
	// DefaultHistoryMaxAge is how long history entries are kept: 60 days.
	DefaultHistoryMaxAge = 60 * 24 * time.Hour
	// DefaultHistoryMaxPerJob is how many history entries are kept per job.
	DefaultHistoryMaxPerJob = 1000
	// ConsumerAckWait is the AckWait of the RESULTS consumers: a result
	// whose processing was not acknowledged in time is delivered again.
	ConsumerAckWait = 30 * time.Second
)

// EnsureExec creates or updates the EXEC stream: a work queue whose
// duplicate window (longer than the planners' claim lease) drops an
// execution published twice. It waits for a cluster that is not answering
// yet (see Retry).
func EnsureExec(ctx context.Context, js jetstream.JetStream, replicas int, duplicates time.Duration) error {
	return Retry(ctx, "the "+contracts.ExecStream+" stream", func(ctx context.Context) error {
		return ensureExec(ctx, js, replicas, duplicates)
	})
}

func ensureExec(ctx context.Context, js jetstream.JetStream, replicas int, duplicates time.Duration) error {
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        contracts.ExecStream,
		Description: "Executions due: one message per attempt, consumed by the workers",
		Subjects:    []string{contracts.ExecSubjectPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
		Duplicates:  duplicates,
	})
	if err != nil {
		return fmt.Errorf("creating the %s stream: %w", contracts.ExecStream, err)
	}
	return nil
}

// DefaultExecDuplicates is the EXEC stream's duplicate window when a
// worker creates the stream before any planner did; the first planner sets
// the window its claim lease needs.
const DefaultExecDuplicates = 2 * time.Minute

// ExecStream returns the EXEC stream, creating it with
// DefaultExecDuplicates when it does not exist; an existing stream is left
// as the planners configured it. It waits for a cluster that is not
// answering yet (see Retry).
func ExecStream(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.Stream, error) {
	var s jetstream.Stream
	err := Retry(ctx, "the "+contracts.ExecStream+" stream", func(ctx context.Context) error {
		var err error
		s, err = js.Stream(ctx, contracts.ExecStream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			if err := ensureExec(ctx, js, replicas, DefaultExecDuplicates); err != nil {
				return err
			}
			s, err = js.Stream(ctx, contracts.ExecStream)
		}
		if err != nil {
			return fmt.Errorf("opening the %s stream: %w", contracts.ExecStream, err)
		}
		return nil
	})
	return s, err
}

// EnsureResults creates or updates the RESULTS stream and makes sure its
// two durable consumers exist, so that no result published before the
// planner or the history consumer first started is lost: the stream keeps a
// result until both have acknowledged it (interest retention), at most
// ResultsMaxAge. Each role then sets its own consumer's configuration. It
// waits for a cluster that is not answering yet (see Retry).
func EnsureResults(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.Stream, error) {
	return Open(ctx, "the "+contracts.ResultsStream+" stream and its consumers", func(ctx context.Context) (jetstream.Stream, error) {
		return ensureResults(ctx, js, replicas)
	})
}

func ensureResults(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        contracts.ResultsStream,
		Description: "Result events (CloudEvents JSON), one per attempt",
		Subjects:    []string{contracts.ResultSubjectPrefix + ">"},
		Retention:   jetstream.InterestPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
		MaxAge:      ResultsMaxAge,
		Duplicates:  ResultsDuplicates,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the %s stream: %w", contracts.ResultsStream, err)
	}
	for _, name := range []string{contracts.PlannerConsumer, contracts.HistoryConsumer} {
		if _, err := s.Consumer(ctx, name); err == nil {
			continue
		} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("looking up the %s consumer: %w", name, err)
		}
		_, err := s.CreateConsumer(ctx, ResultsConsumerConfig(name))
		if err != nil && !errors.Is(err, jetstream.ErrConsumerExists) {
			return nil, fmt.Errorf("creating the %s consumer: %w", name, err)
		}
	}
	return s, nil
}

// ResultsConsumerConfig is the configuration of a durable consumer of
// RESULTS: explicit acks, redelivery after ConsumerAckWait, no limit on
// deliveries (a result is never dropped for being slow to process).
func ResultsConsumerConfig(name string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "Result events for the " + name + " role",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ConsumerAckWait,
		MaxAckPending: 20000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		FilterSubject: contracts.ResultSubjectPrefix + ">",
	}
}

// HistoryConfig sets the retention of the HISTORY stream.
type HistoryConfig struct {
	// MaxAge is how long entries are kept. Defaults to 60 days.
	MaxAge time.Duration
	// MaxPerJob is how many entries are kept per job. Defaults to 1000.
	MaxPerJob int64
	// Replicas of the stream. Defaults to 1.
	Replicas int
}

func (c HistoryConfig) withDefaults() HistoryConfig {
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultHistoryMaxAge
	}
	if c.MaxPerJob <= 0 {
		c.MaxPerJob = DefaultHistoryMaxPerJob
	}
	c.Replicas = max(c.Replicas, 1)
	return c
}

// EnsureHistory creates or updates the HISTORY stream: one subject per job,
// at most MaxPerJob entries each, none older than MaxAge. Direct gets are
// allowed, so any replica answers reads. It waits for a cluster that is
// not answering yet (see Retry).
func EnsureHistory(ctx context.Context, js jetstream.JetStream, cfg HistoryConfig) (jetstream.Stream, error) {
	cfg = cfg.withDefaults()
	return Open(ctx, "the "+contracts.HistoryStream+" stream", func(ctx context.Context) (jetstream.Stream, error) {
		return ensureHistory(ctx, js, cfg)
	})
}

func ensureHistory(ctx context.Context, js jetstream.JetStream, cfg HistoryConfig) (jetstream.Stream, error) {
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              contracts.HistoryStream,
		Description:       "Job history: one entry per attempt",
		Subjects:          []string{contracts.HistorySubjectPrefix + ">"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          cfg.Replicas,
		MaxAge:            cfg.MaxAge,
		MaxMsgsPerSubject: cfg.MaxPerJob,
		Duplicates:        HistoryDuplicates,
		AllowDirect:       true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the %s stream: %w", contracts.HistoryStream, err)
	}
	return s, nil
}

// EnsureConsumer creates or updates the durable consumer cfg of the
// stream s, waiting for a cluster that is not answering yet (see Retry).
func EnsureConsumer(ctx context.Context, s jetstream.Stream, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	return Open(ctx, "the "+cfg.Durable+" consumer of "+s.CachedInfo().Config.Name, func(ctx context.Context) (jetstream.Consumer, error) {
		return s.CreateOrUpdateConsumer(ctx, cfg)
	})
}
