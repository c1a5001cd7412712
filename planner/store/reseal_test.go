package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/seal/sealtest"
)

// rewriteAtRest changes the record of the job under key in the bucket, as
// an earlier planner or someone with access to the bucket would.
func rewriteAtRest(t *testing.T, b *bundle, key string, change func(*jobRecord)) {
	t.Helper()
	ctx := context.Background()
	e, err := b.kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var r jobRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		t.Fatal(err)
	}
	change(&r)
	value, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.kv.Put(ctx, key, value); err != nil {
		t.Fatal(err)
	}
}

func TestResealJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("jobs sealed in format v1 are read, and sealed again as v2 once", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		old, current := collRef.Job("old"), collRef.Job("current")
		for _, ref := range []contracts.JobRef{old, current} {
			if _, err := s.CreateJob(ctx, newJob(ref), 0); err != nil {
				t.Fatal(err)
			}
		}
		rewriteAtRest(t, b, old.KVKey(), func(r *jobRecord) {
			r.Properties.Action = sealtest.SealActionV1(b.sealer, newJob(old).Properties.Action, old.KVKey())
		})
		before, err := b.kv.Get(ctx, old.KVKey())
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(before.Value()), seal.PrefixV1); n != len(secrets) {
			t.Fatalf("%d v1 values at rest, want %d", n, len(secrets))
		}
		read, err := s.GetJob(ctx, old)
		if err != nil || !reflect.DeepEqual(read.Properties.Action, newJob(old).Properties.Action) {
			t.Fatalf("the v1 job reads as %+v (%v)", read.Properties.Action, err)
		}

		n, err := s.ResealJobs(ctx)
		if err != nil || n != 1 {
			t.Fatalf("resealed %d jobs (%v), want 1", n, err)
		}
		after, err := b.kv.Get(ctx, old.KVKey())
		if err != nil {
			t.Fatal(err)
		}
		raw := string(after.Value())
		if strings.Contains(raw, seal.PrefixV1) || strings.Count(raw, seal.Prefix) != len(secrets) {
			t.Fatalf("at rest after resealing: %s", raw)
		}
		again, err := s.GetJob(ctx, old)
		if err != nil || !reflect.DeepEqual(again.Properties, read.Properties) || !again.Created.Equal(read.Created) || !again.Updated.Equal(read.Updated) {
			t.Fatalf("resealing changed the job: %+v (%v)", again, err)
		}
		first, _ := createRevision(before)
		if now, _ := createRevision(after); now != first {
			t.Fatalf("the job ranks in its collection by revision %d, not %d as before resealing", now, first)
		}
		if n, err := s.ResealJobs(ctx); err != nil || n != 0 {
			t.Fatalf("a second pass resealed %d jobs (%v), want 0", n, err)
		}
	})

	t.Run("a job that does not open is reported and the others are resealed", func(t *testing.T) {
		t.Parallel()
		s, b := setup(t)
		mustPutCollection(t, s, collRef)
		foreign, old := collRef.Job("foreign"), collRef.Job("old")
		for _, ref := range []contracts.JobRef{foreign, old} {
			if _, err := s.CreateJob(ctx, newJob(ref), 0); err != nil {
				t.Fatal(err)
			}
			rewriteAtRest(t, b, ref.KVKey(), func(r *jobRecord) {
				r.Properties.Action = sealtest.SealActionV1(b.sealer, newJob(ref).Properties.Action, ref.KVKey())
			})
		}
		rewriteAtRest(t, b, foreign.KVKey(), func(r *jobRecord) {
			r.Properties.Action = sealtest.SealActionV1(newSealer(t), newJob(foreign).Properties.Action, foreign.KVKey())
		})
		n, err := s.ResealJobs(ctx)
		if n != 1 || !errors.Is(err, seal.ErrCannotOpen) || !strings.Contains(err.Error(), foreign.KVKey()) {
			t.Fatalf("resealed %d (%v), want 1 and the error of %s", n, err, foreign.KVKey())
		}
	})
}

// Regression: sealed secrets at rest were bound to the job only, so a
// record whose URI was changed in the bucket sent the password there.
func TestASecretChangedAtRestIsNotOpenedForAnotherDestination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, b := setup(t)
	mustPutCollection(t, s, collRef)
	ref := collRef.Job("moved")
	if _, err := s.CreateJob(ctx, newJob(ref), 0); err != nil {
		t.Fatal(err)
	}
	rewriteAtRest(t, b, ref.KVKey(), func(r *jobRecord) { r.Properties.Action.ErrorAction.Request.URI = "https://attacker.example" })
	_, err := s.GetJob(ctx, ref)
	var de *seal.DestinationError
	if !errors.As(err, &de) || de.Secret != "password" || !strings.Contains(err.Error(), ref.KVKey()) {
		t.Fatalf("err = %v, want a DestinationError for the password naming the job", err)
	}
	for _, secret := range secrets {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error quotes a secret: %v", err)
		}
	}
}

// createRevision returns the revision of the first write of the job in e.
func createRevision(e jetstream.KeyValueEntry) (uint64, error) {
	var r struct {
		CreateRevision uint64 `json:"createRevision"`
	}
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return 0, fmt.Errorf("decoding job %s: %w", e.Key(), err)
	}
	return cmp.Or(r.CreateRevision, e.Revision()), nil
}
