package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/api"
)

// Page sizes.
const (
	jobsPerPage     = 50
	historyPerPage  = 25
	upcomingShown   = 50
	overviewHours   = 6
	recentMinutes   = 60
	failingPerColl  = 50
	failingWindow   = 24 * time.Hour
	collectionsScan = 50
)

// flashes are the messages an action leaves for the page it returns to.
var flashes = map[string]string{
	"run": "The job was asked to run now.", "enabled": "Enabled.", "disabled": "Disabled.",
	"deleted": "The job was deleted.", "saved": "The job was saved.", "created": "The job was created.",
	"signedin": "Signed in.",
}

// flash returns the message of the page's done parameter.
func flash(r *http.Request) string { return flashes[r.URL.Query().Get("done")] }

// refOf returns the collection the path names.
func refOf(r *http.Request) contracts.CollectionRef {
	return contracts.CollectionRef{Subscription: r.PathValue("sub"), ResourceGroup: r.PathValue("rg"), Collection: r.PathValue("coll")}
}

// jobRefOf returns the job the path names.
func jobRefOf(r *http.Request) contracts.JobRef { return refOf(r).Job(r.PathValue("job")) }

// --- overview ---

type overviewData struct {
	Collections []collectionJSON
	Failing     []failingJob
	Upcoming    []upcomingRun
	More        int
	Hours       int
	Chart       chart
	// Executions is the chart of the attempts that ended in the last
	// minutes; ExecutionsUnavailable tells that they could not be read.
	Executions            outcomeChart
	ExecutionsUnavailable bool
}

// executionCounts is the answer of GET …/executionCounts.
type executionCounts struct {
	PerMinute []struct {
		Minute    time.Time `json:"minute"`
		Succeeded int64     `json:"succeeded"`
		Failed    int64     `json:"failed"`
	} `json:"perMinute"`
}

type failingJob struct {
	Ref    contracts.JobRef
	Why    string
	When   time.Time
	Status string
}

func (c *Console) overview(q *request) (string, *view, error) {
	var cols struct {
		Value []collectionJSON `json:"value"`
	}
	if err := q.api.get(q.ctx(), "/providers/Microsoft.Scheduler/jobCollections", url.Values{"$expand": {"jobCounts"}}, &cols); err != nil {
		return "", nil, err
	}
	d := overviewData{Collections: cols.Value, Hours: overviewHours}
	now := c.cfg.Now()
	var (
		runs     []upcomingRun
		minutes  = map[time.Time]int{}
		outcomes = map[time.Time]outcomeCount{}
		seen     = map[string]bool{}
	)
	for _, col := range cols.Value {
		sub := col.Ref().Subscription
		if seen[sub] {
			continue
		}
		seen[sub] = true
		var up upcomingList
		err := q.api.get(q.ctx(), "/subscriptions/"+url.PathEscape(sub)+"/providers/Microsoft.Scheduler/upcoming",
			url.Values{"hours": {strconv.Itoa(overviewHours)}, "$top": {"1000"}, "$histogram": {"true"}}, &up)
		if err != nil {
			return "", nil, err
		}
		runs = append(runs, up.Value...)
		for _, m := range up.PerMinute {
			minutes[m.Minute] += m.Count
		}
		// The counts are a statistic: without them the page still shows
		// the rest.
		var ec executionCounts
		if err := q.api.get(q.ctx(), "/subscriptions/"+url.PathEscape(sub)+"/providers/Microsoft.Scheduler/executionCounts",
			url.Values{"minutes": {strconv.Itoa(recentMinutes)}}, &ec); err != nil {
			d.ExecutionsUnavailable = true
			continue
		}
		for _, m := range ec.PerMinute {
			n := outcomes[m.Minute.UTC()]
			n.Succeeded += m.Succeeded
			n.Failed += m.Failed
			outcomes[m.Minute.UTC()] = n
		}
	}
	slices.SortStableFunc(runs, func(a, b upcomingRun) int { return a.Due.Compare(b.Due) })
	failing := map[string]failingJob{}
	for _, r := range runs {
		if r.Kind == "Retry" || r.Kind == "ErrorAction" {
			why := "retry pending"
			if r.Kind == "ErrorAction" {
				why = "error action pending"
			}
			failing[r.ID] = failingJob{Ref: r.Ref(), Why: why, When: r.Due}
		}
	}
	for i, col := range cols.Value {
		if i >= collectionsScan {
			break
		}
		if col.Jobs() == 0 {
			continue
		}
		var jobs jobList
		err := q.api.get(q.ctx(), collectionPath(col.Ref())+"/jobs",
			url.Values{"$orderby": {"lastExecutionTime desc"}, "$top": {strconv.Itoa(failingPerColl)}}, &jobs)
		if err != nil {
			continue // a collection the token may list but not read further
		}
		for _, j := range jobs.Value {
			// Newest first; the jobs that never ran come last.
			last := deref(j.Status().LastExecutionTime)
			if last.IsZero() || now.Sub(last) > failingWindow {
				break
			}
			if _, ok := failing[j.ID]; ok {
				continue
			}
			switch {
			case j.Properties.State == contracts.JobStateFaulted:
				failing[j.ID] = failingJob{Ref: j.Ref(), Why: "Faulted", When: last, Status: j.LastStatus}
			case j.LastStatus == "Failed" || j.LastStatus == "Faulted":
				failing[j.ID] = failingJob{Ref: j.Ref(), Why: "last attempt " + strings.ToLower(j.LastStatus), When: last, Status: j.LastStatus}
			}
		}
	}
	for _, f := range failing {
		d.Failing = append(d.Failing, f)
	}
	slices.SortFunc(d.Failing, func(a, b failingJob) int { return b.When.Compare(a.When) })
	d.Upcoming = runs[:min(len(runs), upcomingShown)]
	d.More = len(runs) - len(d.Upcoming)
	d.Chart = minuteChart(now, overviewHours, minutes)
	d.Executions = newOutcomeChart(now, recentMinutes, outcomes)
	return "overview", &view{Title: "Overview", Flash: flash(q.r), Data: d}, nil
}

// --- collection ---

type collectionData struct {
	Ref        contracts.CollectionRef
	Collection collectionJSON
	Rows       []jobRow
	Total      int
	Page       int
	Pages      int
	Query      collectionQuery
	States     []contracts.JobState
	Types      []contracts.ActionType
	Sorts      []sortOption
	CanWrite   bool
	PrevHref   string
	NextHref   string
	MaxJobs    int
	// AllJobs is how many jobs the collection holds; -1 when the page
	// filters them and does not know.
	AllJobs int
}

type jobRow struct {
	Job      jobJSON
	Href     string
	Schedule string
}

type collectionQuery struct {
	Search, State, Type, Sort string
	Page                      int
}

type sortOption struct{ Value, Label string }

var sortOptions = []sortOption{
	{"name", "Name"}, {"state", "State"}, {"actionType", "Action type"},
	{"nextExecutionTime", "Next run"}, {"lastExecutionTime desc", "Last run, newest first"},
}

// encode returns the query string of q on page p.
func (q collectionQuery) encode(p int) string {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("q", q.Search)
	set("state", q.State)
	set("type", q.Type)
	set("sort", q.Sort)
	if p > 1 {
		v.Set("page", strconv.Itoa(p))
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

func (c *Console) collection(q *request) (string, *view, error) {
	ref := refOf(q.r)
	form := q.r.URL.Query()
	cq := collectionQuery{Search: strings.TrimSpace(form.Get("q")), State: form.Get("state"), Type: form.Get("type"), Sort: form.Get("sort")}
	cq.Page, _ = strconv.Atoi(form.Get("page"))
	cq.Page = max(cq.Page, 1)
	if !slices.ContainsFunc(sortOptions, func(o sortOption) bool { return o.Value == cq.Sort }) {
		cq.Sort = ""
	}
	// The collection without its job counts: they would list its jobs a
	// second time. The listing's count is the collection's when nothing
	// filters it.
	var col collectionJSON
	if err := q.api.get(q.ctx(), collectionPath(ref), nil, &col); err != nil {
		return "", nil, err
	}
	params := url.Values{"$top": {strconv.Itoa(jobsPerPage)}, "$skip": {strconv.Itoa((cq.Page - 1) * jobsPerPage)}, "$count": {"true"}}
	var filters []string
	if cq.State != "" {
		filters = append(filters, "state eq '"+cq.State+"'")
	}
	if cq.Type != "" {
		filters = append(filters, "actionType eq '"+cq.Type+"'")
	}
	if len(filters) > 0 {
		params.Set("$filter", strings.Join(filters, " and "))
	}
	if cq.Search != "" {
		params.Set("$search", cq.Search)
	}
	if cq.Sort != "" {
		params.Set("$orderby", cq.Sort)
	}
	var jobs jobList
	if err := q.api.get(q.ctx(), collectionPath(ref)+"/jobs", params, &jobs); err != nil {
		var f *apiFault
		if !errors.As(err, &f) || f.Status != http.StatusBadRequest {
			return "", nil, err
		}
		return "collection", &view{Title: ref.Collection, Crumbs: collectionCrumbs(ref), Error: f.Message,
			Data: collectionData{Ref: ref, Collection: col, Query: cq, States: contracts.JobStates, Types: contracts.ActionTypes, Sorts: sortOptions}}, nil
	}
	d := collectionData{
		Ref: ref, Collection: col, Total: jobs.Count, Page: cq.Page, Query: cq,
		States: contracts.JobStates, Types: contracts.ActionTypes, Sorts: sortOptions,
		CanWrite: c.role(q, ref) >= api.RoleWriter,
	}
	if qt := col.Properties.Quota; qt != nil && qt.MaxJobCount != nil {
		d.MaxJobs = *qt.MaxJobCount
	}
	d.Pages = max(1, (jobs.Count+jobsPerPage-1)/jobsPerPage)
	if cq.Search == "" && cq.State == "" && cq.Type == "" {
		d.AllJobs = jobs.Count
	} else {
		d.AllJobs = -1
	}
	for _, j := range jobs.Value {
		d.Rows = append(d.Rows, jobRow{Job: j, Href: jobHref(j.Ref()), Schedule: planner.Describe(j.Properties.StartTime, j.Properties.Recurrence)})
	}
	base := collectionHref(ref)
	if cq.Page > 1 {
		d.PrevHref = base + cq.encode(cq.Page-1)
	}
	if cq.Page < d.Pages {
		d.NextHref = base + cq.encode(cq.Page+1)
	}
	return "collection", &view{Title: ref.Collection, Crumbs: collectionCrumbs(ref), Flash: flash(q.r), Data: d}, nil
}

func collectionCrumbs(ref contracts.CollectionRef) []crumb {
	return []crumb{{"Overview", "/"}, {ref.Subscription + " / " + ref.ResourceGroup + " / " + ref.Collection, collectionHref(ref)}}
}

func (c *Console) collectionAction(q *request) (string, *view, error) {
	ref := refOf(q.r)
	verb := q.r.PathValue("verb")
	if verb != "enable" && verb != "disable" {
		return "", nil, &apiFault{Status: http.StatusNotFound, Message: "There is no action " + strconv.Quote(verb) + " on a collection."}
	}
	if err := q.api.do(q.ctx(), http.MethodPost, collectionPath(ref)+"/"+verb, nil, nil, nil); err != nil {
		return "", nil, err
	}
	return redirect(q, collectionHref(ref)+"?done="+verb+"d")
}

// --- job ---

type jobData struct {
	Ref      contracts.JobRef
	Job      jobJSON
	Schedule string
	Next     []nextRun
	Pending  []upcomingRun
	Secrets  []secretState
	JSON     string
	History  []contracts.JobHistoryDefinitionProperties
	Status   string
	Statuses []contracts.ExecutionStatus
	HPage    int
	PrevHref string
	NextHref string
	CanWrite bool
	Live     bool
	Zone     string
	// Marked: the next runs carry marks of the job's scheduling policies.
	Marked bool
	// Policies are the job's catch-up, overlap and pause-after-faults
	// policies in words, those that are set.
	Policies []string
}

type nextRun struct {
	// N numbers the runs from 1; 0 for an occurrence that is skipped.
	N       int
	At      time.Time
	Skipped bool
	// Marks say why it is skipped, where it was moved from and when it
	// runs within its flexible window.
	Marks []string
	Local string
	// Change marks a change of the zone's UTC offset since the run before
	// (daylight saving time starting or ending).
	Change string
}

type secretState struct {
	Field string
	Set   bool
}

func (c *Console) job(q *request) (string, *view, error) {
	ref := jobRefOf(q.r)
	var j jobJSON
	if err := q.api.get(q.ctx(), jobPath(ref), nil, &j); err != nil {
		return "", nil, err
	}
	d := jobData{Ref: ref, Job: j, Zone: j.Zone(), Schedule: planner.Describe(j.Properties.StartTime, j.Properties.Recurrence),
		CanWrite: c.role(q, ref.CollectionRef()) >= api.RoleWriter, Live: c.cfg.NATS != nil, Statuses: contracts.ExecutionStatuses}
	var pv previewJSON
	if err := q.api.get(q.ctx(), jobPath(ref)+"/preview", url.Values{"count": {"10"}}, &pv); err != nil {
		return "", nil, err
	}
	var window string
	if r := j.Properties.Recurrence; r != nil {
		window = r.FlexibleWindow
	}
	d.Next = nextRuns(pv, d.Zone, window)
	d.Marked = len(pv.Occurrences) > 0
	d.Policies = runPolicies(&j.Properties)
	var up upcomingList
	if err := q.api.get(q.ctx(), jobPath(ref)+"/upcoming", url.Values{"hours": {"168"}}, &up); err == nil {
		for _, r := range up.Value {
			if r.Kind != "Scheduled" {
				d.Pending = append(d.Pending, r)
			}
		}
	}
	d.Secrets = secretsOf(j)
	d.JSON = definitionJSON(j.Properties)
	form := q.r.URL.Query()
	d.HPage, _ = strconv.Atoi(form.Get("hpage"))
	d.HPage = max(d.HPage, 1)
	params := url.Values{"$top": {strconv.Itoa(historyPerPage)}, "$skip": {strconv.Itoa((d.HPage - 1) * historyPerPage)}}
	if st, ok := contracts.ParseEnum(form.Get("status"), contracts.ExecutionStatuses); ok {
		d.Status = string(st)
		params.Set("$filter", "status eq "+d.Status)
	}
	var h historyList
	if err := q.api.get(q.ctx(), jobPath(ref)+"/history", params, &h); err != nil {
		return "", nil, err
	}
	for _, e := range h.Value {
		d.History = append(d.History, e.Properties)
	}
	hq := func(p int) string {
		v := url.Values{}
		if d.Status != "" {
			v.Set("status", d.Status)
		}
		if p > 1 {
			v.Set("hpage", strconv.Itoa(p))
		}
		if len(v) == 0 {
			return jobHref(ref) + "#history"
		}
		return jobHref(ref) + "?" + v.Encode() + "#history"
	}
	if d.HPage > 1 {
		d.PrevHref = hq(d.HPage - 1)
	}
	if h.NextLink != nil {
		d.NextHref = hq(d.HPage + 1)
	}
	crumbs := append(collectionCrumbs(ref.CollectionRef()), crumb{ref.Job, jobHref(ref)})
	return "job", &view{Title: ref.Job, Crumbs: crumbs, Flash: flash(q.r), Data: d}, nil
}

// nextRuns shows a preview's runs in UTC and in zone, marking where the
// zone's offset changes from one run to the next. When the preview details
// its occurrences, the skipped ones are shown too, and each is marked with
// what the job's policies do to it (window is its flexible window).
func nextRuns(pv previewJSON, zone, window string) []nextRun {
	loc, err := contracts.LoadZone(zone)
	if zone == "" || err != nil {
		loc = nil
	}
	var out []nextRun
	if len(pv.Occurrences) > 0 {
		w := windowOf(window)
		for _, o := range pv.Occurrences {
			out = append(out, nextRun{At: o.Instant.UTC(), Skipped: o.Skipped, Marks: occurrenceMarks(o, w)})
		}
	} else {
		for _, t := range pv.Value {
			out = append(out, nextRun{At: t.UTC()})
		}
	}
	prev, n := 0, 0
	for i := range out {
		if !out[i].Skipped {
			n++
			out[i].N = n
		}
		if loc == nil {
			continue
		}
		local := out[i].At.In(loc)
		out[i].Local = local.Format("2006-01-02 15:04:05 -07:00 MST")
		name, offset := local.Zone()
		if i > 0 && offset != prev {
			dir := "daylight saving time ends"
			if offset > prev {
				dir = "daylight saving time starts"
			}
			out[i].Change = dir + ": now " + name + " (UTC" + local.Format("-07:00") + ")"
		}
		prev = offset
	}
	return out
}

// secretsOf lists the job's secret fields, each set or not set.
func secretsOf(j jobJSON) []secretState {
	var out []secretState
	prefix := "action."
	for a := j.Properties.Action; a != nil; a = a.ErrorAction {
		for _, s := range a.Secrets() {
			if s.Unused {
				continue
			}
			field := prefix + s.Field
			out = append(out, secretState{Field: field, Set: slices.Contains(j.SetSecrets, field)})
		}
		prefix += "errorAction."
	}
	return out
}

func (c *Console) jobAction(q *request) (string, *view, error) {
	ref := jobRefOf(q.r)
	verb := q.r.PathValue("verb")
	var err error
	switch verb {
	case "run":
		err = q.api.do(q.ctx(), http.MethodPost, jobPath(ref)+"/run", nil, nil, nil)
	case "enable", "disable":
		state := contracts.JobStateEnabled
		if verb == "disable" {
			state = contracts.JobStateDisabled
		}
		err = q.api.do(q.ctx(), http.MethodPatch, jobPath(ref), nil, map[string]any{"properties": map[string]any{"state": state}}, nil)
		verb += "d"
	case "delete":
		if err = q.api.do(q.ctx(), http.MethodDelete, jobPath(ref), nil, nil, nil); err == nil {
			return redirect(q, collectionHref(ref.CollectionRef())+"?done=deleted")
		}
	default:
		return "", nil, &apiFault{Status: http.StatusNotFound, Message: "There is no action " + strconv.Quote(verb) + " on a job."}
	}
	if err != nil {
		return "", nil, err
	}
	return redirect(q, jobHref(ref)+"?done="+verb)
}

func (c *Console) confirmDelete(q *request) (string, *view, error) {
	ref := jobRefOf(q.r)
	var j jobJSON
	if err := q.api.get(q.ctx(), jobPath(ref), nil, &j); err != nil {
		return "", nil, err
	}
	crumbs := append(collectionCrumbs(ref.CollectionRef()), crumb{ref.Job, jobHref(ref)})
	return "delete", &view{Title: "Delete " + ref.Job, Crumbs: crumbs, Data: jobData{Ref: ref, Job: j}}, nil
}

// --- signing in ---

type loginData struct {
	Next string
	// SignInWith names the identity provider viewers may sign in through;
	// empty when there is none.
	SignInWith string
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	sess := c.session(w, r)
	next := localPath(r.URL.Query().Get("next"))
	if !c.cfg.API.RequiresToken() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "login", &view{Title: "Sign in", CSRF: sess.CSRF, TokenRequired: true, Data: loginData{Next: next, SignInWith: c.signInWith()}})
}

func (c *Console) login(q *request) (string, *view, error) {
	token := strings.TrimSpace(q.r.PostForm.Get("token"))
	next := localPath(q.r.PostForm.Get("next"))
	refuse := func(msg string) (string, *view, error) {
		return "login", &view{Title: "Sign in", Error: msg, Data: loginData{Next: next, SignInWith: c.signInWith()}}, nil
	}
	if token == "" {
		return refuse("Enter a token.")
	}
	probe := &client{api: c.cfg.API, host: q.r.Host, token: token}
	if err := probe.get(q.ctx(), "/providers/Microsoft.Scheduler/jobCollections", nil, nil); err != nil {
		var f *apiFault
		if errors.As(err, &f) && f.Status == http.StatusUnauthorized {
			return refuse("The token was not accepted.")
		}
		return "", nil, err
	}
	c.sessions.write(q.w, q.r, c.sessions.fresh(token))
	return redirect(q, next)
}

func (c *Console) logout(q *request) (string, *view, error) {
	c.sessions.write(q.w, q.r, c.sessions.fresh(""))
	if c.cfg.API.RequiresToken() {
		return redirect(q, "/login")
	}
	return redirect(q, "/")
}
