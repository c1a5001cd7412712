package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
)

// FollowUpsBucket is the KV bucket of the attempts that follow a failed
// attempt (retries, error actions) and of runs requested outside the
// schedule: what the Redis timer holds beside a job's schedule, kept in
// NATS too so that it survives the loss of Redis.
const FollowUpsBucket = "scheduler-followups"

// FollowUp is a pending attempt of a job outside its schedule: a retry, an
// error action, a run requested with POST …/run, or the next run of a
// backfill (POST …/backfill). The planner writes it
// before it puts it in the timer, and deletes it once the attempt's result
// is counted.
type FollowUp struct {
	// Job names the job.
	Job contracts.JobRef `json:"job"`
	// Slot is the timer slot of the attempt ("r<occurrence>" for the
	// attempts that follow an occurrence, "x<unix ms>" for a run).
	Slot string `json:"slot"`
	// Due is when the attempt is due, Expected when its occurrence was.
	Due      time.Time `json:"due"`
	Expected time.Time `json:"expected"`
	// Occurrence is the occurrence's number, 0 for a run.
	Occurrence int64 `json:"occurrence,omitempty"`
	// Attempt is the 0-based attempt of Action.
	Attempt int                  `json:"attempt,omitempty"`
	Action  contracts.ActionName `json:"action"`
	// Remaining is how many occurrences of the schedule follow this one
	// (-1 for no limit).
	Remaining int64 `json:"remaining"`
	// Revision is the job's revision the attempt was scheduled from.
	Revision uint64 `json:"revision,omitempty"`
	// End, for the pending run of a backfill (POST …/backfill), is the
	// end of its range: the runs that follow go up to it.
	End time.Time `json:"end,omitzero"`
}

// followUpKey returns the key of a job's follow-up in a slot:
// "j.<sub>.<rg>.<collection>.<job>.<slot>".
func followUpKey(jobKey, slot string) string { return jobKey + "." + slot }

// FollowUps reads and writes the follow-ups bucket. Like Store, it is safe
// for concurrent use by any number of planners.
type FollowUps struct {
	kv jetstream.KeyValue
}

// OpenFollowUps binds the follow-ups bucket, creating it (file storage,
// one revision per key, replicas as given) when it does not exist.
func OpenFollowUps(ctx context.Context, js jetstream.JetStream, replicas int) (*FollowUps, error) {
	kv, err := bindOrCreate(ctx, js, Config{Bucket: FollowUpsBucket, Replicas: max(replicas, 1)},
		"Pending retries, error actions and runs of jobs, beside the Redis timer")
	if err != nil {
		return nil, fmt.Errorf("opening the follow-ups: KV bucket %s: %w", FollowUpsBucket, err)
	}
	return &FollowUps{kv: kv}, nil
}

// Get returns the job's follow-up in the slot and its revision; false when
// there is none.
func (f *FollowUps) Get(ctx context.Context, jobKey, slot string) (FollowUp, uint64, bool, error) {
	key := followUpKey(jobKey, slot)
	e, err := f.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return FollowUp{}, 0, false, nil
	}
	if err != nil {
		return FollowUp{}, 0, false, fmt.Errorf("reading follow-up %s: %w", key, err)
	}
	var fu FollowUp
	if err := json.Unmarshal(e.Value(), &fu); err != nil {
		return FollowUp{}, 0, false, fmt.Errorf("decoding follow-up %s: %w", key, err)
	}
	return fu, e.Revision(), true, nil
}

// Put writes fu in its slot, replacing the follow-up at revision (0: the
// slot must be empty). It returns ErrConflict when the slot changed since.
func (f *FollowUps) Put(ctx context.Context, fu FollowUp, revision uint64) error {
	key := followUpKey(fu.Job.KVKey(), fu.Slot)
	data, err := json.Marshal(fu)
	if err != nil {
		return fmt.Errorf("encoding follow-up %s: %w", key, err)
	}
	if revision == 0 {
		_, err = f.kv.Create(ctx, key, data)
	} else {
		_, err = f.kv.Update(ctx, key, data, revision)
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyExists), isMismatch(err):
		return fmt.Errorf("writing follow-up %s: %w", key, ErrConflict)
	case err != nil:
		return fmt.Errorf("writing follow-up %s: %w", key, err)
	}
	return nil
}

// Delete removes the follow-up of the slot at revision; ErrConflict when it
// changed since. Deleting an absent follow-up (revision 0) is not an error.
func (f *FollowUps) Delete(ctx context.Context, jobKey, slot string, revision uint64) error {
	key := followUpKey(jobKey, slot)
	var opts []jetstream.KVDeleteOpt
	if revision > 0 {
		opts = append(opts, jetstream.LastRevision(revision))
	}
	// Purge, not Delete: nothing of it is kept, not even a marker.
	err := f.kv.Purge(ctx, key, opts...)
	switch {
	case isMismatch(err):
		return fmt.Errorf("deleting follow-up %s: %w", key, ErrConflict)
	case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound):
		return fmt.Errorf("deleting follow-up %s: %w", key, err)
	}
	return nil
}

// DeleteJob removes every follow-up of the job with the KV key.
func (f *FollowUps) DeleteJob(ctx context.Context, jobKey string) error {
	keys, err := f.kv.ListKeysFiltered(ctx, jobKey+".*")
	if err != nil {
		return fmt.Errorf("listing the follow-ups of %s: %w", jobKey, err)
	}
	var errs []error
	for key := range keys.Keys() {
		if err := f.kv.Purge(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			errs = append(errs, fmt.Errorf("deleting follow-up %s: %w", key, err))
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("listing the follow-ups of %s: %w", jobKey, err))
	}
	return errors.Join(errs...)
}

// List returns every follow-up, in no order. A record that cannot be read
// is reported in the error and left out.
func (f *FollowUps) List(ctx context.Context) ([]FollowUp, error) {
	w, err := f.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("listing the follow-ups: %w", err)
	}
	defer w.Stop()
	var (
		out  []FollowUp
		errs []error
	)
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listing the follow-ups: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("listing the follow-ups: the watcher stopped early")
			}
			if e == nil {
				return out, errors.Join(errs...)
			}
			var fu FollowUp
			if err := json.Unmarshal(e.Value(), &fu); err != nil {
				errs = append(errs, fmt.Errorf("decoding follow-up %s: %w", e.Key(), err))
				continue
			}
			out = append(out, fu)
		}
	}
}
