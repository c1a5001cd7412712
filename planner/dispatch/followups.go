package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/store"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// FollowUps keeps the attempts that are not a job's next occurrence — the
// retries and the error action that follow a failed attempt, and the runs
// requested with POST …/run — as durable as the jobs: each is written to
// the follow-ups bucket in NATS before it is put in the Redis timer, and
// deleted from the bucket once the result of its attempt is counted (or it
// is skipped). When Redis loses its data, the Rebuilder puts them back in
// the timer at their original due times.
type FollowUps struct {
	store *store.FollowUps
	ix    *timer.Index
	js    jetstream.JetStream
	jobs  *Jobs // compiles a job's schedule with its calendars
	cfg   Config
	wake  func()
}

func newFollowUps(st *store.FollowUps, ix *timer.Index, js jetstream.JetStream, jobs *Jobs, cfg Config, wake func()) *FollowUps {
	return &FollowUps{store: st, ix: ix, js: js, jobs: jobs, cfg: cfg, wake: wake}
}

// settleAttempts bounds how often a write of the bucket is computed again
// because another planner wrote the same slot in between.
const settleAttempts = 5

// RunNow schedules one execution of the job's main action now, outside its
// schedule: it has no occurrence number, and its retries and error action
// follow in its own slot.
func (f *FollowUps) RunNow(ctx context.Context, j store.Job) error {
	now := f.cfg.Now().UTC().Truncate(time.Millisecond)
	e := timer.Entry{
		JobKey: j.Ref.KVKey(), Slot: runSlot(now), Due: now, Expected: now,
		Action: contracts.MainAction, Remaining: -1, Revision: j.Revision,
	}
	err := f.store.Put(ctx, record(j.Ref, e), 0)
	if errors.Is(err, store.ErrConflict) {
		return nil // a run requested in the same millisecond: it is this one
	}
	if err != nil {
		return err
	}
	if err := f.ix.Schedule(ctx, e); err != nil {
		// Not scheduled: nor kept, so that it does not run after the
		// caller was told it failed.
		if derr := f.store.Delete(context.WithoutCancel(ctx), e.JobKey, e.Slot, 0); derr != nil {
			f.cfg.Logger.Warn("taking back a run that could not be scheduled", slog.String("job", e.JobKey), slog.String("error", derr.Error()))
		}
		return err
	}
	f.wake()
	return nil
}

// SettleNeeded reports whether Settle has anything to do for result r
// followed by next: something follows, or r is itself a follow-up or a run
// whose record is to be cleared. The first attempt of an occurrence, with
// nothing after it, has none.
func SettleNeeded(r contracts.Result, next *timer.Entry) bool {
	return next != nil || r.Occurrence == 0 || r.ActionName != contracts.MainAction || r.Attempt > 0
}

// Settle makes the bucket hold what follows result r of the job in r's
// slot: next, or nothing when next is nil. A slot that holds a later
// attempt already (r is an old result delivered again) is left as it is.
// It must be called before next is put in the timer.
func (f *FollowUps) Settle(ctx context.Context, r contracts.Result, next *timer.Entry) error {
	if !SettleNeeded(r, next) {
		return nil
	}
	var want *store.FollowUp
	if next != nil {
		rec := record(r.Job, *next)
		want = &rec
	}
	return f.update(ctx, r.Job.KVKey(), FollowUpSlot(r.Occurrence, r.ExpectedTime), r.ExpectedTime, ordinal(r.ActionName, r.Attempt), want)
}

// drop forgets a follow-up whose claim was skipped (its job is gone or
// does not fire), unless its slot holds a later attempt.
func (f *FollowUps) drop(ctx context.Context, e timer.Entry) error {
	return f.update(ctx, e.JobKey, e.Slot, e.Expected, ordinal(e.Action, e.Attempt), nil)
}

// update makes the slot of the job with the KV key hold want (nothing when
// nil), unless it holds an attempt later than the one of the occurrence
// expected at expected with the ordinal ord.
func (f *FollowUps) update(ctx context.Context, key, slot string, expected time.Time, ord int64, want *store.FollowUp) error {
	var err error
	for range settleAttempts {
		held, rev, ok, gerr := f.store.Get(ctx, key, slot)
		switch {
		case gerr != nil:
			return gerr
		case ok && later(held, expected, ord):
			return nil
		case want == nil && !ok:
			return nil
		case want == nil:
			err = f.store.Delete(ctx, key, slot, rev)
		case ok && same(*want, held):
			return nil
		default:
			err = f.store.Put(ctx, *want, rev)
		}
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("settling the follow-up %s of %s: %w", slot, key, err)
}

// same reports whether two follow-ups are one attempt scheduled alike.
func same(a, b store.FollowUp) bool {
	return a.Job == b.Job && a.Slot == b.Slot && a.Due.Equal(b.Due) && a.Expected.Equal(b.Expected) &&
		a.Occurrence == b.Occurrence && a.Attempt == b.Attempt && a.Action == b.Action &&
		a.Remaining == b.Remaining && a.Revision == b.Revision && a.End.Equal(b.End)
}

// ordinal orders the attempts of one occurrence: the main action's, then
// the error action's.
func ordinal(action contracts.ActionName, attempt int) int64 {
	if action == contracts.ErrorAction {
		return 1<<32 + int64(attempt)
	}
	return int64(attempt)
}

// later reports whether held is an attempt after the one of the occurrence
// expected at expected with ordinal ord: of a later occurrence, or later in
// the same.
func later(held store.FollowUp, expected time.Time, ord int64) bool {
	if !held.Expected.Equal(expected) {
		return held.Expected.After(expected)
	}
	return ordinal(held.Action, held.Attempt) > ord
}

// removeJob forgets every follow-up of a deleted job.
func (f *FollowUps) removeJob(ctx context.Context, jobKey string) error {
	return f.store.DeleteJob(ctx, jobKey)
}

// record is the bucket's form of a timer entry of the job.
func record(ref contracts.JobRef, e timer.Entry) store.FollowUp {
	return store.FollowUp{
		Job: ref, Slot: e.Slot, Due: e.Due.UTC(), Expected: e.Expected.UTC(), Occurrence: e.Occurrence,
		Attempt: e.Attempt, Action: e.Action, Remaining: e.Remaining, Revision: e.Revision,
	}
}

// entry is the timer entry of a follow-up.
func entry(fu store.FollowUp) timer.Entry {
	return timer.Entry{
		JobKey: fu.Job.KVKey(), Slot: fu.Slot, Due: fu.Due, Expected: fu.Expected, Occurrence: fu.Occurrence,
		Attempt: fu.Attempt, Action: fu.Action, Remaining: fu.Remaining, Revision: fu.Revision,
	}
}

// restore puts every follow-up of the bucket back in the timer at its
// original due time (a due time passed makes it due at once), except those
// whose attempt is on its way already: its execution waits in EXEC or its
// result in RESULTS. An entry the timer holds already is left alone.
// It returns how many it restored.
func (f *FollowUps) restore(ctx context.Context) (int, error) {
	all, err := f.store.List(ctx)
	if err != nil && len(all) == 0 {
		return 0, err
	}
	if err != nil {
		f.cfg.Logger.Warn("some follow-ups cannot be read", slog.String("error", err.Error()))
	}
	onTheWay, err := newInFlight(ctx, f.js)
	if err != nil {
		return 0, err
	}
	entries := make([]timer.Entry, 0, len(all))
	for _, fu := range all {
		id, _ := AttemptIdentity(fu.Job, fu.Occurrence, fu.Expected, fu.Action, fu.Attempt)
		busy, err := onTheWay.holds(ctx, fu.Job, id)
		if err != nil {
			return 0, err
		}
		if !busy {
			entries = append(entries, entry(fu))
		}
	}
	if len(entries) == 0 {
		return 0, nil
	}
	return len(entries), f.ix.ScheduleMissing(ctx, entries)
}

// inFlight finds an attempt's execution in EXEC and its result in RESULTS.
type inFlight struct {
	streams []jetstream.Stream
	prefix  []string
}

func newInFlight(ctx context.Context, js jetstream.JetStream) (*inFlight, error) {
	w := &inFlight{}
	for _, s := range []struct{ name, prefix string }{
		{contracts.ExecStream, contracts.ExecSubjectPrefix},
		{contracts.ResultsStream, contracts.ResultSubjectPrefix},
	} {
		st, err := js.Stream(ctx, s.name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("opening the %s stream: %w", s.name, err)
		}
		w.streams, w.prefix = append(w.streams, st), append(w.prefix, s.prefix)
	}
	return w, nil
}

// scanLimit bounds the messages of one job looked at in each stream.
const scanLimit = 200

// holds reports whether a message of the job with the attempt's id is in
// EXEC (its execution waits for or is with a worker) or in RESULTS (its
// result waits for the planners).
func (w *inFlight) holds(ctx context.Context, ref contracts.JobRef, id string) (bool, error) {
	for i, st := range w.streams {
		subject := w.prefix[i] + ref.Tokens()
		seq := uint64(1)
		for range scanLimit {
			m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
			if err != nil {
				return false, fmt.Errorf("looking for attempt %s: %w", id, err)
			}
			if m.Header.Get(jetstream.MsgIDHeader) == id {
				return true, nil
			}
			seq = m.Sequence + 1
		}
	}
	return false, nil
}
