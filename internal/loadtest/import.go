package loadtest

import (
	"context"
	"fmt"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/store"
)

// ImportCollectionSize is how many jobs ImportJobs puts in each collection.
const ImportCollectionSize = 1000

// ImportJobs writes n enabled jobs straight into the job store, as a
// benchmark's load, without the API or its quotas: job i, named
// "job-0000042" for 42, is defined by define(i) (a definition's properties
// as JSON, parsed at now), in collections of ImportCollectionSize named
// ImportCollection(i), each created before its first job. They are written
// 10,000 at a time (see store.Store.ImportJobs).
func ImportJobs(ctx context.Context, st *store.Store, n int, now time.Time, define func(i int) string) error {
	jobs := make([]store.Job, 0, 10*ImportCollectionSize)
	flush := func() error {
		err := st.ImportJobs(ctx, jobs)
		jobs = jobs[:0]
		return err
	}
	for i := range n {
		coll := ImportCollection(i)
		if i%ImportCollectionSize == 0 {
			if _, err := st.PutCollection(ctx, store.Collection{Ref: coll}, 0); err != nil {
				return err
			}
		}
		p, errs := planner.ParseJob([]byte(define(i)), now)
		if len(errs) > 0 {
			return fmt.Errorf("job %d: %v", i, errs)
		}
		p.State = contracts.JobStateEnabled
		jobs = append(jobs, store.Job{Ref: coll.Job(JobName(i)), Properties: p})
		if len(jobs) == cap(jobs) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// ImportCollection is the collection ImportJobs puts job i in.
func ImportCollection(i int) contracts.CollectionRef {
	return contracts.CollectionRef{Subscription: "bench", ResourceGroup: "rg", Collection: fmt.Sprintf("c%04d", i/ImportCollectionSize)}
}
