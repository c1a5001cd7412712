package api

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner/store"
)

// jobOrder is a field GET …/jobs sorts by ($orderby, an extension).
type jobOrder string

const (
	orderName              jobOrder = "name"
	orderState             jobOrder = "state"
	orderActionType        jobOrder = "actionType"
	orderNextExecutionTime jobOrder = "nextExecutionTime"
	orderLastExecutionTime jobOrder = "lastExecutionTime"
)

var jobOrders = []jobOrder{orderName, orderState, orderActionType, orderNextExecutionTime, orderLastExecutionTime}

// timed reports whether the order needs the jobs' status from the timer.
func (o jobOrder) timed() bool {
	return o == orderNextExecutionTime || o == orderLastExecutionTime
}

// maxSearchLength bounds $search, in characters.
const maxSearchLength = 200

// jobListQuery is a parsed query of GET …/jobs.
type jobListQuery struct {
	page page
	// state and actionType are the values $filter keeps; empty keeps any.
	state      contracts.JobState
	actionType contracts.ActionType
	// search is the lower-cased text $search keeps the names holding.
	search  string
	orderBy jobOrder
	desc    bool
	// count asks for the number of jobs kept, over every page.
	count bool
}

// parseJobListQuery reads $top, $skip, $filter, $search, $orderby and
// $count; each error names its parameter and its rule.
func parseJobListQuery(q url.Values) (jobListQuery, *apiError) {
	out := jobListQuery{orderBy: orderName}
	var e *apiError
	if out.page, e = parseWindow(q); e != nil {
		return out, e
	}
	if v := q.Get("$filter"); v != "" {
		if out.state, out.actionType, e = parseJobFilter(v); e != nil {
			return out, e
		}
	}
	bad := func(format string, args ...any) (jobListQuery, *apiError) {
		return out, newError(http.StatusBadRequest, codeInvalidQuery, fmt.Sprintf(format, args...))
	}
	if v := q.Get("$search"); v != "" {
		if n := utf8.RuneCountInString(v); n > maxSearchLength {
			return bad("$search must be at most %d characters, not %d", maxSearchLength, n)
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		out.search = strings.ToLower(v)
	}
	if v := q.Get("$orderby"); v != "" {
		fields := strings.Fields(v)
		order, ok := jobOrder(""), false
		if len(fields) >= 1 {
			order, ok = contracts.ParseEnum(fields[0], jobOrders)
		}
		switch {
		case !ok || len(fields) > 2:
			return bad("$orderby %s is not supported; use one of %s, optionally followed by asc or desc",
				contracts.QuoteName(v), contracts.EnumList(jobOrders))
		case len(fields) == 2 && strings.EqualFold(fields[1], "desc"):
			out.desc = true
		case len(fields) == 2 && !strings.EqualFold(fields[1], "asc"):
			return bad("$orderby: the direction %s is not asc or desc", contracts.QuoteName(fields[1]))
		}
		out.orderBy = order
	}
	if v := q.Get("$count"); v != "" {
		b, err := strconv.ParseBool(strings.ToLower(v))
		if err != nil {
			return bad("$count must be true or false, not %s", contracts.QuoteName(v))
		}
		out.count = b
	}
	return out, nil
}

// parseJobFilter reads a $filter of GET …/jobs: "state eq <state>",
// "actionType eq <action type>", or both joined by "and", in any order and
// any case, each value optionally quoted.
func parseJobFilter(v string) (contracts.JobState, contracts.ActionType, *apiError) {
	var (
		state      contracts.JobState
		actionType contracts.ActionType
	)
	bad := func(format string, args ...any) (contracts.JobState, contracts.ActionType, *apiError) {
		return "", "", newError(http.StatusBadRequest, codeInvalidFilter, fmt.Sprintf(format, args...))
	}
	tokens := strings.Fields(v)
	if (len(tokens) != 3 && len(tokens) != 7) || (len(tokens) == 7 && !strings.EqualFold(tokens[3], "and")) {
		return bad("$filter %s is not supported; use state eq %s, actionType eq %s, or both joined by and",
			contracts.QuoteName(v), contracts.JobStateEnabled, contracts.ActionHTTP)
	}
	for i := 0; i < len(tokens); i += 4 {
		field, op, value := tokens[i], tokens[i+1], strings.Trim(tokens[i+2], `'"`)
		if !strings.EqualFold(op, "eq") {
			return bad("$filter: the operator %s is not supported; use eq", contracts.QuoteName(op))
		}
		switch {
		case strings.EqualFold(field, "state"):
			if state != "" {
				return bad("$filter names state twice; name it once, with actionType beside it if need be")
			}
			s, ok := contracts.ParseEnum(value, contracts.JobStates)
			if !ok {
				return bad("$filter: state %s is not one of %s", contracts.QuoteName(value), contracts.EnumList(contracts.JobStates))
			}
			state = s
		case strings.EqualFold(field, "actionType"):
			if actionType != "" {
				return bad("$filter names actionType twice; name it once, with state beside it if need be")
			}
			a, ok := contracts.ParseEnum(value, contracts.ActionTypes)
			if !ok {
				return bad("$filter: actionType %s is not one of %s", contracts.QuoteName(value), contracts.EnumList(contracts.ActionTypes))
			}
			actionType = a
		default:
			return bad("$filter: the field %s is not one it takes; use state or actionType", contracts.QuoteName(field))
		}
	}
	return state, actionType, nil
}

// keeps reports whether the job passes the query's filter and search.
func (q jobListQuery) keeps(j store.Job) bool {
	return (q.state == "" || j.Properties.State == q.state) &&
		(q.actionType == "" || actionTypeOf(j) == q.actionType) &&
		(q.search == "" || strings.Contains(strings.ToLower(j.Ref.Job), q.search))
}

func actionTypeOf(j store.Job) contracts.ActionType {
	if a := j.Properties.Action; a != nil {
		return a.Type
	}
	return ""
}

// sortKey is what a job is sorted by: the value of the ordered field
// (text, or at for a time, zero when the job has none), then its name,
// lower-cased.
type sortKey struct {
	name, text string
	at         time.Time
}

// compare orders two jobs by the query's field, in its direction, and
// jobs equal there by name. A job without the time it is ordered by comes
// after those with one, in either direction: the jobs that ran last, or
// run next, come first in desc.
func (q jobListQuery) compare(a, b sortKey) int {
	byName := cmp.Compare(a.name, b.name)
	var c int
	switch {
	case q.orderBy == orderName:
		c, byName = byName, 0
	case q.orderBy.timed():
		if a.at.IsZero() || b.at.IsZero() {
			// A job without the time comes last, in either direction.
			return cmp.Or(cmp.Compare(boolInt(a.at.IsZero()), boolInt(b.at.IsZero())), byName)
		}
		c = a.at.Compare(b.at)
	default:
		c = cmp.Compare(a.text, b.text)
	}
	if q.desc {
		c = -c
	}
	return cmp.Or(c, byName)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// statusTimes returns, for each job, the time of its status that order
// names (zero when it has none), as the job's status would show it, asking
// the timer once for all the jobs.
func (s *Server) statusTimes(ctx context.Context, jobs []store.Job, order jobOrder) []time.Time {
	out := make([]time.Time, len(jobs))
	next, tallies := s.runtimes(ctx, jobs)
	scheds := s.schedules(ctx)
	for i, j := range jobs {
		var tally contracts.Tally
		if tallies != nil {
			tally = tallies[i]
		}
		if order == orderLastExecutionTime {
			out[i] = tally.LastExecution
			continue
		}
		if j.Properties.State != contracts.JobStateEnabled {
			continue
		}
		var at time.Time
		if next != nil {
			at = next[i]
		}
		if at, ok := s.nextExecution(scheds, j, at, tally); ok {
			out[i] = at
		}
	}
	return out
}

// listJobs answers GET …/jobs: the collection's jobs kept by $filter and
// $search, sorted by $orderby (by name by default), the page $top and
// $skip ask for, with their status. Only the page's jobs are asked of the
// timer, in one call; ordering by a time asks it, in one call, of every
// job kept, since each one's place depends on its status.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, ref contracts.CollectionRef) *apiError {
	q, e := parseJobListQuery(r.URL.Query())
	if e != nil {
		return e
	}
	ctx := r.Context()
	if _, err := s.store.GetCollection(ctx, ref); err != nil {
		return storeError(err, collectionWhat(ref))
	}
	jobs, err := s.store.ListSealedJobs(ctx, ref)
	if err != nil {
		return storeError(err, "the jobs of "+collectionWhat(ref))
	}
	jobs = slices.DeleteFunc(jobs, func(j store.Job) bool { return !q.keeps(j) })
	keys := make([]sortKey, len(jobs))
	for i, j := range jobs {
		keys[i] = sortKey{name: strings.ToLower(j.Ref.Job)}
		switch q.orderBy {
		case orderState:
			keys[i].text = string(j.Properties.State)
		case orderActionType:
			keys[i].text = string(actionTypeOf(j))
		}
	}
	if q.orderBy.timed() {
		for i, at := range s.statusTimes(ctx, jobs, q.orderBy) {
			keys[i].at = at
		}
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return q.compare(keys[a], keys[b]) })
	from, to := q.page.window(len(jobs))
	out := contracts.JobListResult{Value: s.renderJobs(ctx, pick(jobs, order[from:to])), NextLink: s.nextLink(r, q.page, len(jobs))}
	if q.count {
		n := len(jobs)
		out.Count = &n
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// pick returns the items at the indexes, in their order.
func pick[T any](items []T, indexes []int) []T {
	out := make([]T, len(indexes))
	for i, x := range indexes {
		out[i] = items[x]
	}
	return out
}
