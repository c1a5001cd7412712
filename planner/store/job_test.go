package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/internal/transient"
)

func assertJob(t *testing.T, got, want Job) {
	t.Helper()
	if got.Ref != want.Ref {
		t.Errorf("ref %+v, want %+v", got.Ref, want.Ref)
	}
	if !reflect.DeepEqual(got.Properties, want.Properties) {
		t.Errorf("properties differ:\n got %+v\nwant %+v", got.Properties, want.Properties)
	}
	if !got.Created.Equal(want.Created) || !got.Anchored.Equal(want.Anchored) || !got.Updated.Equal(want.Updated) {
		t.Errorf("times: got %v/%v/%v, want %v/%v/%v", got.Created, got.Anchored, got.Updated, want.Created, want.Anchored, want.Updated)
	}
	if (got.Ended == nil) != (want.Ended == nil) || got.Ended != nil && !got.Ended.Equal(*want.Ended) {
		t.Errorf("ended %v, want %v", got.Ended, want.Ended)
	}
	if got.Revision != want.Revision {
		t.Errorf("revision %d, want %d", got.Revision, want.Revision)
	}
}

func TestJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a job is created, read, updated and deleted", func(t *testing.T) {
		t.Parallel()
		clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		s, _ := setup(t)
		s.now = func() time.Time { return clock }
		mustPutCollection(t, s, collRef)

		created, err := s.CreateJob(ctx, newJob(collRef.Job("Nightly")), 0)
		if err != nil {
			t.Fatal(err)
		}
		if !created.Created.Equal(clock) || !created.Anchored.Equal(clock) || !created.Updated.Equal(clock) || created.Revision == 0 {
			t.Fatalf("created = %+v", created)
		}
		want := newJob(collRef.Job("Nightly"))
		want.Created, want.Anchored, want.Updated, want.Revision = clock, clock, clock, created.Revision
		got, err := s.GetJob(ctx, collRef.Job("Nightly"))
		if err != nil {
			t.Fatal(err)
		}
		assertJob(t, got, want)

		clock = clock.Add(time.Hour)
		got.Properties.State = "Disabled"
		ended := clock
		got.Ended = &ended
		got.Created = time.Time{} // kept from the stored job
		updated, err := s.UpdateJob(ctx, got, got.Revision)
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.GetJob(ctx, collRef.Job("Nightly"))
		if err != nil {
			t.Fatal(err)
		}
		assertJob(t, again, updated)
		if again.Properties.State != "Disabled" || !again.Created.Equal(want.Created) || !again.Updated.Equal(clock) {
			t.Fatalf("after update: %+v", again)
		}

		if err := s.DeleteJob(ctx, collRef.Job("Nightly")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetJob(ctx, collRef.Job("Nightly")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get after delete: err = %v", err)
		}
		if err := s.DeleteJob(ctx, collRef.Job("Nightly")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: err = %v", err)
		}
		if _, err := s.UpdateJob(ctx, got, again.Revision); !errors.Is(err, ErrNotFound) {
			t.Fatalf("update after delete: err = %v", err)
		}
	})

	t.Run("names are case-insensitive and kept as given", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		if _, err := s.CreateJob(ctx, newJob(collRef.Job("MyJob")), 0); err != nil {
			t.Fatal(err)
		}
		upper := contracts.JobRef{Subscription: "SUB-1", ResourceGroup: "rg", Collection: "COLL", Job: "MYJOB"}
		got, err := s.GetJob(ctx, upper)
		if err != nil {
			t.Fatal(err)
		}
		if got.Ref.Job != "MyJob" || got.Ref.Collection != "Coll" {
			t.Fatalf("ref %+v, want the names as created", got.Ref)
		}
		if _, err := s.CreateJob(ctx, newJob(upper), 0); !errors.Is(err, ErrExists) {
			t.Fatalf("err = %v, want ErrExists", err)
		}
	})

	t.Run("a job is never created in a missing collection", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		if _, err := s.CreateJob(ctx, newJob(collRef.Job("a")), 10); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if n, _ := s.CountJobs(ctx, collRef); n != 0 {
			t.Fatalf("%d jobs in a missing collection", n)
		}
	})

	t.Run("the stored value holds none of the job's secrets", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		ref := collRef.Job("secretive")
		if _, err := s.CreateJob(ctx, newJob(ref), 0); err != nil {
			t.Fatal(err)
		}
		e, err := b.kv.Get(ctx, ref.KVKey())
		if err != nil {
			t.Fatal(err)
		}
		raw := string(e.Value())
		for _, secret := range secrets {
			if strings.Contains(raw, secret) {
				t.Errorf("stored value holds %q: %s", secret, raw)
			}
		}
		if n := strings.Count(raw, seal.Prefix); n != len(secrets) {
			t.Errorf("%d sealed values at rest, want %d", n, len(secrets))
		}
		if !strings.Contains(raw, `"username":"me"`) {
			t.Errorf("non-secret fields should stay readable: %s", raw)
		}
	})

	t.Run("a store with another key cannot read the secrets", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		ref := collRef.Job("secretive")
		if _, err := s.CreateJob(ctx, newJob(ref), 0); err != nil {
			t.Fatal(err)
		}
		other, err := Open(ctx, b.js, Config{Sealer: newSealer(t)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = other.GetJob(ctx, ref)
		if !errors.Is(err, seal.ErrCannotOpen) || !strings.Contains(err.Error(), ref.KVKey()) {
			t.Fatalf("err = %v, want ErrCannotOpen naming %s", err, ref.KVKey())
		}
		for _, secret := range secrets {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error quotes a secret: %v", err)
			}
		}
		if _, err := other.ListJobs(ctx, collRef); !errors.Is(err, seal.ErrCannotOpen) {
			t.Fatalf("list: err = %v, want ErrCannotOpen", err)
		}
	})

	t.Run("an update at an old revision is a conflict", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		j, err := s.CreateJob(ctx, newJob(collRef.Job("a")), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateJob(ctx, j, j.Revision); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateJob(ctx, j, j.Revision); !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})

	t.Run("concurrent updates at one revision: exactly one wins", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		j, err := s.CreateJob(ctx, newJob(collRef.Job("a")), 0)
		if err != nil {
			t.Fatal(err)
		}
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := s.UpdateJob(ctx, j, j.Revision)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, ErrConflict):
					conflicts.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || conflicts.Load() != 7 {
			t.Fatalf("%d wins, %d conflicts; want 1 and 7", wins.Load(), conflicts.Load())
		}
	})

	t.Run("jobs are listed by name and counted", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		other := contracts.CollectionRef{Subscription: "Sub-1", ResourceGroup: "RG", Collection: "Coll2"}
		mustPutCollection(t, s, other)
		for _, name := range []string{"charlie", "Alpha", "bravo"} {
			if _, err := s.CreateJob(ctx, newJob(collRef.Job(name)), 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateJob(ctx, newJob(other.Job("delta")), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteJob(ctx, collRef.Job("BRAVO")); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.ListJobs(ctx, collRef)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range jobs {
			names = append(names, j.Ref.Job)
			if j.Properties.Action.QueueMessage.SASToken != "QUEUE-SAS-TOKEN" {
				t.Errorf("listed job %s lacks its opened secret", j.Ref.Job)
			}
		}
		if want := []string{"Alpha", "charlie"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("listed %q, want %q", names, want)
		}
		if n, err := s.CountJobs(ctx, collRef); err != nil || n != 2 {
			t.Fatalf("count %d, %v; want 2", n, err)
		}
		sealed, err := s.ListSealedJobs(ctx, collRef)
		if err != nil || len(sealed) != 2 || sealed[0].Ref.Job != "Alpha" {
			t.Fatalf("sealed listing %v, %v", sealed, err)
		}
		for _, j := range sealed {
			if token := j.Properties.Action.QueueMessage.SASToken; !seal.IsSealed(token) {
				t.Errorf("job %s listed sealed holds %q, not its sealed secret", j.Ref.Job, token)
			}
		}
		// Listed again, from the cache of decoded jobs, the secrets open as before.
		again, err := s.ListJobs(ctx, collRef)
		if err != nil || again[0].Properties.Action.QueueMessage.SASToken != "QUEUE-SAS-TOKEN" {
			t.Fatalf("listed again: %v", err)
		}
	})

	t.Run("the input job is not aliased by the result", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		in := newJob(collRef.Job("a"))
		out, err := s.CreateJob(ctx, in, 0)
		if err != nil {
			t.Fatal(err)
		}
		out.Properties.Action.QueueMessage.SASToken = "changed"
		if in.Properties.Action.QueueMessage.SASToken != "QUEUE-SAS-TOKEN" {
			t.Fatal("changing the result changed the input")
		}
	})
}

func TestQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("eight concurrent creates with room for five: exactly five succeed", func(t *testing.T) {
		t.Parallel()
		// Several rounds, each in its own collection, to vary the interleaving.
		s, _ := setup(t)
		for round := range 5 {
			ref := contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: fmt.Sprintf("c%d", round)}
			mustPutCollection(t, s, ref)
			var ok, over atomic.Int32
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					_, err := s.CreateJob(ctx, newJob(ref.Job(fmt.Sprintf("job-%d", i))), 5)
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, ErrQuotaExceeded):
						over.Add(1)
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if ok.Load() != 5 || over.Load() != 3 {
				t.Fatalf("round %d: %d created, %d over quota; want 5 and 3", round, ok.Load(), over.Load())
			}
			if n, err := s.CountJobs(ctx, ref); err != nil || n != 5 {
				t.Fatalf("round %d: %d jobs stored, %v; want 5", round, n, err)
			}
		}
	})

	t.Run("planners with their own connections share the quota", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		stores := []*Store{s}
		for range 3 {
			_, js := testkit.JetStream(t, b.ns)
			o, err := Open(ctx, js, Config{Sealer: b.sealer})
			if err != nil {
				t.Fatal(err)
			}
			stores = append(stores, o)
		}
		var ok atomic.Int32
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				_, err := stores[i%len(stores)].CreateJob(ctx, newJob(collRef.Job(fmt.Sprintf("j%d", i))), 4)
				if err == nil {
					ok.Add(1)
				} else if !errors.Is(err, ErrQuotaExceeded) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 4 {
			t.Fatalf("%d created, want 4", ok.Load())
		}
	})

	t.Run("a full collection refuses a job until one is deleted", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		for _, name := range []string{"a", "b"} {
			if _, err := s.CreateJob(ctx, newJob(collRef.Job(name)), 2); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.CreateJob(ctx, newJob(collRef.Job("c")), 2)
		if !errors.Is(err, ErrQuotaExceeded) {
			t.Fatalf("err = %v, want ErrQuotaExceeded", err)
		}
		if _, err := s.GetJob(ctx, collRef.Job("c")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the refused job is stored: %v", err)
		}
		if err := s.DeleteJob(ctx, collRef.Job("a")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateJob(ctx, newJob(collRef.Job("c")), 2); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a job updated after a later one was created still counts first", func(t *testing.T) {
		t.Parallel()
		// Regression guard for ranking by the newest revision instead of the
		// first: the update gives "a" a revision above "b"'s.
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		a, err := s.CreateJob(ctx, newJob(collRef.Job("a")), 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateJob(ctx, newJob(collRef.Job("b")), 2); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if a, err = s.UpdateJob(ctx, a, a.Revision); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateJob(ctx, newJob(collRef.Job("c")), 2); !errors.Is(err, ErrQuotaExceeded) {
			t.Fatalf("err = %v, want ErrQuotaExceeded", err)
		}
	})
}

// A job is kept only while its collection is at the revision its creator
// read: one written after the collection changed goes again.
func TestAJobIsNotKeptInACollectionChangedSinceItWasRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setup(t)
	read := mustPutCollection(t, s, collRef)
	changed, err := s.PutCollection(ctx, read, read.Revision)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateJobIn(ctx, newJob(collRef.Job("late")), Admission{CollectionRevision: read.Revision, MaxJobs: 10})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if _, err := s.GetJob(ctx, collRef.Job("late")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the refused job is stored: %v", err)
	}
	if _, err := s.CreateJobIn(ctx, newJob(collRef.Job("late")), Admission{CollectionRevision: changed.Revision, MaxJobs: 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCollection(ctx, collRef); err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateJobIn(ctx, newJob(collRef.Job("gone")), Admission{CollectionRevision: changed.Revision})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if n, err := s.CountJobs(ctx, collRef); err != nil || n != 0 {
		t.Fatalf("%d jobs outlived their collection (%v)", n, err)
	}
}

func TestNoJobOutlivesItsCollection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setup(t)
	for round := range 5 {
		ref := contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: fmt.Sprintf("c%d", round)}
		mustPutCollection(t, s, ref)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					_, err := s.CreateJob(ctx, newJob(ref.Job(fmt.Sprintf("w%d-%d", w, i))), 0)
					if errors.Is(err, ErrNotFound) {
						return
					}
					if transient.Is(err) {
						continue // given up, as a loaded machine may: a client tries again
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		// Delete while the creators are busy.
		testkit.Eventually(t, 10*time.Second, func() bool {
			n, err := s.CountJobs(ctx, ref)
			return err == nil && n >= 8
		}, "the creators made no jobs")
		if err := s.DeleteCollection(ctx, ref); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if n, err := s.CountJobs(ctx, ref); err != nil || n != 0 {
			t.Fatalf("round %d: %d jobs outlived their collection (%v)", round, n, err)
		}
	}
}

func TestListingManyJobs(t *testing.T) {
	t.Parallel()
	// More jobs than the KV watcher buffers (256), written concurrently.
	ctx := context.Background()
	s, _ := setup(t)
	mustPutCollection(t, s, collRef)
	const n = 400
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.CreateJob(ctx, newJob(collRef.Job(fmt.Sprintf("job-%04d", i))), 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	jobs, err := s.ListJobs(ctx, collRef)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != n {
		t.Fatalf("listed %d jobs, want %d", len(jobs), n)
	}
	for i, j := range jobs {
		if want := fmt.Sprintf("job-%04d", i); j.Ref.Job != want {
			t.Fatalf("job %d is %s, want %s", i, j.Ref.Job, want)
		}
	}
	if c, err := s.CountJobs(ctx, collRef); err != nil || c != n {
		t.Fatalf("count %d, %v; want %d", c, err, n)
	}
	if err := s.DeleteCollection(ctx, collRef); err != nil {
		t.Fatal(err)
	}
	if c, err := s.CountJobs(ctx, collRef); err != nil || c != 0 {
		t.Fatalf("after delete: count %d, %v", c, err)
	}
}

func TestEndJob(t *testing.T) {
	t.Parallel()
	s, b := setup(t)
	ctx := context.Background()
	mustPutCollection(t, s, collRef)
	j, err := s.CreateJob(ctx, newJob(collRef.Job("ends")), 0)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	ended, err := s.EndJob(ctx, j.Ref, contracts.JobStateFaulted, at)
	if err != nil || !ended {
		t.Fatalf("EndJob: %v, %v", ended, err)
	}
	got, err := s.GetJob(ctx, j.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties.State != contracts.JobStateFaulted || got.Ended == nil || !got.Ended.Equal(at) || got.Revision == j.Revision {
		t.Errorf("after EndJob: state %s, ended %v", got.Properties.State, got.Ended)
	}
	// Everything else is as it was, the secrets still sealed at rest and
	// opening to the same values.
	want := j
	want.Properties.State, want.Ended, want.Revision, want.Updated = got.Properties.State, got.Ended, got.Revision, got.Updated
	assertJob(t, got, want)
	raw, err := b.kv.Get(ctx, j.Ref.KVKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"QUEUE-SAS-TOKEN", "ERROR-SB-KEY", "BASIC-PASSWORD"} {
		if strings.Contains(string(raw.Value()), secret) {
			t.Errorf("%s is in clear at rest", secret)
		}
	}

	again, err := s.EndJob(ctx, j.Ref, contracts.JobStateCompleted, at.Add(time.Hour))
	if err != nil || again {
		t.Errorf("ending an ended job: %v, %v", again, err)
	}
	if got, _ := s.GetJob(ctx, j.Ref); got.Properties.State != contracts.JobStateFaulted {
		t.Errorf("an ended job was ended again as %s", got.Properties.State)
	}
	disabled := newJob(collRef.Job("off"))
	disabled.Properties.State = contracts.JobStateDisabled
	if _, err := s.CreateJob(ctx, disabled, 0); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []contracts.JobRef{disabled.Ref, collRef.Job("missing")} {
		if ended, err := s.EndJob(ctx, ref, contracts.JobStateCompleted, at); err != nil || ended {
			t.Errorf("%s: %v, %v", ref.Job, ended, err)
		}
	}
}

// EndJobAt ends a job from the record decoded at the revision its caller
// saw, and reads the job again when it changed since that revision.
func TestEndJobAtARevisionSeen(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	mustPutCollection(t, s, collRef)
	at := time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)

	t.Run("a job still at the revision seen ends", func(t *testing.T) {
		j, err := s.CreateJob(ctx, newJob(collRef.Job("seen")), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetJob(ctx, j.Ref); err != nil { // decoded at its revision
			t.Fatal(err)
		}
		if ended, err := s.EndJobAt(ctx, j.Ref, j.Revision, contracts.JobStateCompleted, at); err != nil || !ended {
			t.Fatalf("EndJobAt: %v, %v", ended, err)
		}
		got, err := s.GetJob(ctx, j.Ref)
		if err != nil {
			t.Fatal(err)
		}
		want := j
		want.Properties.State, want.Ended, want.Revision, want.Updated = contracts.JobStateCompleted, &at, got.Revision, got.Updated
		assertJob(t, got, want)
	})
	t.Run("a job changed since the revision seen is read again", func(t *testing.T) {
		j, err := s.CreateJob(ctx, newJob(collRef.Job("changed")), 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetJob(ctx, j.Ref); err != nil {
			t.Fatal(err)
		}
		changed := j
		changed.Properties = j.Properties.Clone()
		changed.Properties.Action.QueueMessage.Message = "changed"
		if changed, err = s.UpdateJob(ctx, changed, j.Revision); err != nil {
			t.Fatal(err)
		}
		if ended, err := s.EndJobAt(ctx, j.Ref, j.Revision, contracts.JobStateFaulted, at); err != nil || !ended {
			t.Fatalf("EndJobAt: %v, %v", ended, err)
		}
		got, err := s.GetJob(ctx, j.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if got.Properties.State != contracts.JobStateFaulted || got.Properties.Action.QueueMessage.Message != "changed" {
			t.Errorf("after EndJobAt: state %s, message %q; want the change kept", got.Properties.State, got.Properties.Action.QueueMessage.Message)
		}
	})
	t.Run("a job disabled at the revision seen and enabled since ends", func(t *testing.T) {
		off := newJob(collRef.Job("reenabled"))
		off.Properties.State = contracts.JobStateDisabled
		j, err := s.CreateJob(ctx, off, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetJob(ctx, j.Ref); err != nil {
			t.Fatal(err)
		}
		on := j
		on.Properties.State = contracts.JobStateEnabled
		if _, err := s.UpdateJob(ctx, on, j.Revision); err != nil {
			t.Fatal(err)
		}
		if ended, err := s.EndJobAt(ctx, j.Ref, j.Revision, contracts.JobStateCompleted, at); err != nil || !ended {
			t.Fatalf("EndJobAt: %v, %v", ended, err)
		}
	})
}

// A job ended or paused is kept decoded at the revision written, exactly
// as decoding what was written gives it: the watch that brings the change
// back reads it from there.
func TestAChangedJobIsKeptDecodedAtItsNewRevision(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	ctx := context.Background()
	mustPutCollection(t, s, collRef)
	j, err := s.CreateJob(ctx, newJob(collRef.Job("ended")), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetJob(ctx, j.Ref); err != nil { // decoded at its revision
		t.Fatal(err)
	}
	at := time.Date(2026, 9, 1, 10, 0, 0, 123456789, time.UTC)
	if ended, err := s.EndJobAt(ctx, j.Ref, j.Revision, contracts.JobStateCompleted, at); err != nil || !ended {
		t.Fatalf("EndJobAt: %v, %v", ended, err)
	}
	e, err := s.kv.Get(ctx, j.Ref.KVKey())
	if err != nil {
		t.Fatal(err)
	}
	cached, ok := s.records.get(e.Key(), e.Revision(), false)
	if !ok {
		t.Fatal("the ended job is not kept decoded at the revision written")
	}
	var decoded jobRecord
	if err := json.Unmarshal(e.Value(), &decoded); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cached, decoded) {
		t.Errorf("kept %+v\ndecoding what was written gives %+v", cached, decoded)
	}
}
