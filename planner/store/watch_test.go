package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
)

// next receives one change or fails the test.
func next(t *testing.T, changes <-chan Change) Change {
	t.Helper()
	select {
	case c, ok := <-changes:
		if !ok {
			t.Fatal("changes closed")
		}
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change within 10s")
	}
	return Change{}
}

func TestWatchJobs(t *testing.T) {
	t.Parallel()

	t.Run("current jobs first, then puts and deletes", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		for _, name := range []string{"a", "b", "gone"} {
			if _, err := s.CreateJob(ctx, newJob(collRef.Job(name)), 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeleteJob(ctx, collRef.Job("gone")); err != nil {
			t.Fatal(err)
		}

		changes, ready, err := s.WatchJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		initial := map[string]bool{}
		for len(initial) < 2 {
			c := next(t, changes)
			if c.Deleted || c.Err != nil || c.Job == nil {
				t.Fatalf("initial change %+v", c)
			}
			if c.Job.Properties.Action.QueueMessage.SASToken != "QUEUE-SAS-TOKEN" || c.Key != c.Job.Ref.KVKey() || c.Revision != c.Job.Revision {
				t.Fatalf("initial change %+v", c)
			}
			initial[c.Job.Ref.Job] = true
		}
		if !initial["a"] || !initial["b"] {
			t.Fatalf("initial jobs %v", initial)
		}
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			t.Fatal("ready not closed after the initial values")
		}

		created, err := s.CreateJob(ctx, newJob(collRef.Job("c")), 0)
		if err != nil {
			t.Fatal(err)
		}
		if c := next(t, changes); c.Deleted || c.Job == nil || c.Job.Ref.Job != "c" || c.Revision != created.Revision {
			t.Fatalf("put: %+v", c)
		}
		if err := s.DeleteJob(ctx, collRef.Job("A")); err != nil {
			t.Fatal(err)
		}
		if c := next(t, changes); !c.Deleted || c.Job != nil || c.Key != collRef.Job("a").KVKey() {
			t.Fatalf("delete: %+v", c)
		}
		// Collection records are not job changes: the next change is job d.
		other := contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: "other"}
		mustPutCollection(t, s, other)
		if _, err := s.CreateJob(ctx, newJob(other.Job("d")), 0); err != nil {
			t.Fatal(err)
		}
		if c := next(t, changes); c.Job == nil || c.Job.Ref.Job != "d" {
			t.Fatalf("after a collection write: %+v", c)
		}
	})

	t.Run("an empty bucket is ready at once", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		s, _ := setup(t)
		changes, ready, err := s.WatchJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			t.Fatal("ready not closed")
		}
		cancel()
		for range changes { // closed when ctx ends
		}
	})

	t.Run("a record sealed with another key is a change with an error", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		if _, err := s.CreateJob(ctx, newJob(collRef.Job("a")), 0); err != nil {
			t.Fatal(err)
		}
		other, err := Open(ctx, b.js, Config{Sealer: newSealer(t)})
		if err != nil {
			t.Fatal(err)
		}
		changes, _, err := other.WatchJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := next(t, changes)
		if c.Job != nil || !errors.Is(c.Err, seal.ErrCannotOpen) || c.Key != collRef.Job("a").KVKey() {
			t.Fatalf("change %+v", c)
		}
	})
}
