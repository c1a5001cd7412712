package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
)

// Admission is what a new job must find, at the instant it is written, to be
// kept: its collection at the revision the caller read its quota from, and
// fewer than MaxJobs jobs already there.
type Admission struct {
	// CollectionRevision is the revision of the collection record the
	// caller read (Collection.Revision). A job written after the collection
	// changed, its deletion begun, or its quota changed, is deleted again
	// and ErrConflict returned, so that the caller reads it again. 0: the
	// revision CreateJob reads itself.
	CollectionRevision uint64
	// MaxJobs is the most jobs the collection may hold; <= 0 means no
	// limit.
	MaxJobs int
}

// How the store knows what a collection held just before a job was written.
//
// Each planner keeps, for every collection jobs are being created in, a
// watch of the collection's record and of its job keys (keys and revisions,
// no values), in the order of the bucket's stream. When the watch reaches
// the write that creates a job, it notes how many jobs the
// collection held just before it and the revision its record was at: a
// function of the stream alone, so whichever planner made the write, it
// sees what any other would. The creator keeps its job only if the
// collection was then at the revision it read its quota from and held fewer
// than its quota; otherwise it deletes the job again.
//
// That makes the quota exact, and no job outlive its collection, with one
// write per create and nothing serialised between concurrent creators:
//   - Suppose the collection held more than MaxJobs kept jobs at once; the
//     last of them written saw all the others just before it, and was not
//     kept. A job refused counts for the moment it exists, so creators
//     racing for the last places may all lose, never all win.
//   - DeleteCollection marks the record first: a job written after the mark
//     finds another revision and goes; one written before it is in the
//     listing of jobs the deletion makes after the mark.
//   - A change of quota is written before the jobs are counted against it
//     (see the API): a job written after the change finds the new revision
//     and its creator reads the new quota.
//
// The bucket keeps one write of each key: a write made before a watch read
// the previous write of the same key takes that one's place, and the watch
// never sees it. A watch reads a write soon after it is made, but on a
// machine starved of CPU one has missed a job's delete followed at once by
// a create of the same job. What such a miss does:
//   - The creator's own key: a delete missed before its create does not
//     matter, the creator knows its write made the key (see apply); a
//     create replaced by another client's write before the watch read it is
//     given up with ErrConflict.
//   - Another job created and deleted again before the watch read either
//     is not counted at the writes between; it was refused, or deleted at
//     once, and the collection holds no more than its quota once it is gone.
//   - Another job deleted and created again is counted at the writes
//     between: a create there may be refused for the quota one job early,
//     never kept one job over it.
//   - Of two changes of the collection's record in that moment, a job
//     written between them finds the one before both.
//
// A collection's watch starts with the first create in it (its first
// values are every job key of the collection) and stops after
// admissionIdle without creates.
const admissionIdle = 2 * time.Minute

// admissionWait bounds how long a creator waits for its collection's watch
// to reach its write before giving the job up.
const admissionWait = 5 * time.Second

// errAdmissionLost: the watch a creator waited on stopped (the connection
// was lost, the watch failed); the job is given up and the create can be
// tried again, with a new watch. It wraps nats.ErrDisconnected, so that it
// reads as the transient fault it is.
var errAdmissionLost = fmt.Errorf("the watch of the collection stopped before the job was admitted: %w", nats.ErrDisconnected)

// CollectionForCreate returns the collection ref names, as GetCollection
// does, but from memory while the store's watch of the collection (see
// Admission) has seen no change since it was last read: for creating a job
// in it, which checks that the collection is still at the revision read
// when the job is written. The watch may lag behind the bucket, so the
// collection returned may be out of date; a job created with it is then
// refused with ErrConflict, by which time the watch has seen the change,
// and the next read is fresh. The collection returned is shared: do not
// change it.
func (s *Store) CollectionForCreate(ctx context.Context, ref contracts.CollectionRef) (Collection, error) {
	if err := checkCollectionRef(ref); err != nil {
		return Collection{}, err
	}
	w, err := s.admissions.acquire(ctx, ref.KVKey(), ref.JobsKVPrefix())
	if err != nil {
		return Collection{}, err
	}
	defer w.release()
	w.mu.Lock()
	c, ok := w.read, w.read.Revision != 0 && w.read.Revision == w.collection
	w.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err = s.GetCollection(ctx, ref)
	if err != nil {
		return Collection{}, err
	}
	w.mu.Lock()
	if c.Revision > w.read.Revision {
		w.read = c
	}
	w.mu.Unlock()
	return c, nil
}

// seen is what a collection's watch noted at a write of a job key.
type seen struct {
	revision uint64 // the write
	// jobsBefore is how many jobs the collection held just before it, and
	// collection the revision of the collection record then (0: none).
	jobsBefore int
	collection uint64
}

// admissions holds the collection watches of one Store.
type admissions struct {
	s       *Store
	mu      sync.Mutex
	watches map[string]*collectionWatch // by collection key
}

// collectionWatch follows one collection's record and job keys.
type collectionWatch struct {
	a       *admissions
	key     string // the collection's key
	ready   chan struct{}
	stopped chan struct{} // closed when the watch ends; err says why
	err     error
	stop    context.CancelFunc

	mu         sync.Mutex
	jobs       map[string]struct{} // the job keys that hold a job
	collection uint64              // the record's revision, 0 when absent
	read       Collection          // the collection as last read (CollectionForCreate)
	waiting    map[string][]*admissionWaiter
	users      int
	idle       *time.Timer
}

// admissionWaiter receives what the watch saw of the writes of one job key.
type admissionWaiter struct {
	key    string
	mu     sync.Mutex
	seen   []seen
	signal chan struct{}
}

func (w *admissionWaiter) note(v seen) {
	w.mu.Lock()
	w.seen = append(w.seen, v)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// find returns what was seen of the write at revision, if it has been;
// replaced when the watch read a later write of the key instead, which took
// that one's place in the bucket before the watch read it.
func (w *admissionWaiter) find(revision uint64) (v seen, found, replaced bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.seen {
		if v.revision == revision {
			return v, true, false
		}
		replaced = replaced || v.revision > revision
	}
	return seen{}, false, replaced
}

// acquire returns the running watch of the collection at key, starting it
// when there is none, once it has read every job key already there. The
// caller must release it.
func (a *admissions) acquire(ctx context.Context, collKey, jobsPrefix string) (*collectionWatch, error) {
	a.mu.Lock()
	w := a.watches[collKey]
	if w == nil {
		var err error
		if w, err = a.start(collKey, jobsPrefix); err != nil {
			a.mu.Unlock()
			return nil, err
		}
		a.watches[collKey] = w
	}
	w.mu.Lock()
	w.users++
	if w.idle != nil {
		w.idle.Stop()
		w.idle = nil
	}
	w.mu.Unlock()
	a.mu.Unlock()
	select {
	case <-w.ready:
		return w, nil
	case <-w.stopped:
		w.release()
		return nil, fmt.Errorf("watching collection %s: %w", collKey, w.err)
	case <-ctx.Done():
		w.release()
		return nil, fmt.Errorf("watching collection %s: %w", collKey, ctx.Err())
	}
}

// start begins the watch of a collection; a.mu is held.
func (a *admissions) start(collKey, jobsPrefix string) (*collectionWatch, error) {
	ctx, stop := context.WithCancel(context.Background())
	kw, err := a.s.kv.WatchFiltered(ctx, []string{collKey, jobsPrefix + "*"}, jetstream.MetaOnly())
	if err != nil {
		stop()
		return nil, fmt.Errorf("watching collection %s: %w", collKey, err)
	}
	w := &collectionWatch{
		a: a, key: collKey, ready: make(chan struct{}), stopped: make(chan struct{}), stop: stop,
		jobs: make(map[string]struct{}), waiting: make(map[string][]*admissionWaiter),
	}
	// A watch may miss writes while the connection is down and take a
	// while to notice: it ends when the connection is lost, and the next
	// create starts another.
	var lost chan nats.Status
	if nc := a.s.js.Conn(); nc != nil {
		lost = nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	}
	go w.run(ctx, kw, lost)
	return w, nil
}

func (w *collectionWatch) run(ctx context.Context, kw jetstream.KeyWatcher, lost chan nats.Status) {
	defer func() { _ = kw.Stop() }()
	if lost != nil {
		defer w.a.s.js.Conn().RemoveStatusListener(lost)
	}
	initial := true
	for {
		select {
		case <-ctx.Done():
			// Stopped idle, with no creator waiting, or by a creator whose
			// write it did not reach in time: those waiting with it may try
			// again, on a new watch.
			w.end(errAdmissionLost)
			return
		case <-lost:
			w.end(errAdmissionLost)
			return
		case e, ok := <-kw.Updates():
			if !ok {
				w.end(errAdmissionLost)
				return
			}
			if e == nil {
				if initial {
					initial = false
					close(w.ready)
				}
				continue
			}
			w.apply(e)
		}
	}
}

// apply follows one write of the collection's record or of a job key.
//
// The bucket keeps one write of each key: a write made before the watch
// read the one before it of the same key takes its place, and the watch
// never sees that one. A put of a key the watch holds is therefore an
// update, or a create whose delete before it the watch did not read; only
// the creator of the revision, which knows that its write made the key,
// looks the note up, and counts the jobs other than its own. (What else a
// watch that falls behind may miss is in Admission's notes.)
func (w *collectionWatch) apply(e jetstream.KeyValueEntry) {
	put := e.Operation() == jetstream.KeyValuePut
	w.mu.Lock()
	defer w.mu.Unlock()
	key := e.Key()
	if key == w.key {
		w.collection = 0
		if put {
			w.collection = e.Revision()
		}
		return
	}
	if put {
		w.jobs[key] = struct{}{}
	} else {
		delete(w.jobs, key)
	}
	waiting := w.waiting[key]
	if len(waiting) == 0 {
		return
	}
	v := seen{revision: e.Revision(), jobsBefore: len(w.jobs), collection: w.collection}
	if put {
		v.jobsBefore-- // the key itself
	}
	for _, waiter := range waiting {
		waiter.note(v)
	}
}

// end records why the watch stopped and forgets it.
func (w *collectionWatch) end(err error) {
	w.forget()
	w.err = err
	close(w.stopped)
}

// forget makes the next create start a new watch.
func (w *collectionWatch) forget() {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	if w.a.watches[w.key] == w {
		delete(w.a.watches, w.key)
	}
}

// release ends one use; the watch stops after admissionIdle without one.
func (w *collectionWatch) release() {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users--
	if w.users == 0 {
		w.idle = time.AfterFunc(admissionIdle, w.stopIfIdle)
	}
}

func (w *collectionWatch) stopIfIdle() {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.users > 0 {
		return
	}
	if w.a.watches[w.key] == w {
		delete(w.a.watches, w.key)
	}
	w.stop()
}

// await registers interest in the writes of a job key; the returned
// function ends it.
func (w *collectionWatch) await(jobKey string) (*admissionWaiter, func()) {
	waiter := &admissionWaiter{key: jobKey, signal: make(chan struct{}, 1)}
	w.mu.Lock()
	w.waiting[jobKey] = append(w.waiting[jobKey], waiter)
	w.mu.Unlock()
	return waiter, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		list := w.waiting[jobKey]
		for i, x := range list {
			if x == waiter {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.waiting, jobKey)
		} else {
			w.waiting[jobKey] = list
		}
	}
}

// wait returns what the watch saw just before the write of the job at
// revision.
func (w *collectionWatch) wait(ctx context.Context, waiter *admissionWaiter, revision uint64) (seen, error) {
	timeout := time.NewTimer(admissionWait)
	defer timeout.Stop()
	for {
		v, found, replaced := waiter.find(revision)
		switch {
		case found:
			return v, nil
		case replaced:
			// Written again (by another client) before the watch read the
			// create: what the collection held then is not known. The job
			// is now the other write's; its creator reads it again.
			return seen{}, fmt.Errorf("job %s was written again before the watch of collection %s read its creation: %w", waiter.key, w.key, ErrConflict)
		}
		select {
		case <-waiter.signal:
		case <-w.stopped:
			if v, found, _ := waiter.find(revision); found {
				return v, nil
			}
			return seen{}, w.err
		case <-timeout.C:
			// Something is wrong with this watch: the next create starts
			// another.
			w.forget()
			w.stop()
			return seen{}, fmt.Errorf("the watch of collection %s did not reach the job's write within %s: %w", w.key, admissionWait, nats.ErrTimeout)
		case <-ctx.Done():
			return seen{}, ctx.Err()
		}
	}
}
