package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A creator whose write the collection's watch did not reach in time stops
// the watch; another creator waiting on it is told of a transient fault, to
// try again on a new watch, not of an error of its own.
func TestACreatorWaitingOnAWatchStoppedByAnotherMayTryAgain(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	mustPutCollection(t, s, collRef)
	w, err := s.admissions.acquire(ctx, collRef.KVKey(), collRef.JobsKVPrefix())
	if err != nil {
		t.Fatal(err)
	}
	defer w.release()
	waiter, done := w.await(collRef.Job("waiting").KVKey())
	defer done()
	w.forget()
	w.stop() // as wait does for the creator it timed out
	_, err = w.wait(ctx, waiter, 1<<40)
	if !errors.Is(err, nats.ErrDisconnected) {
		t.Fatalf("err = %v, want a transient fault (nats.ErrDisconnected)", err)
	}
}

// A write of a job key as a collection's watch reads it.
type write struct {
	key string
	rev uint64
	op  jetstream.KeyValueOp
}

func (e write) Bucket() string                  { return "jobs" }
func (e write) Key() string                     { return e.key }
func (e write) Value() []byte                   { return nil }
func (e write) Revision() uint64                { return e.rev }
func (e write) Created() time.Time              { return time.Time{} }
func (e write) Delta() uint64                   { return 0 }
func (e write) Operation() jetstream.KeyValueOp { return e.op }

func newWatch() *collectionWatch {
	return &collectionWatch{
		key: collRef.KVKey(), stopped: make(chan struct{}),
		jobs: make(map[string]struct{}), waiting: make(map[string][]*admissionWaiter),
	}
}

// The bucket keeps one write of a key: a job deleted and created again at
// once may reach a watch that fell behind as its first create and then the
// second, the delete between them gone. The second is still a create, and
// its creator is told what the collection held without the job.
func TestACreateAfterADeleteTheWatchDidNotReadIsStillACreate(t *testing.T) {
	t.Parallel()
	w := newWatch()
	job, other := collRef.Job("late").KVKey(), collRef.Job("other").KVKey()
	w.apply(write{w.key, 2, jetstream.KeyValuePut})
	w.apply(write{other, 3, jetstream.KeyValuePut})
	w.apply(write{job, 4, jetstream.KeyValuePut})
	waiter, done := w.await(job)
	defer done()
	// The delete at 5 was replaced by the create at 6 before the watch read it.
	w.apply(write{job, 6, jetstream.KeyValuePut})
	v, err := w.wait(t.Context(), waiter, 6)
	if err != nil {
		t.Fatal(err)
	}
	if want := (seen{revision: 6, jobsBefore: 1, collection: 2}); v != want {
		t.Fatalf("seen %+v, want %+v", v, want)
	}
	if len(w.jobs) != 2 {
		t.Fatalf("the watch holds %d jobs, want 2", len(w.jobs))
	}
}

// A create written over by another client before the watch read it: what
// the collection held then is not known, and the creator is told at once
// that the job changed, not after the watch's time runs out.
func TestACreateReplacedBeforeTheWatchReadItIsAConflict(t *testing.T) {
	t.Parallel()
	w := newWatch()
	job := collRef.Job("raced").KVKey()
	w.apply(write{w.key, 2, jetstream.KeyValuePut})
	waiter, done := w.await(job)
	defer done()
	// The create at 3 was replaced by an update at 4.
	w.apply(write{job, 4, jetstream.KeyValuePut})
	ctx, cancel := context.WithTimeout(t.Context(), admissionWait/2)
	defer cancel()
	if _, err := w.wait(ctx, waiter, 3); !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
}
