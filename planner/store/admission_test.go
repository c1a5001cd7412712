package store

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
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
