package api

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// Ceilings bound what a principal below operator may give itself: a
// collection's quota and plan, and the number of collections in a
// subscription. An operator (over the collection) is not bound by them.
type Ceilings struct {
	// MaxJobsPerCollection is the highest job count a collection's quota
	// (quota.maxJobCount, or its plan's default) may allow. Defaults to
	// 1000, the largest plan's (P20Premium).
	MaxJobsPerCollection int
	// MinRecurrence is the shortest quota.maxRecurrence a collection may
	// have (or its plan's default). Defaults to 1 minute, the shortest
	// plan's.
	MinRecurrence time.Duration
	// MaxCollectionsPerSubscription is the most job collections a
	// subscription may hold for a principal below operator to create
	// another. Defaults to 100.
	MaxCollectionsPerSubscription int
}

func (c Ceilings) withDefaults() Ceilings {
	c.MaxJobsPerCollection = cmp.Or(c.MaxJobsPerCollection, 1000)
	c.MinRecurrence = cmp.Or(c.MinRecurrence, time.Minute)
	c.MaxCollectionsPerSubscription = cmp.Or(c.MaxCollectionsPerSubscription, 100)
	return c
}

// Validate names the first ceiling that is negative (0 stands for the default).
func (c Ceilings) Validate() error {
	switch {
	case c.MaxJobsPerCollection < 0:
		return fmt.Errorf("the ceiling of jobs per collection must be 0 (the default) or more, not %d", c.MaxJobsPerCollection)
	case c.MinRecurrence < 0:
		return fmt.Errorf("the ceiling of the shortest recurrence must be 0 (the default) or more, not %s", c.MinRecurrence)
	case c.MaxCollectionsPerSubscription < 0:
		return fmt.Errorf("the ceiling of collections per subscription must be 0 (the default) or more, not %d", c.MaxCollectionsPerSubscription)
	}
	return nil
}

// checkCeilings refuses a collection's new plan or quota, or its creation,
// that goes beyond the ceilings, unless the request's principal is an
// operator over it. A quota already beyond a ceiling (an operator set it)
// may stay: only raising it further is refused, so a writer can still
// change the collection otherwise. old is nil for a collection created.
func (s *Server) checkCeilings(ctx context.Context, ref contracts.CollectionRef, old *contracts.JobCollectionProperties, updated contracts.JobCollectionProperties) *apiError {
	if p, _ := principalOf(ctx); p.roleAt(ref) >= RoleOperator {
		return nil
	}
	c := s.cfg.Ceilings
	maxJobs, maxRecurrence := effectiveQuota(updated)
	oldMaxJobs, oldMaxRecurrence := 0, time.Duration(1<<63-1)
	if old != nil {
		oldMaxJobs, oldMaxRecurrence = effectiveQuota(*old)
	}
	var details []armErrorBody
	refuse := func(field, message string) {
		details = append(details, armErrorBody{Code: codeAuthorizationFailed, Target: field, Message: message})
	}
	q := updated.Quota
	if maxJobs > c.MaxJobsPerCollection && maxJobs > oldMaxJobs {
		if q != nil && q.MaxJobCount != nil {
			refuse("properties.quota.maxJobCount", fmt.Sprintf("%d is above the ceiling of %d jobs per collection", maxJobs, c.MaxJobsPerCollection))
		} else {
			refuse("properties.sku.name", fmt.Sprintf("the plan %s allows %d jobs, above the ceiling of %d jobs per collection",
				updated.Sku.Name, maxJobs, c.MaxJobsPerCollection))
		}
	}
	if maxRecurrence < c.MinRecurrence && maxRecurrence < oldMaxRecurrence {
		if q != nil && q.MaxRecurrence != nil {
			refuse("properties.quota.maxRecurrence", fmt.Sprintf("every %s is more often than the ceiling of every %s", maxRecurrence, c.MinRecurrence))
		} else {
			refuse("properties.sku.name", fmt.Sprintf("the plan %s allows a recurrence every %s, more often than the ceiling of every %s",
				updated.Sku.Name, maxRecurrence, c.MinRecurrence))
		}
	}
	if len(details) > 0 {
		message := details[0].Target + ": " + details[0].Message
		for _, d := range details[1:] {
			message += "; " + d.Target + ": " + d.Message
		}
		e := newError(http.StatusForbidden, codeAuthorizationFailed, message+"; only an operator may go beyond the ceilings")
		e.body.Details = details
		return e
	}
	if old != nil {
		return nil
	}
	cols, err := s.store.ListCollections(ctx, ref.Subscription, "")
	if err != nil {
		return storeError(err, "the job collections of subscription "+contracts.QuoteName(ref.Subscription))
	}
	if len(cols) >= c.MaxCollectionsPerSubscription {
		return newError(http.StatusConflict, codeQuotaExceeded, fmt.Sprintf(
			"subscription %s holds %d job collections, the most allowed (the ceiling of %d collections per subscription); delete one, or ask an operator to create it",
			contracts.QuoteName(ref.Subscription), len(cols), c.MaxCollectionsPerSubscription))
	}
	return nil
}
