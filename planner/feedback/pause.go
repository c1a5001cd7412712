package feedback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/store"
)

// pauseAttempts bounds how often a job is read again because it changed
// while it was being paused.
const pauseAttempts = 5

// maxReasonError is the most characters of the last error a state reason
// quotes.
const maxReasonError = 200

// pause disables each job whose result faulted an occurrence that brought
// its consecutive Faulted occurrences to its pauseAfterFaults, and returns
// the error of each result's work. The count is read once the results are
// recorded, so a result delivered again finds it too (and the job's
// revision keeps the pause to one, whoever gets there first).
func (c *Consumer) pause(ctx context.Context, work []pending) []error {
	errs := make([]error, len(work))
	var (
		idx  []int
		keys []string
	)
	for i, p := range work {
		n := p.job.Properties.PauseAfterFaults
		if !p.decision.Faulted || n == nil || *n <= 0 || p.decision.EndState != "" ||
			p.job.Properties.State != contracts.JobStateEnabled {
			continue
		}
		idx, keys = append(idx, i), append(keys, p.result.Job.KVKey())
	}
	if len(idx) == 0 {
		return errs
	}
	tallies, _, err := c.ix.Statuses(ctx, keys)
	if err != nil {
		for _, i := range idx {
			errs[i] = err
		}
		return errs
	}
	for k, i := range idx {
		if tallies[k].ConsecutiveFaults < int64(*work[i].job.Properties.PauseAfterFaults) {
			continue
		}
		errs[i] = c.pauseJob(ctx, work[i], tallies[k].ConsecutiveFaults)
	}
	return errs
}

// pauseJob disables the job of p after faults consecutive Faulted
// occurrences, at the revision its result was decided on, or at a later
// one that still asks for it; then it takes its next occurrence out of the
// timer and writes a history entry.
func (c *Consumer) pauseJob(ctx context.Context, p pending, faults int64) error {
	r, job := p.result, p.job
	reason := PauseReason(faults, r.ExpectedTime, r.Error, r.Message)
	for range pauseAttempts {
		paused, err := c.store.PauseJob(ctx, r.Job, job.Revision, reason)
		if errors.Is(err, store.ErrConflict) {
			// Changed meanwhile (paused by another planner, updated):
			// decide again on the job as it is now.
			if job, err = c.store.GetJobByKey(ctx, r.Job.KVKey()); errors.Is(err, store.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			if n := job.Properties.PauseAfterFaults; job.Properties.State != contracts.JobStateEnabled || n == nil || *n <= 0 || faults < int64(*n) {
				return nil
			}
			continue
		}
		if err != nil || !paused {
			return err
		}
		c.cfg.Logger.Info("job disabled", slog.String("job", r.Job.Key()), slog.String("reason", reason))
		// The follower takes it out too once it sees the change; this one
		// keeps the next occurrence from being dispatched meanwhile.
		if err := c.ix.Remove(ctx, r.Job.KVKey(), ""); err != nil {
			c.cfg.Logger.Warn("removing the next occurrence of a disabled job", slog.String("job", r.Job.Key()), slog.String("error", err.Error()))
		}
		if err := c.recordPause(ctx, r, reason); err != nil {
			c.cfg.Logger.Warn("writing the history entry of a disabled job", slog.String("job", r.Job.Key()), slog.String("error", err.Error()))
		}
		return nil
	}
	return fmt.Errorf("pausing job %s: it changed on each of %d attempts: %w", r.Job.Key(), pauseAttempts, store.ErrConflict)
}

// PauseReason is the state reason of a job disabled after faults
// consecutive Faulted occurrences, the last expected at expected and
// failing with errText (or, when empty, message), shortened.
func PauseReason(faults int64, expected time.Time, errText, message string) string {
	last := errText
	if last == "" {
		last = message
	}
	if r := []rune(last); len(r) > maxReasonError {
		last = string(r[:maxReasonError-1]) + "…"
	}
	return fmt.Sprintf("disabled after %d consecutive Faulted occurrences; the last at %s: %s",
		faults, expected.UTC().Format(time.RFC3339), last)
}

// PauseLabel is the label of a pause's history entry in its occurrence
// id: the entry is written once per faulted occurrence that paused the job.
const PauseLabel contracts.ActionName = contracts.MainAction + "/paused"

// pausedTally returns the tally of a job's newest history entry as its
// pause's entry carries it: the counters as they are, the consecutive
// faults from zero, as the job enabled again starts them (the timer's
// count is reset then; history's, restored after Redis lost the timer,
// must not count the faults before the pause again). A tally that cannot
// be read is carried as it is.
func pausedTally(header string) string {
	var t contracts.Tally
	if header == "" || json.Unmarshal([]byte(header), &t) != nil {
		return header
	}
	t.ConsecutiveFaults = 0
	b, err := json.Marshal(t)
	if err != nil {
		return header
	}
	return string(b)
}

// recordPause writes the history entry of a pause straight to the HISTORY
// stream, after the job's newest entry and carrying its tally (see
// pausedTally):
// the history consumer only writes the entries of results, and a result
// event would reach every subscriber of RESULTS as an execution. The
// entry's id is derived from the occurrence, so writing it twice stores it
// once. Without a HISTORY stream (no history role yet) nothing is written.
func (c *Consumer) recordPause(ctx context.Context, r contracts.Result, reason string) error {
	if c.js == nil {
		return nil
	}
	history, err := c.js.Stream(ctx, contracts.HistoryStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	now := c.cfg.Now().UTC()
	entry := contracts.HistoryEntry{
		Version: contracts.MessageVersion, OccurrenceID: contracts.OccurrenceID(r.Job, r.ExpectedTime, PauseLabel, 0),
		Job: r.Job, ActionName: contracts.MainAction, Status: contracts.StatusFailed, Message: "Job " + reason,
		StartTime: now, EndTime: now, ExpectedTime: r.ExpectedTime, RepeatCount: r.Occurrence,
	}
	data, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	subject := contracts.HistorySubjectPrefix + r.Job.Tokens()
	for range pauseAttempts {
		var seq uint64
		tally := ""
		last, err := history.GetLastMsgForSubject(ctx, subject)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return err
		default:
			seq, tally = last.Sequence, pausedTally(last.Header.Get(contracts.TallyHeader))
		}
		msg := nats.NewMsg(subject)
		msg.Data = data
		if tally != "" {
			msg.Header.Set(contracts.TallyHeader, tally)
		}
		_, err = c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(entry.OccurrenceID), jetstream.WithExpectLastSequencePerSubject(seq))
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			continue // the history consumer wrote meanwhile
		}
		return err
	}
	return fmt.Errorf("writing the history entry: the job's history changed on each of %d attempts", pauseAttempts)
}
