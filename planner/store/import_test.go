package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
)

func TestImportJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setup(t)
	coll := contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: "bulk"}
	if _, err := s.PutCollection(ctx, Collection{Ref: coll}, 0); err != nil {
		t.Fatal(err)
	}
	var jobs []Job
	for i := range 5000 {
		jobs = append(jobs, newJob(coll.Job(fmt.Sprintf("j%04d", i))))
	}
	if err := s.ImportJobs(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountJobs(ctx, coll); err != nil || n != 5000 {
		t.Fatalf("%d jobs (%v)", n, err)
	}
	j, err := s.GetJob(ctx, coll.Job("j4999"))
	if err != nil || j.Properties.Action == nil || j.Created.IsZero() {
		t.Fatalf("imported job: %v %+v", err, j)
	}
	missing := contracts.CollectionRef{Subscription: "sub", ResourceGroup: "rg", Collection: "none"}
	if err := s.ImportJobs(ctx, []Job{newJob(missing.Job("x"))}); err == nil {
		t.Fatal("imported into a missing collection")
	}
}
