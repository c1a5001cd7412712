package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/streams"
)

// Config configures the history consumer.
type Config struct {
	// Retention of the HISTORY stream: entries kept per job, their age, the
	// stream's replicas. Defaults to 1,000 entries, 60 days, 1 replica.
	Retention streams.HistoryConfig
	// Shards is how many jobs' results are stored at the same time; the
	// results of one job are stored one after the other. Defaults to 16.
	Shards int
	// CacheSize is how many jobs' newest entries each shard remembers, to
	// spare a read before each write. Defaults to 4096.
	CacheSize int
	// Stored is called with each entry stored, for metrics; from many
	// goroutines at once. Defaults to none.
	Stored func(e contracts.HistoryEntry)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Shards = cmp.Or(c.Shards, 16)
	c.CacheSize = cmp.Or(c.CacheSize, 4096)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	if c.Shards < 1 || c.CacheSize < 1 {
		return fmt.Errorf("history: Config.Shards (%d) and Config.CacheSize (%d) must be at least 1", c.Shards, c.CacheSize)
	}
	return nil
}

// Consumer stores every result event as a history entry. Any number of
// consumers, in any number of processes, may share the durable consumer.
type Consumer struct {
	js      jetstream.JetStream
	history jetstream.Stream
	cfg     Config

	consume jetstream.ConsumeContext
	shards  []chan jetstream.Msg
	done    sync.WaitGroup
	stop    sync.Once
	cancel  context.CancelFunc
}

// Start creates the HISTORY stream (and RESULTS with its consumers, when no
// other role did yet) and starts storing results.
func Start(ctx context.Context, js jetstream.JetStream, cfg Config) (*Consumer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	history, err := streams.EnsureHistory(ctx, js, cfg.Retention)
	if err != nil {
		return nil, err
	}
	results, err := streams.EnsureResults(ctx, js, cfg.Retention.Replicas)
	if err != nil {
		return nil, err
	}
	cons, err := streams.EnsureConsumer(ctx, results, streams.ResultsConsumerConfig(contracts.HistoryConsumer))
	if err != nil {
		return nil, fmt.Errorf("creating the %s consumer: %w", contracts.HistoryConsumer, err)
	}
	c := &Consumer{js: js, history: history, cfg: cfg, shards: make([]chan jetstream.Msg, cfg.Shards)}
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	for i := range c.shards {
		c.shards[i] = make(chan jetstream.Msg, 64)
		s := &shard{c: c, last: map[string]newest{}}
		c.done.Add(1)
		go func() {
			defer c.done.Done()
			for m := range c.shards[i] {
				s.store(work, m)
			}
		}()
	}
	c.consume, err = cons.Consume(c.route, jetstream.PullMaxMessages(1000),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrNoHeartbeat) {
				cfg.Logger.Warn("consuming results for history", slog.String("error", err.Error()))
			}
		}))
	if err != nil {
		c.closeShards()
		return nil, fmt.Errorf("consuming results: %w", err)
	}
	return c, nil
}

// route hands a result to the shard of its job, so that one job's entries
// are written in order.
func (c *Consumer) route(m jetstream.Msg) {
	h := fnv.New32a()
	h.Write([]byte(m.Subject()))
	c.shards[h.Sum32()%uint32(len(c.shards))] <- m
}

// Stop stops fetching results, stores those already fetched and returns.
// It is idempotent.
func (c *Consumer) Stop() {
	c.stop.Do(func() {
		c.consume.Drain()
		<-c.consume.Closed()
		c.closeShards()
	})
}

func (c *Consumer) closeShards() {
	for _, ch := range c.shards {
		close(ch)
	}
	c.done.Wait()
	c.cancel()
}

// newest is what a shard remembers of a job's newest entry.
type newest struct {
	seq   uint64 // its stream sequence; 0 when the job has no entry
	id    string // its occurrence id
	tally contracts.Tally
}

// shard stores the results of its jobs one at a time.
type shard struct {
	c    *Consumer
	last map[string]newest // by subject
}

// writeAttempts bounds how often a shard computes an entry again because
// another consumer wrote one for the same job in between.
const writeAttempts = 10

// store writes the entry of one result event and acknowledges it. A result
// whose entry is stored already (the newest entry has its id, or the
// stream's duplicate window drops it) is acknowledged without a write.
func (s *shard) store(ctx context.Context, m jetstream.Msg) {
	log := s.c.cfg.Logger
	r, err := contracts.ParseResultEvent(m.Data())
	if err != nil {
		log.Error("dropping an unreadable result event", slog.String("subject", m.Subject()), slog.String("error", err.Error()))
		_ = m.Term()
		return
	}
	subject := contracts.HistorySubjectPrefix + r.Job.Tokens()
	entry := r.HistoryEntry()
	data, err := json.Marshal(entry)
	if err != nil {
		log.Error("encoding a history entry", slog.String("job", r.Job.Key()), slog.String("error", err.Error()))
		_ = m.Term()
		return
	}
	// The first attempt of a job's first occurrence is most likely its
	// first entry: it is written without reading the stream first, and the
	// expected last sequence (none) has the stream refuse it otherwise.
	guess := firstEntry(r)
	for range writeAttempts {
		prev, err := s.newest(ctx, subject, guess)
		if err != nil {
			break
		}
		guess = false
		if prev.id == r.OccurrenceID {
			_ = m.Ack()
			return
		}
		tally := prev.tally.Add(r)
		t, _ := json.Marshal(tally)
		msg := nats.NewMsg(subject)
		msg.Data = data
		msg.Header.Set(contracts.TallyHeader, string(t))
		ack, err := s.c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(r.OccurrenceID), jetstream.WithExpectLastSequencePerSubject(prev.seq))
		switch {
		case isWrongLastSequence(err):
			delete(s.last, subject) // another consumer wrote since: read again
			continue
		case err != nil:
			log.Warn("storing a history entry", slog.String("job", r.Job.Key()), slog.String("error", err.Error()))
		case ack.Duplicate:
			delete(s.last, subject)
			_ = m.Ack()
			return
		default:
			s.remember(subject, newest{seq: ack.Sequence, id: r.OccurrenceID, tally: tally})
			_ = m.Ack()
			if s.c.cfg.Stored != nil {
				s.c.cfg.Stored(entry)
			}
			return
		}
		break
	}
	_ = m.NakWithDelay(time.Second)
}

// firstEntry reports whether r is the first attempt of the main action of
// a job's first occurrence, which the job's history most likely does not
// hold an entry before.
func firstEntry(r contracts.Result) bool {
	return r.Occurrence == 1 && r.Attempt == 0 && r.ActionName == contracts.MainAction
}

// newest returns the job's newest entry, from memory or the stream; with
// none set, one the shard does not remember is taken to be none.
func (s *shard) newest(ctx context.Context, subject string, none bool) (newest, error) {
	if n, ok := s.last[subject]; ok {
		return n, nil
	}
	if none {
		return newest{}, nil
	}
	msg, err := s.c.history.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return newest{}, nil
	}
	if err != nil {
		s.c.cfg.Logger.Warn("reading the newest history entry", slog.String("subject", subject), slog.String("error", err.Error()))
		return newest{}, err
	}
	n := newest{seq: msg.Sequence, id: msg.Header.Get(jetstream.MsgIDHeader)}
	_ = json.Unmarshal([]byte(msg.Header.Get(contracts.TallyHeader)), &n.tally)
	s.remember(subject, n)
	return n, nil
}

// remember keeps n as the subject's newest entry, forgetting every job
// when the memory is full.
func (s *shard) remember(subject string, n newest) {
	if _, ok := s.last[subject]; !ok && len(s.last) >= s.c.cfg.CacheSize {
		clear(s.last)
	}
	s.last[subject] = n
}

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}
