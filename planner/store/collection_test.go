package store

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
)

func TestCollections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a collection is created, read, updated and deleted", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		created, err := s.PutCollection(ctx, newCollection(collRef), 0)
		if err != nil {
			t.Fatal(err)
		}
		if created.Revision == 0 || created.Created.IsZero() || !created.Updated.Equal(created.Created) {
			t.Fatalf("created = %+v", created)
		}
		got, err := s.GetCollection(ctx, collRef)
		if err != nil {
			t.Fatal(err)
		}
		if got.Revision != created.Revision || !reflect.DeepEqual(got.Tags, created.Tags) ||
			!reflect.DeepEqual(got.Properties, created.Properties) || got.Location != created.Location ||
			!got.Created.Equal(created.Created) {
			t.Fatalf("read %+v, wrote %+v", got, created)
		}

		got.Properties.State = "Disabled"
		updated, err := s.PutCollection(ctx, got, got.Revision)
		if err != nil {
			t.Fatal(err)
		}
		if updated.Revision <= got.Revision || !updated.Created.Equal(created.Created) {
			t.Fatalf("updated = %+v", updated)
		}
		if again, _ := s.GetCollection(ctx, collRef); again.Properties.State != "Disabled" {
			t.Fatalf("state %q after update", again.Properties.State)
		}

		if err := s.DeleteCollection(ctx, collRef); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetCollection(ctx, collRef); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get after delete: err = %v, want ErrNotFound", err)
		}
		if err := s.DeleteCollection(ctx, collRef); !errors.Is(err, ErrNotFound) {
			t.Fatalf("second delete: err = %v, want ErrNotFound", err)
		}
	})

	t.Run("names are case-insensitive and kept as given", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		upper := contracts.CollectionRef{Subscription: "SUB-1", ResourceGroup: "rg", Collection: "COLL"}
		got, err := s.GetCollection(ctx, upper)
		if err != nil {
			t.Fatal(err)
		}
		if got.Ref != collRef {
			t.Fatalf("ref %+v, want the name as created %+v", got.Ref, collRef)
		}
		if _, err := s.PutCollection(ctx, newCollection(upper), 0); !errors.Is(err, ErrExists) {
			t.Fatalf("creating %+v: err = %v, want ErrExists", upper, err)
		}
	})

	t.Run("an update at an old revision is a conflict", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		c := mustPutCollection(t, s, collRef)
		if _, err := s.PutCollection(ctx, c, c.Revision); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutCollection(ctx, c, c.Revision); !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})

	t.Run("an update of a missing collection is not found", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		if _, err := s.PutCollection(ctx, newCollection(collRef), 7); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})

	t.Run("deleting a collection deletes its jobs and only its jobs", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		mustPutCollection(t, s, collRef)
		other := contracts.CollectionRef{Subscription: "Sub-1", ResourceGroup: "RG", Collection: "Coll-2"}
		mustPutCollection(t, s, other)
		for _, name := range []string{"a", "b", "c"} {
			if _, err := s.CreateJob(ctx, newJob(collRef.Job(name)), 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CreateJob(ctx, newJob(other.Job("a")), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteCollection(ctx, collRef); err != nil {
			t.Fatal(err)
		}
		if n, err := s.CountJobs(ctx, collRef); err != nil || n != 0 {
			t.Fatalf("jobs left: %d, %v", n, err)
		}
		if _, err := s.GetJob(ctx, collRef.Job("a")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if n, err := s.CountJobs(ctx, other); err != nil || n != 1 {
			t.Fatalf("other collection has %d jobs, %v; want 1", n, err)
		}
		// A collection created again under the name starts empty.
		mustPutCollection(t, s, collRef)
		if jobs, err := s.ListJobs(ctx, collRef); err != nil || len(jobs) != 0 {
			t.Fatalf("recreated collection lists %d jobs, %v", len(jobs), err)
		}
	})

	t.Run("collections are listed by subscription and by group, sorted", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		refs := []contracts.CollectionRef{
			{Subscription: "sub-1", ResourceGroup: "rg-b", Collection: "zeta"},
			{Subscription: "sub-1", ResourceGroup: "RG-A", Collection: "Beta"},
			{Subscription: "sub-1", ResourceGroup: "rg-a", Collection: "alpha"},
			{Subscription: "SUB-1", ResourceGroup: "rg-b", Collection: "Eta"},
			{Subscription: "sub-2", ResourceGroup: "rg-a", Collection: "other"},
		}
		for _, r := range refs {
			mustPutCollection(t, s, r)
		}
		names := func(cs []Collection) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.Ref.ResourceGroup+"/"+c.Ref.Collection)
			}
			return out
		}
		all, err := s.ListCollections(ctx, "Sub-1", "")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := names(all), []string{"rg-a/alpha", "RG-A/Beta", "rg-b/Eta", "rg-b/zeta"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("by subscription: %q, want %q", got, want)
		}
		group, err := s.ListCollections(ctx, "sub-1", "Rg-B")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := names(group), []string{"rg-b/Eta", "rg-b/zeta"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("by group: %q, want %q", got, want)
		}
		every, err := s.ListCollections(ctx, "", "")
		if err != nil {
			t.Fatal(err)
		}
		var subs []string
		for _, c := range every {
			subs = append(subs, strings.ToLower(c.Ref.Subscription))
		}
		if got, want := names(every), []string{"rg-a/alpha", "RG-A/Beta", "rg-b/Eta", "rg-b/zeta", "rg-a/other"}; !reflect.DeepEqual(got, want) ||
			!reflect.DeepEqual(subs, []string{"sub-1", "sub-1", "sub-1", "sub-1", "sub-2"}) {
			t.Fatalf("every subscription: %q in %q, want %q", got, subs, want)
		}
		if _, err := s.ListCollections(ctx, "", "rg-a"); !errors.Is(err, ErrInvalidName) {
			t.Fatalf("a resource group without its subscription: %v", err)
		}
		if none, err := s.ListCollections(ctx, "sub-3", ""); err != nil || len(none) != 0 {
			t.Fatalf("unknown subscription: %v, %v", none, err)
		}
		if all[0].Revision == 0 {
			t.Fatal("listed collections lack their revision")
		}
	})
}
