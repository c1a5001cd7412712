package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
)

// PauseJob disables an enabled job that is still at revision, with reason
// as its state reason, and reports whether it did. It returns ErrConflict
// when the job is at another revision (the caller reads it again and
// decides anew), false without an error when the job is not enabled or
// does not exist. Of any number of planners pausing the same job at the
// same revision, exactly one does. Only the state, the reason and the
// update time change, at rest: the job's sealed secrets are not opened.
func (s *Store) PauseJob(ctx context.Context, ref contracts.JobRef, revision uint64, reason string) (bool, error) {
	if err := checkJobRef(ref); err != nil {
		return false, err
	}
	key := ref.KVKey()
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pausing job %s: %w", key, err)
	}
	if e.Revision() != revision {
		return false, fmt.Errorf("pausing job %s: at revision %d, not %d: %w", key, e.Revision(), revision, ErrConflict)
	}
	var r jobRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return false, fmt.Errorf("decoding job %s: %w", key, err)
	}
	paused, err := s.changeEnabled(ctx, key, r, revision, "pausing", func(r *jobRecord) {
		r.Properties.State, r.StateReason = contracts.JobStateDisabled, reason
	})
	if isMismatch(err) {
		return false, fmt.Errorf("pausing job %s: it changed meanwhile: %w", key, ErrConflict)
	}
	return paused, err
}
