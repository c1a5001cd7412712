package store

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Change is one change to a job, as WatchJobs delivers it.
type Change struct {
	// Key is the job's KV key.
	Key string
	// Job is the job as written, secrets opened; nil when deleted or when
	// Err is set.
	Job *Job
	// Deleted is set when the job was deleted.
	Deleted bool
	// Revision is the KV revision of the change.
	Revision uint64
	// Err is set when the record could not be read, such as when it was
	// sealed with another key. The watch goes on.
	Err error
}

// jobsFilter matches every job key and no collection key.
const jobsFilter = "j.>"

// WatchJobs streams every job change until ctx ends: first the current value
// of every job, then each later put and delete, in KV order. ready is closed
// once the current values have all been received from changes; changes is
// closed when ctx ends or the connection closes (ready may then stay open).
// Deletions that happened before the watch began are not replayed. The
// bucket keeps one write of a key, so a write made before the watch read
// the previous write of its key replaced it: a job deleted and created
// again at once may reach a watch that fell behind as one put over
// another, told apart by the job's Created time.
// changes is unbuffered: the watch proceeds as fast as it is read.
func (s *Store) WatchJobs(ctx context.Context) (changes <-chan Change, ready <-chan struct{}, err error) {
	return watchKeys(ctx, s.kv, jobsFilter, "jobs", func(e jetstream.KeyValueEntry, deleted bool) Change {
		c := Change{Key: e.Key(), Deleted: deleted, Revision: e.Revision()}
		if !deleted {
			if j, err := s.decodeJob(e); err != nil {
				c.Err = err
			} else {
				c.Job = &j
			}
		}
		return c
	})
}

// watchKeys streams the changes of the keys filter matches until ctx ends,
// each made by change from its entry: first the current value of every
// key, then each later put and delete, in KV order. ready is closed once
// the current values have all been received; changes is closed when ctx
// ends or the connection closes. The markers of keys deleted before the
// watch are not replayed. what names the keys in an error.
func watchKeys[C any](ctx context.Context, kv jetstream.KeyValue, filter, what string, change func(e jetstream.KeyValueEntry, deleted bool) C) (changes <-chan C, ready <-chan struct{}, err error) {
	w, err := kv.Watch(ctx, filter)
	if err != nil {
		return nil, nil, fmt.Errorf("watching %s: %w", what, err)
	}
	out := make(chan C)
	initial := make(chan struct{})
	go func() {
		defer close(out)
		defer w.Stop()
		inInitial := true
		for {
			var e jetstream.KeyValueEntry
			select {
			case <-ctx.Done():
				return
			case entry, ok := <-w.Updates():
				if !ok {
					return
				}
				e = entry
			}
			if e == nil {
				if inInitial {
					inInitial = false
					close(initial)
				}
				continue
			}
			deleted := e.Operation() != jetstream.KeyValuePut
			if deleted && inInitial {
				continue // the marker of a key deleted before the watch
			}
			select {
			case out <- change(e, deleted):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, initial, nil
}
