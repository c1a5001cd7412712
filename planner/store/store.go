package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/streams"
)

// Errors of the store, wrapped with the key they concern; test with
// errors.Is.
var (
	// ErrNotFound: the collection or job does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: a collection or job of that name (in any case) exists
	// already.
	ErrExists = errors.New("already exists")
	// ErrConflict: the record changed since the revision the caller read.
	ErrConflict = errors.New("revision conflict: changed since it was read")
	// ErrQuotaExceeded: the collection already holds its maximum number of
	// jobs.
	ErrQuotaExceeded = errors.New("job quota exceeded")
	// ErrInvalidName: a name breaks the naming rules (contracts.ValidateName
	// and the others), which bound its length; the store builds no key or
	// subject from it, so no request it makes can exceed what NATS accepts.
	ErrInvalidName = errors.New("invalid name")
)

// Config configures a Store.
type Config struct {
	// Bucket is the name of the KV bucket. Defaults to contracts.JobsBucket.
	Bucket string
	// Replicas is the number of replicas of the bucket when Open creates it
	// (3 in a production cluster); an existing bucket is bound as it is.
	// Defaults to 1.
	Replicas int
	// Sealer seals the secrets of jobs at rest. Required.
	Sealer *seal.Sealer
	// Now is the clock that stamps Created, Anchored and Updated. Defaults
	// to time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.Bucket = cmp.Or(c.Bucket, contracts.JobsBucket)
	c.Replicas = cmp.Or(c.Replicas, 1)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	if c.Sealer == nil {
		return errors.New("Config.Sealer is required: jobs are never stored with their secrets in clear")
	}
	if c.Replicas < 1 {
		return fmt.Errorf("Config.Replicas is %d, it must be at least 1", c.Replicas)
	}
	return nil
}

// Store reads and writes collections and jobs in the KV bucket. It is safe
// for concurrent use, and any number of Stores, in any number of processes,
// may share one bucket.
type Store struct {
	js     jetstream.JetStream
	bucket string
	kv     jetstream.KeyValue
	sealer *seal.Sealer
	now    func() time.Time
	// records keeps decoded job records, so that listing a large
	// collection again decodes only what changed.
	records *recordCache
	// admissions watches the collections jobs are being created in.
	admissions *admissions
}

// Open binds the KV bucket cfg.Bucket, creating it (file storage, one
// revision per key) when it does not exist. It waits for a cluster that is
// not answering yet (see streams.Retry); a stream of the bucket's name that
// is not a bucket fails at once.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("opening the job store: %w", err)
	}
	kv, err := bindOrCreate(ctx, js, cfg, "Job collections and jobs: the scheduler's source of truth")
	if err != nil {
		return nil, fmt.Errorf("opening the job store: KV bucket %s: %w", cfg.Bucket, err)
	}
	s := &Store{js: js, bucket: cfg.Bucket, kv: kv, sealer: cfg.Sealer, now: cfg.Now, records: newRecordCache(recordCacheSize)}
	s.admissions = &admissions{s: s, watches: make(map[string]*collectionWatch)}
	return s, nil
}

// bindOrCreate binds an existing bucket without changing its configuration,
// so that a process started with other settings does not reconfigure a
// bucket the others share. While the cluster does not answer (a node
// restarting, a leader being elected) it waits, until ctx ends.
func bindOrCreate(ctx context.Context, js jetstream.JetStream, cfg Config, description string) (jetstream.KeyValue, error) {
	return streams.Open(ctx, "the KV bucket "+cfg.Bucket, func(ctx context.Context) (jetstream.KeyValue, error) {
		kv, err := js.KeyValue(ctx, cfg.Bucket)
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return kv, err
		}
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      cfg.Bucket,
			Description: description,
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    cfg.Replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			return js.KeyValue(ctx, cfg.Bucket) // another process created it first
		}
		return kv, err
	})
}

// timestamp drops the monotonic reading and the zone, so that a time reads
// back from JSON as it was written.
func timestamp(t time.Time) time.Time { return t.Round(0).UTC() }

// scan returns the newest entry of every key that matches filter and exists
// at the end of the scan, in no order. It reads the key range through one
// ordered consumer (DeliverLastPerSubject), so its cost is the number of
// matching keys, not the size of the bucket; metaOnly leaves out the values.
// A key written during the scan may arrive twice, and a key deleted during it
// arrives as a delete: the newest revision wins.
func (s *Store) scan(ctx context.Context, filter string, metaOnly bool) ([]jetstream.KeyValueEntry, error) {
	var opts []jetstream.WatchOpt
	if metaOnly {
		opts = append(opts, jetstream.MetaOnly())
	}
	w, err := s.kv.Watch(ctx, filter, opts...)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", filter, err)
	}
	defer w.Stop()
	latest := make(map[string]jetstream.KeyValueEntry)
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("listing %s: %w", filter, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("listing %s: the watcher stopped early", filter)
			}
			if e == nil { // every value present at the start has arrived
				entries := make([]jetstream.KeyValueEntry, 0, len(latest))
				for _, e := range latest {
					if e.Operation() == jetstream.KeyValuePut {
						entries = append(entries, e)
					}
				}
				return entries, nil
			}
			if old, ok := latest[e.Key()]; !ok || e.Revision() > old.Revision() {
				latest[e.Key()] = e
			}
		}
	}
}

// cleanupContext is for undoing a partial write: it outlives the caller's
// cancellation, for a while.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// isMismatch reports whether err is a failed compare-and-set.
func isMismatch(err error) bool { return errors.Is(err, jetstream.ErrKeyRevisionMismatch) }

// checkNames wraps what validate finds wrong with a reference's names in
// ErrInvalidName.
func checkNames(validate func() error) error {
	if err := validate(); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalidName, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return nil
}

// maxJobKeyLength is the length of the longest job key of a valid
// reference.
var maxJobKeyLength = len(contracts.JobKeyOfTokens("")) + contracts.MaxJobTokensLength

// checkJobKey rejects a string that cannot be the KV key of a valid job
// reference.
func checkJobKey(key string) error {
	if tokens, ok := contracts.JobTokensOfKey(key); !ok || len(key) > maxJobKeyLength || strings.Count(tokens, ".") != 3 {
		return fmt.Errorf("%w: %s is not the key of a job", ErrInvalidName, contracts.QuoteName(key))
	}
	return nil
}
