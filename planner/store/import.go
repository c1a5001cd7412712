package store

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// importWindow is how many writes ImportJobs has in flight at once.
const importWindow = 4096

// ImportJobs writes many jobs at once, replacing jobs of the same names:
// for migrating a large number of jobs and for benchmarks. Unlike CreateJob
// it does not enforce quotas or read the collection per job: it checks once
// that each collection exists, then pipelines the writes. Jobs are stamped
// and sealed as CreateJob does.
func (s *Store) ImportJobs(ctx context.Context, jobs []Job) error {
	checked := map[string]bool{}
	pending := make([]jetstream.PubAckFuture, 0, importWindow)
	wait := func() error {
		for _, f := range pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("importing jobs: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		pending = pending[:0]
		return nil
	}
	for _, j := range jobs {
		if err := checkJobRef(j.Ref); err != nil {
			return err
		}
		coll := j.Ref.CollectionRef()
		if !checked[coll.KVKey()] {
			if _, err := s.GetCollection(ctx, coll); err != nil {
				return fmt.Errorf("importing jobs into %s: %w", coll.KVKey(), err)
			}
			checked[coll.KVKey()] = true
		}
		s.stamp(&j)
		key := j.Ref.KVKey()
		value, err := s.encodeJob(j, key, 0)
		if err != nil {
			return err
		}
		f, err := s.js.PublishAsync("$KV."+s.bucket+"."+key, value)
		if err != nil {
			return fmt.Errorf("importing job %s: %w", key, err)
		}
		if pending = append(pending, f); len(pending) == importWindow {
			if err := wait(); err != nil {
				return err
			}
		}
	}
	return wait()
}
