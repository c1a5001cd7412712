package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
)

// Collection is a job collection as stored.
type Collection struct {
	// Ref names the collection as the user gave it.
	Ref        contracts.CollectionRef
	Location   string
	Tags       map[string]string
	Properties contracts.JobCollectionProperties
	// Created is stamped by PutCollection when it is zero; Updated on every
	// PutCollection.
	Created, Updated time.Time
	// Revision is the KV revision, set when read or written. A job is
	// created only while its collection is at the revision its creator
	// read (see Admission).
	Revision uint64
}

// collectionRecord is a collection's JSON at rest.
type collectionRecord struct {
	Ref        contracts.CollectionRef           `json:"ref"`
	Location   string                            `json:"location,omitempty"`
	Tags       map[string]string                 `json:"tags,omitempty"`
	Properties contracts.JobCollectionProperties `json:"properties"`
	Created    time.Time                         `json:"created"`
	Updated    time.Time                         `json:"updated"`
	// Deleting marks a collection whose deletion has begun: it is no longer
	// found, and no job can be created in it.
	Deleting bool `json:"deleting,omitempty"`
}

func decodeCollectionRecord(e jetstream.KeyValueEntry) (collectionRecord, error) {
	var r collectionRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return r, fmt.Errorf("decoding collection %s: %w", e.Key(), err)
	}
	return r, nil
}

func toCollection(r collectionRecord, revision uint64) Collection {
	return Collection{
		Ref: r.Ref, Location: r.Location, Tags: r.Tags, Properties: r.Properties,
		Created: r.Created, Updated: r.Updated, Revision: revision,
	}
}

// getCollection reads the collection record at key, including one being
// deleted. A missing one is ErrNotFound.
func (s *Store) getCollection(ctx context.Context, key string) (jetstream.KeyValueEntry, collectionRecord, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, collectionRecord{}, fmt.Errorf("collection %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, collectionRecord{}, fmt.Errorf("reading collection %s: %w", key, err)
	}
	r, err := decodeCollectionRecord(e)
	return e, r, err
}

func checkCollectionRef(ref contracts.CollectionRef) error { return checkNames(ref.Validate) }

// GetCollection returns the collection ref names, in any case. A collection
// whose deletion has begun is not found.
func (s *Store) GetCollection(ctx context.Context, ref contracts.CollectionRef) (Collection, error) {
	if err := checkCollectionRef(ref); err != nil {
		return Collection{}, err
	}
	e, r, err := s.getCollection(ctx, ref.KVKey())
	if err != nil {
		return Collection{}, err
	}
	if r.Deleting {
		return Collection{}, fmt.Errorf("collection %s is being deleted: %w", e.Key(), ErrNotFound)
	}
	return toCollection(r, e.Revision()), nil
}

// PutCollection writes c. With expected 0 it creates the collection
// (ErrExists when one of that name exists, in any case, and ErrConflict while
// one of that name is being deleted); otherwise it
// replaces the collection if its revision is still expected (ErrConflict
// when not, ErrNotFound when it is gone). It stamps Created when zero and
// Updated always, and returns c as written, with its new Revision.
func (s *Store) PutCollection(ctx context.Context, c Collection, expected uint64) (Collection, error) {
	if err := checkCollectionRef(c.Ref); err != nil {
		return Collection{}, err
	}
	key := c.Ref.KVKey()
	now := s.now()
	if c.Created.IsZero() {
		c.Created = now
	}
	c.Created, c.Updated = timestamp(c.Created), timestamp(now)
	value, err := json.Marshal(collectionRecord{
		Ref: c.Ref, Location: c.Location, Tags: c.Tags, Properties: c.Properties,
		Created: c.Created, Updated: c.Updated,
	})
	if err != nil {
		return Collection{}, fmt.Errorf("encoding collection %s: %w", key, err)
	}
	if expected == 0 {
		rev, err := s.kv.Create(ctx, key, value)
		if errors.Is(err, jetstream.ErrKeyExists) {
			if _, r, err := s.getCollection(ctx, key); err == nil && r.Deleting {
				return Collection{}, fmt.Errorf("creating collection %s: it is being deleted, try again: %w", key, ErrConflict)
			}
			return Collection{}, fmt.Errorf("creating collection %s: %w", key, ErrExists)
		}
		if err != nil {
			return Collection{}, fmt.Errorf("creating collection %s: %w", key, err)
		}
		c.Revision = rev
		return c, nil
	}
	rev, err := s.update(ctx, "collection", key, value, expected)
	if err != nil {
		return Collection{}, err
	}
	c.Revision = rev
	return c, nil
}

// update writes value at key if the key is at revision expected. A failed
// compare-and-set is ErrNotFound when the key is gone and ErrConflict when
// it has changed; errors name the kind of record and its key.
func (s *Store) update(ctx context.Context, kind, key string, value []byte, expected uint64) (uint64, error) {
	rev, err := s.kv.Update(ctx, key, value, expected)
	if isMismatch(err) {
		err = s.mismatch(ctx, key)
	}
	if err != nil {
		return 0, fmt.Errorf("updating %s %s: %w", kind, key, err)
	}
	return rev, nil
}

// mismatch tells why a compare-and-set on key failed: ErrNotFound when the
// key is gone, else ErrConflict.
func (s *Store) mismatch(ctx context.Context, key string) error {
	if _, err := s.kv.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) {
		return ErrNotFound
	}
	return ErrConflict
}

// deleteCollectionAttempts bounds DeleteCollection's retries when other
// callers delete the same collection at the same time.
const deleteCollectionAttempts = 10

// deleteParallelism is how many job deletions DeleteCollection has in
// flight.
const deleteParallelism = 16

// DeleteCollection deletes the collection's jobs and calendars, then the
// collection (ErrNotFound when it does not exist).
//
// It first marks the collection record as being deleted, which hides the
// collection and stops CreateJob: a job written after the mark finds its
// collection changed and its creator removes it (see Admission). Then it
// deletes the jobs, listed after the mark so that every job written before
// it is among them, and finally the record at the marked revision. A deletion that stopped half way is finished by the next
// DeleteCollection; until then the collection is not found and its name
// cannot be created again.
func (s *Store) DeleteCollection(ctx context.Context, ref contracts.CollectionRef) error {
	if err := checkCollectionRef(ref); err != nil {
		return err
	}
	key := ref.KVKey()
	for attempt := range deleteCollectionAttempts {
		e, r, err := s.getCollection(ctx, key)
		if errors.Is(err, ErrNotFound) && attempt > 0 {
			return nil // another caller finished the deletion
		}
		if err != nil {
			return fmt.Errorf("deleting collection: %w", err)
		}
		marked := e.Revision()
		if !r.Deleting {
			// Unconditional: the collection goes whatever changed since it
			// was read.
			r.Deleting = true
			value, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("deleting collection %s: encoding: %w", key, err)
			}
			if marked, err = s.kv.Put(ctx, key, value); err != nil {
				return fmt.Errorf("deleting collection %s: marking it: %w", key, err)
			}
		}
		if err := s.deleteJobs(ctx, ref); err != nil {
			return fmt.Errorf("deleting collection %s: %w", key, err)
		}
		if err := s.deleteCalendars(ctx, ref); err != nil {
			return fmt.Errorf("deleting collection %s: %w", key, err)
		}
		err = s.kv.Delete(ctx, key, jetstream.LastRevision(marked))
		if err == nil {
			return nil
		}
		if !isMismatch(err) {
			return fmt.Errorf("deleting collection %s: %w", key, err)
		}
		// Another DeleteCollection marked it again or finished first.
	}
	return fmt.Errorf("deleting collection %s: %w: it changed on each of %d attempts", key, ErrConflict, deleteCollectionAttempts)
}

// deleteJobs deletes every job of the collection, several at a time.
func (s *Store) deleteJobs(ctx context.Context, ref contracts.CollectionRef) error {
	return s.deleteUnder(ctx, "job", ref.JobsKVPrefix())
}

// deleteUnder deletes every key under prefix, deleteParallelism at a time;
// kind names the values in errors.
func (s *Store) deleteUnder(ctx context.Context, kind, prefix string) error {
	entries, err := s.scan(ctx, prefix+"*", true)
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, deleteParallelism)
	)
	for _, e := range entries {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.kv.Delete(ctx, e.Key()); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("deleting %s %s: %w", kind, e.Key(), err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ListCollections returns the collections of a subscription, of one resource
// group or, when resourceGroup is "", of every group; when subscription is
// "" too, of every subscription. They are sorted by subscription, resource
// group, then name (each case-insensitive). Collections being deleted are
// left out.
func (s *Store) ListCollections(ctx context.Context, subscription, resourceGroup string) ([]Collection, error) {
	err := checkNames(func() error {
		switch {
		case subscription == "" && resourceGroup != "":
			return errors.New("a resource group needs its subscription")
		case subscription == "":
			return nil
		case resourceGroup == "":
			return contracts.ValidateSubscription(subscription)
		}
		return errors.Join(contracts.ValidateSubscription(subscription), contracts.ValidateResourceGroup(resourceGroup))
	})
	if err != nil {
		return nil, fmt.Errorf("listing collections: %w", err)
	}
	filter := "c.*.*.*"
	switch {
	case resourceGroup != "":
		filter = "c." + contracts.Token(subscription) + "." + contracts.Token(resourceGroup) + ".*"
	case subscription != "":
		filter = "c." + contracts.Token(subscription) + ".*.*"
	}
	entries, err := s.scan(ctx, filter, false)
	if err != nil {
		return nil, err
	}
	out := make([]Collection, 0, len(entries))
	for _, e := range entries {
		r, err := decodeCollectionRecord(e)
		if err != nil {
			return nil, err
		}
		if !r.Deleting {
			out = append(out, toCollection(r, e.Revision()))
		}
	}
	slices.SortFunc(out, func(a, b Collection) int {
		return cmp.Or(
			cmp.Compare(strings.ToLower(a.Ref.Subscription), strings.ToLower(b.Ref.Subscription)),
			cmp.Compare(strings.ToLower(a.Ref.ResourceGroup), strings.ToLower(b.Ref.ResourceGroup)),
			cmp.Compare(strings.ToLower(a.Ref.Collection), strings.ToLower(b.Ref.Collection)),
		)
	})
	return out, nil
}
