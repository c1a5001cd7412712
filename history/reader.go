package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
)

// Reader reads the HISTORY stream. Until the history consumer created the
// stream, every job's history is empty.
type Reader struct {
	js jetstream.JetStream
}

// NewReader returns a reader over js.
func NewReader(js jetstream.JetStream) *Reader { return &Reader{js: js} }

// subjectOf returns the subject of the history of the job with the KV key.
func subjectOf(jobKey string) (string, error) {
	tokens, ok := contracts.JobTokensOfKey(jobKey)
	if !ok {
		return "", fmt.Errorf("%q is not a job's key", jobKey)
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
func (r *Reader) List(ctx context.Context, ref contracts.JobRef) ([]contracts.HistoryEntry, error) {
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

// Tallies returns the tally of the newest entry of every job that has
// history, by the job's KV key. It reads headers only, one message per job.
func (r *Reader) Tallies(ctx context.Context) (map[string]contracts.Tally, error) {
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
	s, err := r.stream(ctx)
	if s == nil || err != nil {
		return err
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("purging the history of %s: %w", jobKey, err)
	}
	return nil
}
