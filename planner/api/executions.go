package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/transient"
)

// The bounds of GET …/executionCounts, in minutes.
const (
	defaultExecutionMinutes = 60
	maxExecutionMinutes     = 24 * 60
)

// MinuteExecutions is how many attempts ended in one minute, by outcome.
type MinuteExecutions struct {
	// Minute is the start of the minute, in UTC.
	Minute    time.Time `json:"minute"`
	Succeeded int64     `json:"succeeded"`
	Failed    int64     `json:"failed"`
}

// ExecutionCountsResult is the body of GET …/executionCounts: the attempts
// that ended in each minute of the window, for the minutes that have any,
// earliest first.
type ExecutionCountsResult struct {
	// From and To bound the window: attempts that ended at From or later
	// and before To, the start of the minute after the current one.
	From      time.Time          `json:"from"`
	To        time.Time          `json:"to"`
	PerMinute []MinuteExecutions `json:"perMinute"`
}

// parseExecutionMinutes reads the query parameter minutes: 1 to 1440, 60
// when absent.
func parseExecutionMinutes(q url.Values) (int, *apiError) {
	v := q.Get("minutes")
	if v == "" {
		return defaultExecutionMinutes, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxExecutionMinutes {
		return 0, newError(http.StatusBadRequest, codeInvalidQuery,
			fmt.Sprintf("minutes must be an integer from 1 to %d (24 hours), not %s", maxExecutionMinutes, contracts.QuoteName(v)))
	}
	return n, nil
}

// countExecutions answers GET …/executionCounts (an extension of this
// API): the attempts of the jobs of the collections in scope that the
// caller may read, of their main and error actions alike, that ended in
// each of the last minutes (60 by default, at most 1440), by outcome. The
// window ends with the current minute.
func (s *Server) countExecutions(w http.ResponseWriter, r *http.Request, scope Scope) *apiError {
	minutes, e := parseExecutionMinutes(r.URL.Query())
	if e != nil {
		return e
	}
	ctx := r.Context()
	cols, e := s.executionCollections(ctx, scope)
	if e != nil {
		return e
	}
	to := s.cfg.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	out := ExecutionCountsResult{From: to.Add(-time.Duration(minutes) * time.Minute), To: to, PerMinute: []MinuteExecutions{}}
	if s.sched != nil && len(cols) > 0 {
		counts, _, err := retry(ctx, bulkAttempt, transient.Is, func(ctx context.Context) ([]MinuteExecutions, error) {
			return s.sched.ExecutionCounts(ctx, cols, out.From, out.To)
		})
		if err != nil {
			if transient.Is(err) {
				return unavailable("the execution counts cannot be read now: the timer is unavailable; retry").because(err)
			}
			return storeError(err, "the execution counts")
		}
		out.PerMinute = append(out.PerMinute, counts...)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// executionCollections returns the collections in scope that the
// request's principal may read, in any state: a disabled collection's
// recent attempts ran all the same. A scope naming a collection answers
// 404 when it does not exist.
func (s *Server) executionCollections(ctx context.Context, scope Scope) ([]contracts.CollectionRef, *apiError) {
	cols, e := s.scopeCollections(ctx, scope)
	if e != nil {
		return nil, e
	}
	refs := make([]contracts.CollectionRef, len(cols))
	for i, c := range cols {
		refs[i] = c.Ref
	}
	return refs, nil
}
