package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
)

// Job is a job as stored.
type Job struct {
	// Ref names the job as the user gave it.
	Ref contracts.JobRef
	// Properties hold the job's secrets in clear in memory; they are sealed
	// at rest with the job's KV key as additional data.
	Properties contracts.JobProperties
	// Created is when the job was created: the anchor of a job without a
	// startTime. CreateJob stamps it when zero.
	Created time.Time
	// Anchored is when the job's schedule was last anchored: its creation, a
	// re-enable, or a change of schedule. CreateJob sets it to Created when
	// zero.
	Anchored time.Time
	// Ended is when the job became Completed or Faulted, nil before.
	Ended *time.Time
	// StateReason says why the scheduler changed the job's state (see
	// PauseJob); empty when a user set it. A write that does not carry it
	// (any PUT or PATCH) clears it.
	StateReason string
	// Updated is stamped on every write.
	Updated time.Time
	// Revision is the KV revision, set when read or written.
	Revision uint64
}

// jobRecord is a job's JSON at rest.
type jobRecord struct {
	Ref contracts.JobRef `json:"ref"`
	// Properties have their actions sealed.
	Properties contracts.JobProperties `json:"properties"`
	Created    time.Time               `json:"created"`
	Anchored   time.Time               `json:"anchored"`
	Ended      *time.Time              `json:"ended,omitempty"`
	Updated    time.Time               `json:"updated"`
	// StateReason is Job.StateReason.
	StateReason string `json:"stateReason,omitempty"`
	// CreateRevision is the KV revision of the job's first write; it is 0 in
	// that write itself, whose revision is not known before it is made.
	// Planners of earlier releases rank jobs by it to enforce the quota.
	CreateRevision uint64 `json:"createRevision,omitempty"`
}

// encodeJob returns the record of j with its secrets sealed for key.
func (s *Store) encodeJob(j Job, key string, createRevision uint64) ([]byte, error) {
	p := j.Properties // shallow: SealAction copies the action it seals
	p.Action = s.sealer.SealAction(j.Properties.Action, key)
	b, err := json.Marshal(jobRecord{
		Ref: j.Ref, Properties: p, Created: j.Created, Anchored: j.Anchored,
		Ended: j.Ended, Updated: j.Updated, CreateRevision: createRevision, StateReason: j.StateReason,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding job %s: %w", key, err)
	}
	return b, nil
}

// decodeJob reads a job record and opens its secrets, of either format
// (see seal.OpenStoredAction). An error names the key
// and never a secret.
func (s *Store) decodeJob(e jetstream.KeyValueEntry) (Job, error) { return s.decodeJobAs(e, true) }

// decodeJobAs reads a job record, opening its secrets when open is set and
// leaving them sealed otherwise.
func (s *Store) decodeJobAs(e jetstream.KeyValueEntry, open bool) (Job, error) {
	// Sealed, the properties are only read (see ListSealedJobs).
	r, ok := s.records.get(e.Key(), e.Revision(), open)
	if !ok {
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			return Job{}, fmt.Errorf("decoding job %s: %w", e.Key(), err)
		}
		s.records.put(e.Key(), e.Revision(), r)
	}
	if open {
		// Jobs written before format v2 open too; ResealJobs seals them again.
		action, _, err := s.sealer.OpenStoredAction(r.Properties.Action, e.Key())
		if err != nil {
			return Job{}, fmt.Errorf("reading job %s: %w", e.Key(), err)
		}
		r.Properties.Action = action
	}
	return Job{
		Ref: r.Ref, Properties: r.Properties, Created: r.Created, Anchored: r.Anchored,
		Ended: r.Ended, Updated: r.Updated, Revision: e.Revision(), StateReason: r.StateReason,
	}, nil
}

func checkJobRef(ref contracts.JobRef) error { return checkNames(ref.Validate) }

// stamp fills the times CreateJob and UpdateJob are responsible for.
func (s *Store) stamp(j *Job) {
	now := s.now()
	if j.Created.IsZero() {
		j.Created = now
	}
	if j.Anchored.IsZero() {
		j.Anchored = j.Created
	}
	j.Created, j.Anchored, j.Updated = timestamp(j.Created), timestamp(j.Anchored), timestamp(now)
	if j.Ended != nil {
		ended := timestamp(*j.Ended)
		j.Ended = &ended
	}
	j.Properties = j.Properties.Clone() // the caller's copy and ours share nothing
}

// GetJob returns the job ref names, in any case, with its secrets opened.
func (s *Store) GetJob(ctx context.Context, ref contracts.JobRef) (Job, error) {
	if err := checkJobRef(ref); err != nil {
		return Job{}, err
	}
	return s.GetJobByKey(ctx, ref.KVKey())
}

// GetJobByKey returns the job stored under a KV key (contracts.JobRef.KVKey),
// for callers that hold only the key, such as the timer's entries.
func (s *Store) GetJobByKey(ctx context.Context, key string) (Job, error) {
	if err := checkJobKey(key); err != nil {
		return Job{}, err
	}
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Job{}, fmt.Errorf("reading job %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("reading job %s: %w", key, err)
	}
	return s.decodeJob(e)
}

// CreateJob writes a new job into an existing collection and returns it with
// its revision. It returns ErrNotFound when the collection does not exist
// (a job is never left in a missing collection), ErrExists when a job of
// that name exists, and ErrQuotaExceeded when the collection already holds
// maxJobs jobs; maxJobs <= 0 means no limit. It reads the collection first;
// a caller that read it already, and took maxJobs from it, calls
// CreateJobIn.
func (s *Store) CreateJob(ctx context.Context, j Job, maxJobs int) (Job, error) {
	for attempt := 1; ; attempt++ {
		saved, err := s.CreateJobIn(ctx, j, Admission{MaxJobs: maxJobs})
		if !errors.Is(err, ErrConflict) || attempt == createJobAttempts {
			return saved, err
		}
	}
}

// createJobAttempts bounds how often CreateJob reads the collection again
// when it changed while the job was being written.
const createJobAttempts = 10

// CreateJobIn writes a new job into an existing collection, if the
// collection is still at a.CollectionRevision (ErrConflict when it changed,
// ErrNotFound when it is gone or being deleted) and holds fewer than
// a.MaxJobs jobs (ErrQuotaExceeded), and returns it with its revision;
// ErrExists when a job of that name exists.
//
// The quota is exact under concurrent creates by any number of planners,
// and a job never outlives its collection, with one write per job (see
// Admission): the job is written, the collection's watch tells what the
// collection held just before the write, and a job that may not stay is
// deleted again, having been visible for that moment.
func (s *Store) CreateJobIn(ctx context.Context, j Job, a Admission) (Job, error) {
	if err := checkJobRef(j.Ref); err != nil {
		return Job{}, err
	}
	key, collKey := j.Ref.KVKey(), j.Ref.CollectionRef().KVKey()
	s.stamp(&j)
	value, err := s.encodeJob(j, key, 0)
	if err != nil {
		return Job{}, err
	}
	if a.CollectionRevision == 0 {
		coll, err := s.GetCollection(ctx, j.Ref.CollectionRef())
		if err != nil {
			return Job{}, fmt.Errorf("creating job %s: %w", key, err)
		}
		a.CollectionRevision = coll.Revision
	}
	watch, err := s.admissions.acquire(ctx, collKey, j.Ref.CollectionRef().JobsKVPrefix())
	if err != nil {
		return Job{}, fmt.Errorf("creating job %s: %w", key, err)
	}
	defer watch.release()
	waiter, done := watch.await(key)
	defer done()
	rev, err := s.kv.Create(ctx, key, value)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return Job{}, fmt.Errorf("creating job %s: %w", key, ErrExists)
	}
	if err != nil {
		return Job{}, fmt.Errorf("creating job %s: %w", key, err)
	}
	// From here on the job exists: every refusal deletes it again.
	v, err := watch.wait(ctx, waiter, rev)
	switch {
	case err != nil:
		err = fmt.Errorf("admitting it: %w", err)
	case v.collection == 0:
		err = fmt.Errorf("collection %s is gone: %w", collKey, ErrNotFound)
	case v.collection != a.CollectionRevision:
		err = s.collectionChanged(ctx, collKey)
	case a.MaxJobs > 0 && v.jobsBefore >= a.MaxJobs:
		err = fmt.Errorf("collection %s already holds %d jobs, its limit: %w", collKey, v.jobsBefore, ErrQuotaExceeded)
	}
	if err != nil {
		return Job{}, fmt.Errorf("creating job %s: %w", key, s.undoCreate(ctx, key, rev, err))
	}
	j.Revision = rev
	return j, nil
}

// collectionChanged tells why a new job found its collection at another
// revision than its creator read: ErrNotFound when the collection is gone or
// being deleted, else ErrConflict.
func (s *Store) collectionChanged(ctx context.Context, collKey string) error {
	_, r, err := s.getCollection(ctx, collKey)
	switch {
	case errors.Is(err, ErrNotFound):
		return err
	case err == nil && r.Deleting:
		return fmt.Errorf("collection %s is being deleted: %w", collKey, ErrNotFound)
	}
	return fmt.Errorf("collection %s changed since it was read: %w", collKey, ErrConflict)
}

// undoCreate deletes the job a failed CreateJob wrote, if it is still at the
// revision written, and returns cause (joined with the failure to undo, if
// any).
func (s *Store) undoCreate(ctx context.Context, key string, rev uint64, cause error) error {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	err := s.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	if err == nil || isMismatch(err) {
		return cause
	}
	return errors.Join(cause, fmt.Errorf("deleting job %s again: %w", key, err))
}

// UpdateJob replaces the job if its revision is still expected and returns
// it with its new revision. It returns ErrConflict when the job changed since
// (or expected is 0), and ErrNotFound when it does not exist. Zero Created
// and Anchored times are kept from the stored job; Updated is stamped.
func (s *Store) UpdateJob(ctx context.Context, j Job, expected uint64) (Job, error) {
	if err := checkJobRef(j.Ref); err != nil {
		return Job{}, err
	}
	key := j.Ref.KVKey()
	cur, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Job{}, fmt.Errorf("updating job %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("updating job %s: %w", key, err)
	}
	if cur.Revision() != expected {
		return Job{}, fmt.Errorf("updating job %s: at revision %d, not %d: %w", key, cur.Revision(), expected, ErrConflict)
	}
	var stored jobRecord
	if err := json.Unmarshal(cur.Value(), &stored); err != nil {
		return Job{}, fmt.Errorf("decoding job %s: %w", key, err)
	}
	if j.Created.IsZero() {
		j.Created = stored.Created
	}
	if j.Anchored.IsZero() {
		j.Anchored = stored.Anchored
	}
	s.stamp(&j)
	value, err := s.encodeJob(j, key, cmp.Or(stored.CreateRevision, cur.Revision()))
	if err != nil {
		return Job{}, err
	}
	rev, err := s.update(ctx, "job", key, value, expected)
	if err != nil {
		return Job{}, err
	}
	j.Revision = rev
	return j, nil
}

// endJobAttempts bounds how often EndJob tries again when the job changed
// while it was being ended.
const endJobAttempts = 5

// EndJob makes an enabled job Completed or Faulted (state), ended at ended,
// and reports whether it did: a job that is not enabled (disabled, or ended
// already) or that does not exist is left as it is. Only the state and the
// end time change, at rest: the job's sealed secrets are not opened.
func (s *Store) EndJob(ctx context.Context, ref contracts.JobRef, state contracts.JobState, ended time.Time) (bool, error) {
	return s.EndJobAt(ctx, ref, 0, state, ended)
}

// EndJobAt is EndJob for a caller that last saw the job at revision: when
// the store decoded the job at that revision (its watch did), the job is
// ended from that record without reading it again, on condition that it is
// still at that revision; otherwise, or when it changed since, as EndJob
// does. A revision of 0 is EndJob.
func (s *Store) EndJobAt(ctx context.Context, ref contracts.JobRef, revision uint64, state contracts.JobState, ended time.Time) (bool, error) {
	if err := checkJobRef(ref); err != nil {
		return false, err
	}
	key := ref.KVKey()
	if revision > 0 {
		// Shared with the cache: end changes none of what the record's
		// fields point to, only fields of its own copy. A job not enabled
		// at that revision is read again: it may have been enabled since.
		if r, ok := s.records.get(key, revision, false); ok && r.Properties.State == contracts.JobStateEnabled {
			done, err := s.end(ctx, key, r, revision, state, ended)
			if !isMismatch(err) {
				return done, err
			}
		}
	}
	for range endJobAttempts {
		e, err := s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("ending job %s: %w", key, err)
		}
		var r jobRecord
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			return false, fmt.Errorf("decoding job %s: %w", key, err)
		}
		done, err := s.end(ctx, key, r, e.Revision(), state, ended)
		if isMismatch(err) {
			continue // changed meanwhile: look again
		}
		return done, err
	}
	return false, fmt.Errorf("ending job %s: it changed on each of %d attempts: %w", key, endJobAttempts, ErrConflict)
}

// end writes record r of the job at key, read at revision, in state, ended
// at ended, on condition that the job is still at that revision; false
// without a write when the job is not enabled. A mismatch error means the
// job changed since.
func (s *Store) end(ctx context.Context, key string, r jobRecord, revision uint64, state contracts.JobState, ended time.Time) (bool, error) {
	at := timestamp(ended)
	return s.changeEnabled(ctx, key, r, revision, "ending", func(r *jobRecord) { r.Properties.State, r.Ended = state, &at })
}

// changeEnabled applies change to the record r of an enabled job, read at
// revision, and writes it on condition that the job is still at that
// revision; false without a write when the job is not enabled. A mismatch
// error (the job changed since) is the KV's own, for the caller to tell;
// doing names the change in other errors ("ending").
func (s *Store) changeEnabled(ctx context.Context, key string, r jobRecord, revision uint64, doing string, change func(*jobRecord)) (bool, error) {
	if r.Properties.State != contracts.JobStateEnabled {
		return false, nil
	}
	change(&r)
	r.Updated = timestamp(s.now())
	r.CreateRevision = cmp.Or(r.CreateRevision, revision)
	value, err := json.Marshal(r)
	if err != nil {
		return false, fmt.Errorf("encoding job %s: %w", key, err)
	}
	rev, err := s.kv.Update(ctx, key, value, revision)
	if err != nil {
		if isMismatch(err) {
			return false, err
		}
		return false, fmt.Errorf("%s job %s: %w", doing, key, err)
	}
	// r was decoded from the bucket and changed only in fields that encode
	// and decode to themselves: it is what decoding value gives, so the
	// watch that brings the change back need not decode it.
	s.records.put(key, rev, r)
	return true, nil
}

// DeleteJob deletes the job ref names (ErrNotFound when it does not exist).
func (s *Store) DeleteJob(ctx context.Context, ref contracts.JobRef) error {
	if err := checkJobRef(ref); err != nil {
		return err
	}
	return s.deleteKey(ctx, "job", ref.KVKey())
}

// deleteKey deletes the value of key (ErrNotFound when there is none), at
// the revision read, so that a value deleted meanwhile is reported as not
// found rather than deleted twice. kind names the value in errors.
func (s *Store) deleteKey(ctx context.Context, kind, key string) error {
	for {
		e, err := s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("deleting %s %s: %w", kind, key, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("deleting %s %s: %w", kind, key, err)
		}
		err = s.kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
		if !isMismatch(err) {
			if err != nil {
				return fmt.Errorf("deleting %s %s: %w", kind, key, err)
			}
			return nil
		}
	}
}

// ListJobs returns the jobs of the collection with their secrets opened,
// sorted by name (case-insensitive). It does not check that the collection
// exists: a missing one has no jobs.
func (s *Store) ListJobs(ctx context.Context, ref contracts.CollectionRef) ([]Job, error) {
	return s.listJobs(ctx, ref, true)
}

// ListSealedJobs returns the jobs of the collection as ListJobs does, but
// with their secrets left sealed (a secret that is set holds its sealed
// value, one that is not is empty): for listings that show no secret. It
// spares opening each, and copying each from the store's cache of decoded
// jobs: the jobs' properties are shared, and must not be changed (clone
// them first).
func (s *Store) ListSealedJobs(ctx context.Context, ref contracts.CollectionRef) ([]Job, error) {
	return s.listJobs(ctx, ref, false)
}

func (s *Store) listJobs(ctx context.Context, ref contracts.CollectionRef, open bool) ([]Job, error) {
	if err := checkCollectionRef(ref); err != nil {
		return nil, err
	}
	entries, err := s.scan(ctx, ref.JobsKVPrefix()+"*", false)
	if err != nil {
		return nil, err
	}
	jobs := make([]Job, 0, len(entries))
	for _, e := range entries {
		j, err := s.decodeJobAs(e, open)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	sortByName(jobs)
	return jobs, nil
}

// sortByName sorts jobs by name, case-insensitively, lower-casing each name
// once.
func sortByName(jobs []Job) {
	type keyed struct {
		lower string
		i     int
	}
	keys := make([]keyed, len(jobs))
	for i, j := range jobs {
		keys[i] = keyed{strings.ToLower(j.Ref.Job), i}
	}
	slices.SortFunc(keys, func(a, b keyed) int { return strings.Compare(a.lower, b.lower) })
	sorted := make([]Job, len(jobs))
	for n, k := range keys {
		sorted[n] = jobs[k.i]
	}
	copy(jobs, sorted)
}

// CountJobs returns the number of jobs in the collection, reading keys only.
func (s *Store) CountJobs(ctx context.Context, ref contracts.CollectionRef) (int, error) {
	if err := checkCollectionRef(ref); err != nil {
		return 0, err
	}
	entries, err := s.scan(ctx, ref.JobsKVPrefix()+"*", true)
	if err != nil {
		return 0, err
	}
	return len(entries), nil
}

// resealAttempts bounds how often ResealJobs reads a job again that changed
// while it was being sealed again.
const resealAttempts = 5

// ResealJobs seals again, in format v2, the secrets of every job that a
// planner before that format sealed in format v1 (bound to the job and the
// field only, not to where they are sent; see seal.OpenStoredAction), and
// returns how many jobs it rewrote. Only the sealed values change: the rest
// of the record is written back as read, at the revision read, and a job
// changed meanwhile is read again. It is idempotent: once no job holds a v1
// value it rewrites nothing, and planners that run it at the same time
// rewrite each job once between them. Jobs are read one at a time from a
// watch of the bucket, never all at once.
func (s *Store) ResealJobs(ctx context.Context) (int, error) {
	w, err := s.kv.Watch(ctx, jobsFilter, jetstream.IgnoreDeletes())
	if err != nil {
		return 0, fmt.Errorf("resealing jobs: %w", err)
	}
	defer w.Stop()
	var (
		n, failed int
		first     error
	)
	for {
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("resealing jobs: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return n, errors.New("resealing jobs: the watcher stopped early")
			}
			if e == nil { // every job present at the start has been seen
				if failed > 0 {
					return n, fmt.Errorf("%d jobs could not be resealed, the first: %w", failed, first)
				}
				return n, nil
			}
			if !bytes.Contains(e.Value(), []byte(seal.PrefixV1)) {
				continue
			}
			// One job that does not open (another key, say) does not keep
			// the others from being resealed.
			switch done, err := s.resealJob(ctx, e); {
			case err != nil:
				if failed++; first == nil {
					first = err
				}
			case done:
				n++
			}
		}
	}
}

// resealJob rewrites the job in e with its format v1 secrets sealed as v2,
// reading it again while it changes, and reports whether it rewrote it.
func (s *Store) resealJob(ctx context.Context, e jetstream.KeyValueEntry) (bool, error) {
	key := e.Key()
	for range resealAttempts {
		var r jobRecord
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			return false, fmt.Errorf("decoding job %s: %w", key, err)
		}
		action, v1, err := s.sealer.OpenStoredAction(r.Properties.Action, key)
		if err != nil {
			return false, fmt.Errorf("resealing job %s: %w", key, err)
		}
		if v1 == 0 {
			return false, nil
		}
		r.Properties.Action = s.sealer.SealAction(action, key)
		r.CreateRevision = cmp.Or(r.CreateRevision, e.Revision()) // its rank among the collection's jobs stays
		value, err := json.Marshal(r)
		if err != nil {
			return false, fmt.Errorf("encoding job %s: %w", key, err)
		}
		_, err = s.kv.Update(ctx, key, value, e.Revision())
		if err == nil {
			return true, nil
		}
		if !isMismatch(err) {
			return false, fmt.Errorf("resealing job %s: %w", key, err)
		}
		// Changed meanwhile (rewritten by another planner, updated, ended or
		// deleted): look again.
		if e, err = s.kv.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, nil
		} else if err != nil {
			return false, fmt.Errorf("resealing job %s: %w", key, err)
		}
	}
	return false, fmt.Errorf("resealing job %s: it changed on each of %d attempts: %w", key, resealAttempts, ErrConflict)
}
