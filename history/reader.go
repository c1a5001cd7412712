package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/transient"
)

// Reader reads the HISTORY stream. Until the history consumer created the
// stream, every job's history is empty.
//
// A read that meets a transient fault is read again, from the start,
// within a retry window: in a cluster the first fetch of a consumer just
// created can find no responders, before its subscription reached the
// server the reader is connected to, and a stream's leader can be in an
// election.
type Reader struct {
	js jetstream.JetStream
	// retryWindow bounds how long a read is retried; a context deadline
	// that comes sooner bounds it too.
	retryWindow time.Duration
}

// readRetryWindow is how long a read retries transient faults.
const readRetryWindow = 3 * time.Second

// The pause between two tries of a read doubles from firstBackoff to
// maxBackoff.
const (
	firstBackoff = 20 * time.Millisecond
	maxBackoff   = 400 * time.Millisecond
)

// NewReader returns a reader over js.
func NewReader(js jetstream.JetStream) *Reader { return &Reader{js: js, retryWindow: readRetryWindow} }

// retrying runs read until it succeeds, fails for a reason that does not
// pass, or the retry window (or ctx) ends, and returns its last error.
func (r *Reader) retrying(ctx context.Context, read func() error) error {
	end := time.Now().Add(r.retryWindow)
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	backoff := firstBackoff
	for {
		err := read()
		if err == nil || !transient.Is(err) || ctx.Err() != nil || time.Now().Add(backoff).After(end) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// maxJobKeyLength is the length of the longest KV key of a valid job
// reference.
var maxJobKeyLength = len(contracts.JobKeyOfTokens("")) + contracts.MaxJobTokensLength

// subjectOf returns the subject of the history of the job with the KV key.
func subjectOf(jobKey string) (string, error) {
	tokens, ok := contracts.JobTokensOfKey(jobKey)
	if !ok || len(jobKey) > maxJobKeyLength {
		return "", fmt.Errorf("%s is not a job's key", contracts.QuoteName(jobKey))
	}
	return contracts.HistorySubjectPrefix + tokens, nil
}

// stream returns the HISTORY stream, nil when it does not exist yet.
func (r *Reader) stream(ctx context.Context) (jetstream.Stream, error) {
	s, err := r.js.Stream(ctx, contracts.HistoryStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the %s stream: %w", contracts.HistoryStream, err)
	}
	return s, nil
}

// List returns the job's history entries, newest first, each with its ID.
// The names of ref must be valid (JobRef.Validate): they make the subject
// read.
func (r *Reader) List(ctx context.Context, ref contracts.JobRef) ([]contracts.HistoryEntry, error) {
	if err := ref.Validate(); err != nil {
		return nil, fmt.Errorf("reading the history of a job: %w", err)
	}
	var entries []contracts.HistoryEntry
	err := r.retrying(ctx, func() error {
		var err error
		entries, err = r.list(ctx, ref)
		return err
	})
	return entries, err
}

// list makes one try of List.
func (r *Reader) list(ctx context.Context, ref contracts.JobRef) ([]contracts.HistoryEntry, error) {
	s, err := r.stream(ctx)
	if s == nil || err != nil {
		return nil, err
	}
	subject := contracts.HistorySubjectPrefix + ref.Tokens()
	last, err := s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the history of %s: %w", ref.Key(), err)
	}
	var entries []contracts.HistoryEntry
	err = r.read(ctx, s, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}}, last.Sequence,
		func(m jetstream.Msg, seq uint64) error {
			var h contracts.HistoryEntry
			if err := json.Unmarshal(m.Data(), &h); err != nil {
				return nil // an unreadable entry is left out, not fatal to the list
			}
			h.ID = contracts.HistoryID(h.StartTime, seq)
			entries = append(entries, h)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("reading the history of %s: %w", ref.Key(), err)
	}
	// The stream holds them oldest first.
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	return entries, nil
}

// CatchUpWait bounds how long Tallies waits for the history consumer to
// store the results published before it was called.
const CatchUpWait = 10 * time.Second

// Tallies returns the tally of the newest entry of every job that has
// history, by the job's KV key. It reads headers only, one message per job.
// It first waits, at most CatchUpWait, until the history consumer has stored
// every result published so far, so that the tallies count them.
func (r *Reader) Tallies(ctx context.Context) (map[string]contracts.Tally, error) {
	r.awaitHistoryConsumer(ctx)
	var tallies map[string]contracts.Tally
	err := r.retrying(ctx, func() error {
		var err error
		tallies, err = r.tallies(ctx)
		return err
	})
	return tallies, err
}

// awaitHistoryConsumer waits, at most CatchUpWait, until the history
// consumer has acknowledged every result RESULTS held when it was called
// (or there is no such consumer, or no such stream). It reports whether it
// has.
func (r *Reader) awaitHistoryConsumer(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, CatchUpWait)
	defer cancel()
	var last uint64
	for {
		done, err := func() (bool, error) {
			if last == 0 {
				s, err := r.js.Stream(ctx, contracts.ResultsStream)
				if err != nil {
					return false, err
				}
				info, err := s.Info(ctx)
				if err != nil {
					return false, err
				}
				if last = info.State.LastSeq; last == 0 {
					return true, nil
				}
			}
			c, err := r.js.Consumer(ctx, contracts.ResultsStream, contracts.HistoryConsumer)
			if err != nil {
				return false, err
			}
			info, err := c.Info(ctx)
			if err != nil {
				return false, err
			}
			return info.AckFloor.Stream >= last || info.NumPending == 0 && info.NumAckPending == 0, nil
		}()
		if done || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrConsumerNotFound) {
			return true
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// tallies makes one try of Tallies.
func (r *Reader) tallies(ctx context.Context) (map[string]contracts.Tally, error) {
	s, err := r.stream(ctx)
	if s == nil || err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the %s stream: %w", contracts.HistoryStream, err)
	}
	tallies := map[string]contracts.Tally{}
	if info.State.Msgs == 0 {
		return tallies, nil
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contracts.HistorySubjectPrefix + ">"},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	}
	err = r.read(ctx, s, cfg, info.State.LastSeq, func(m jetstream.Msg, _ uint64) error {
		tokens := m.Subject()[len(contracts.HistorySubjectPrefix):]
		var t contracts.Tally
		if err := json.Unmarshal([]byte(m.Headers().Get(contracts.TallyHeader)), &t); err == nil {
			tallies[contracts.JobKeyOfTokens(tokens)] = t
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the jobs' tallies: %w", err)
	}
	return tallies, nil
}

// readBatch is how many messages read asks for at a time.
const readBatch = 500

// read delivers the messages an ordered consumer with cfg gives, until one
// at or after the stream sequence last, or the last one pending.
func (r *Reader) read(ctx context.Context, s jetstream.Stream, cfg jetstream.OrderedConsumerConfig, last uint64,
	each func(m jetstream.Msg, seq uint64) error) error {
	cfg.InactiveThreshold = 10 * time.Second // the server forgets one left behind
	cons, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if info := cons.CachedInfo(); info != nil {
			_ = s.DeleteConsumer(context.WithoutCancel(ctx), info.Name)
		}
	}()
	for {
		batch, err := cons.Fetch(readBatch, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			if err := each(m, meta.Sequence.Stream); err != nil {
				return err
			}
			if meta.Sequence.Stream >= last || meta.NumPending == 0 {
				return nil
			}
		}
		if err := batch.Error(); err != nil {
			return err
		}
		if n == 0 {
			// Nothing more arrived: the entries up to last were removed
			// (retention, a purge) while they were being read.
			return ctx.Err()
		}
	}
}

// Purge deletes the history of the job with the KV key, when it is
// deleted: a job created again with its name starts with none.
func (r *Reader) Purge(ctx context.Context, jobKey string) error {
	subject, err := subjectOf(jobKey)
	if err != nil {
		return err
	}
	return r.retrying(ctx, func() error {
		s, err := r.stream(ctx)
		if s == nil || err != nil {
			return err
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			return fmt.Errorf("purging the history of %s: %w", jobKey, err)
		}
		return nil
	})
}
