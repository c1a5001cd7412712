package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/store"
)

const base = "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections"

// fakeScheduling records runs. It knows no next executions and no tallies,
// so the API computes them from definitions, unless a test sets a job's
// timer entry (planned) or tally.
type fakeScheduling struct {
	mu      sync.Mutex
	runs    []contracts.JobRef
	planned map[string]plannedEntry // by job name
	tallies map[string]contracts.Tally
	// followUps are the retries, error actions and runs the timer holds
	// beside a job's scheduled occurrence, by job name.
	followUps map[string][]TimerEntry
	// backfills are the backfills scheduled; backfillErr, when set, is
	// what Backfill returns instead.
	backfills   []backfillCall
	backfillErr error
	// runtimesCalls holds the jobs asked of each call of Runtimes.
	runtimesCalls [][]string
	// executions are the attempts counted per minute, by collection
	// (CollectionRef.Tokens).
	executions map[string][]MinuteExecutions
}

// plannedEntry is what the timer holds of a job: its scheduled occurrence
// and the number of occurrences after it.
type plannedEntry struct {
	at        time.Time
	remaining int64
}

func (f *fakeScheduling) Runtimes(_ context.Context, refs []contracts.JobRef) ([]time.Time, []contracts.Tally, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	next, tallies := make([]time.Time, len(refs)), make([]contracts.Tally, len(refs))
	asked := make([]string, len(refs))
	for i, r := range refs {
		next[i], tallies[i], asked[i] = f.planned[r.Job].at, f.tallies[r.Job], r.Job
	}
	f.runtimesCalls = append(f.runtimesCalls, asked)
	return next, tallies, nil
}

func (f *fakeScheduling) Scheduled(_ context.Context, ref contracts.JobRef) (time.Time, int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.planned[ref.Job]
	return p.at, p.remaining, ok, nil
}

func (f *fakeScheduling) Pending(_ context.Context, refs []contracts.JobRef) ([][]TimerEntry, []contracts.Tally, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	held, tallies := make([][]TimerEntry, len(refs)), make([]contracts.Tally, len(refs))
	for i, r := range refs {
		if p, ok := f.planned[r.Job]; ok {
			held[i] = append(held[i], TimerEntry{Kind: RunScheduled, Due: p.at, Remaining: p.remaining})
		}
		held[i], tallies[i] = append(held[i], f.followUps[r.Job]...), f.tallies[r.Job]
	}
	return held, tallies, nil
}

func (f *fakeScheduling) ExecutionCounts(_ context.Context, cols []contracts.CollectionRef, from, to time.Time) ([]MinuteExecutions, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sums := map[time.Time]MinuteExecutions{}
	for _, c := range cols {
		for _, m := range f.executions[c.Tokens()] {
			if m.Minute.Before(from.Truncate(time.Minute)) || !m.Minute.Before(to) {
				continue
			}
			s := sums[m.Minute]
			s.Minute, s.Succeeded, s.Failed = m.Minute, s.Succeeded+m.Succeeded, s.Failed+m.Failed
			sums[m.Minute] = s
		}
	}
	out := slices.SortedFunc(maps.Values(sums), func(a, b MinuteExecutions) int { return a.Minute.Compare(b.Minute) })
	return out, nil
}

// countExecutions makes the timer hold the attempts counted in the
// collection's minutes.
func (f *fakeScheduling) countExecutions(col contracts.CollectionRef, minutes ...MinuteExecutions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.executions == nil {
		f.executions = map[string][]MinuteExecutions{}
	}
	f.executions[col.Tokens()] = append(f.executions[col.Tokens()], minutes...)
}

// takeRuntimesCalls returns the jobs asked of each call of Runtimes since
// the last time, and forgets them.
func (f *fakeScheduling) takeRuntimesCalls() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.runtimesCalls
	f.runtimesCalls = nil
	return calls
}

// runCount returns the number of runs scheduled.
func (f *fakeScheduling) runCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.runs)
}

// set makes the timer hold a job's entry and tally.
func (f *fakeScheduling) set(job string, p *plannedEntry, tally contracts.Tally) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.planned == nil {
		f.planned, f.tallies = map[string]plannedEntry{}, map[string]contracts.Tally{}
	}
	delete(f.planned, job)
	if p != nil {
		f.planned[job] = *p
	}
	f.tallies[job] = tally
}

// backfillCall is a call of Backfill.
type backfillCall struct {
	job        contracts.JobRef
	start, end time.Time
}

func (f *fakeScheduling) Backfill(_ context.Context, j store.Job, start, end time.Time) (BackfillPlan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.backfillErr != nil {
		return BackfillPlan{}, f.backfillErr
	}
	f.backfills = append(f.backfills, backfillCall{j.Ref, start, end})
	return BackfillPlan{Count: 3, First: start, Last: end, Pace: time.Second}, nil
}

func (f *fakeScheduling) RunNow(_ context.Context, j store.Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, j.Ref)
	return nil
}

type bundle struct {
	srv   *httptest.Server
	api   *Server
	store *store.Store
	sched *fakeScheduling
	now   time.Time
	ns    *server.Server
	nc    *nats.Conn // the API's connection
}

func setup(t testing.TB, tokens ...string) *bundle {
	t.Helper()
	return setupWith(t, testkit.NATS(t), Config{Tokens: tokens})
}

// setupWith serves the API with cfg over a store on ns; the API's clock is
// the bundle's now. Its connection reconnects at once when ns restarts.
// Each of prepare changes the bundle's API before it serves.
func setupWith(t testing.TB, ns *server.Server, cfg Config, prepare ...func(*bundle)) *bundle {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL(), nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := seal.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), js, store.Config{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{store: st, sched: &fakeScheduling{}, now: time.Date(2016, 3, 30, 20, 0, 0, 0, time.UTC), ns: ns, nc: nc}
	cfg.Now = func() time.Time { return b.now }
	b.api = New(st, b.sched, cfg)
	for _, p := range prepare {
		p(b)
	}
	b.srv = httptest.NewServer(b.api)
	b.api.Listening(b.srv.Listener.Addr().String(), false)
	t.Cleanup(b.srv.Close)
	return b
}

// testClient gives up on a request after 10 s, so a request that hangs the
// server fails the test (and the fuzzer keeps the input).
var testClient = &http.Client{Timeout: 10 * time.Second}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// errorCode returns error.code of an ARM error body.
func (r response) errorCode(t testing.TB) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (b *bundle) do(t testing.TB, method, path, body string, header ...string) response {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, err := http.NewRequest(method, b.srv.URL+path+sep+"api-version=2016-03-01", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.Header.Get("x-ms-request-id") == "" {
		t.Errorf("%s %s: no x-ms-request-id", method, path)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

func (b *bundle) mustDo(t testing.TB, want int, method, path, body string) response {
	t.Helper()
	r := b.do(t, method, path, body)
	if r.status != want {
		t.Fatalf("%s %s: status %d, want %d\n%s", method, path, r.status, want, r.body)
	}
	return r
}

const collectionBody = `{"location": "South Central US", "tags": {"team": "ops"},
	"properties": {"sku": {"name": "Standard"}, "state": "Enabled", "quota": {"maxJobCount": 3, "maxRecurrence": {"frequency": "Minute", "interval": 1}}}}`

// weeklyJob is the real service's recorded example: created Wed 2016-03-30,
// its next execution is Monday 2016-04-04T05:00:00Z.
const weeklyJob = `{"properties": {"startTime": "2015-07-13T00:00:00Z",
	"action": {"type": "StorageQueue", "queueMessage": {"storageAccount": "contoso", "queueName": "jobs", "sasToken": "sv=2015&sig=SECRET-SAS", "message": "hello"},
		"retryPolicy": {"retryType": "Fixed", "retryInterval": "00:01:00", "retryCount": 2}},
	"recurrence": {"frequency": "Week", "schedule": {"weekDays": ["Monday"], "hours": [5, 10, 15, 20], "minutes": [0, 10, 20, 30, 40, 50]}},
	"state": "Enabled"}}`

func TestCollections(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("PUT creates with 201, then replaces with 200", func(t *testing.T) {
		r := b.mustDo(t, http.StatusCreated, "PUT", base+"/jc1", collectionBody)
		m := r.json(t)
		if m["id"] != base+"/jc1" || m["type"] != "Microsoft.Scheduler/jobCollections" || m["name"] != "jc1" {
			t.Fatalf("envelope: %s", r.body)
		}
		b.mustDo(t, http.StatusOK, "PUT", base+"/jc1", collectionBody)
	})
	t.Run("GET returns it and a missing one is 404", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "GET", base+"/JC1", "") // names are case-insensitive
		if !strings.Contains(string(r.body), `"maxJobCount":3`) {
			t.Fatalf("quota lost: %s", r.body)
		}
		if code := b.mustDo(t, http.StatusNotFound, "GET", base+"/nope", "").errorCode(t); code != codeNotFound {
			t.Fatalf("code %q", code)
		}
	})
	t.Run("PATCH merges into the stored collection", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "PATCH", base+"/jc1", `{"tags": {"env": "prod"}, "properties": {"state": "suspended"}}`)
		s := string(r.body)
		if !strings.Contains(s, `"team":"ops"`) || !strings.Contains(s, `"env":"prod"`) || !strings.Contains(s, `"state":"Suspended"`) {
			t.Fatalf("merge: %s", s)
		}
		b.mustDo(t, http.StatusNotFound, "PATCH", base+"/nope", `{}`)
	})
	t.Run("lists by resource group and by subscription", func(t *testing.T) {
		b.mustDo(t, http.StatusCreated, "PUT", "/subscriptions/sub1/resourceGroups/rg2/providers/Microsoft.Scheduler/jobCollections/other", `{"properties": {}}`)
		byGroup := b.mustDo(t, http.StatusOK, "GET", base, "").json(t)["value"].([]any)
		bySub := b.mustDo(t, http.StatusOK, "GET", "/subscriptions/sub1/providers/Microsoft.Scheduler/jobCollections", "").json(t)["value"].([]any)
		if len(byGroup) != 1 || len(bySub) != 2 {
			t.Fatalf("by group %d, by subscription %d", len(byGroup), len(bySub))
		}
	})
	t.Run("invalid definitions are 400 naming the field", func(t *testing.T) {
		r := b.mustDo(t, http.StatusBadRequest, "PUT", base+"/jc2", `{"properties": {"sku": {"name": "Gold"}, "quota": {"maxJobCount": 0}}}`)
		s := string(r.body)
		if !strings.Contains(s, "properties.sku.name") || !strings.Contains(s, "properties.quota.maxJobCount") {
			t.Fatalf("body: %s", s)
		}
		b.mustDo(t, http.StatusBadRequest, "PUT", base+"/bad.name", collectionBody)
		b.mustDo(t, http.StatusNotFound, "GET", base+"/jc2", "")
	})
	t.Run("DELETE removes it and its jobs", func(t *testing.T) {
		b.mustDo(t, http.StatusCreated, "PUT", base+"/gone", collectionBody)
		b.mustDo(t, http.StatusCreated, "PUT", base+"/gone/jobs/j", weeklyJob)
		b.mustDo(t, http.StatusOK, "DELETE", base+"/gone", "")
		b.mustDo(t, http.StatusNotFound, "GET", base+"/gone", "")
		b.mustDo(t, http.StatusNotFound, "GET", base+"/gone/jobs/j", "")
		b.mustDo(t, http.StatusNotFound, "DELETE", base+"/gone", "")
	})
}

func TestJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)

	t.Run("PUT creates with 201 and the status the real service showed", func(t *testing.T) {
		r := b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/weekly", weeklyJob)
		m := r.json(t)
		if m["id"] != base+"/jc/jobs/weekly" || m["name"] != "jc/weekly" || m["type"] != "Microsoft.Scheduler/jobCollections/jobs" {
			t.Fatalf("envelope: %s", r.body)
		}
		status := m["properties"].(map[string]any)["status"].(map[string]any)
		if status["nextExecutionTime"] != "2016-04-04T05:00:00Z" || status["executionCount"] != 0.0 ||
			status["failureCount"] != 0.0 || status["faultedCount"] != 0.0 {
			t.Fatalf("status: %v", status)
		}
		if _, ok := status["lastExecutionTime"]; ok {
			t.Fatalf("lastExecutionTime before any execution: %v", status)
		}
		b.mustDo(t, http.StatusOK, "PUT", base+"/jc/jobs/weekly", weeklyJob)
	})
	t.Run("secrets are never returned", func(t *testing.T) {
		for _, r := range []response{
			b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/weekly", ""),
			b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs", ""),
			b.mustDo(t, http.StatusOK, "PATCH", base+"/jc/jobs/weekly", `{"properties": {"state": "Enabled"}}`),
		} {
			if strings.Contains(string(r.body), "SECRET") || strings.Contains(string(r.body), `"sasToken":`) {
				t.Fatalf("secret returned: %s", r.body)
			}
			// Only that it is set is shown.
			if !strings.Contains(string(r.body), `"setSecrets":["action.queueMessage.sasToken"]`) {
				t.Fatalf("the set secret is not named in setSecrets: %s", r.body)
			}
		}
	})
	t.Run("PATCH keeps stored secrets and merges a change", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "PATCH", base+"/jc/jobs/weekly", `{"properties": {"state": "disabled", "recurrence": {"schedule": {"hours": [6]}}}}`)
		s := string(r.body)
		if !strings.Contains(s, `"state":"Disabled"`) || !strings.Contains(s, `"hours":[6]`) || strings.Contains(s, "nextExecutionTime") {
			t.Fatalf("patch: %s", s)
		}
		j, err := b.store.GetJob(context.Background(), contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc", Job: "weekly"})
		if err != nil || j.Properties.Action.QueueMessage.SASToken != "sv=2015&sig=SECRET-SAS" {
			t.Fatalf("stored secret lost: %v %+v", err, j.Properties.Action)
		}
		r = b.mustDo(t, http.StatusBadRequest, "PATCH", base+"/jc/jobs/weekly", `{"properties": {"recurrence": {"interval": 100}}}`)
		if !strings.Contains(string(r.body), "properties.recurrence.interval") {
			t.Fatalf("path: %s", r.body)
		}
		b.mustDo(t, http.StatusNotFound, "PATCH", base+"/jc/jobs/none", `{}`)
	})
	t.Run("an invalid job is 400 with every violation and is not stored", func(t *testing.T) {
		r := b.mustDo(t, http.StatusBadRequest, "PUT", base+"/jc/jobs/bad",
			`{"properties": {"action": {"type": "Http", "request": {"uri": "not a uri"}}, "recurrence": {"frequency": "Minute", "interval": 5000}}}`)
		s := string(r.body)
		for _, want := range []string{"properties.action.request.uri", "properties.action.request.method", "properties.recurrence.interval"} {
			if !strings.Contains(s, want) {
				t.Errorf("no %s in %s", want, s)
			}
		}
		b.mustDo(t, http.StatusNotFound, "GET", base+"/jc/jobs/bad", "")
	})
	t.Run("a job in a missing collection is 404 and not created", func(t *testing.T) {
		b.mustDo(t, http.StatusNotFound, "PUT", base+"/missing/jobs/j", weeklyJob)
		b.mustDo(t, http.StatusNotFound, "GET", base+"/missing/jobs/j", "")
	})
	t.Run("maxJobCount is enforced with 409", func(t *testing.T) {
		b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/two", weeklyJob)
		b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/three", weeklyJob)
		if code := b.mustDo(t, http.StatusConflict, "PUT", base+"/jc/jobs/four", weeklyJob).errorCode(t); code != codeQuotaExceeded {
			t.Fatalf("code %q", code)
		}
		b.mustDo(t, http.StatusOK, "PUT", base+"/jc/jobs/three", weeklyJob) // replacing is not creating
	})
	t.Run("maxRecurrence is enforced with 409", func(t *testing.T) {
		b.mustDo(t, http.StatusCreated, "PUT", base+"/free", `{"properties": {"sku": {"name": "Free"}}}`)
		every30min := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
			"recurrence": {"frequency": "Minute", "interval": 30}}}`
		r := b.mustDo(t, http.StatusConflict, "PUT", base+"/free/jobs/often", every30min)
		if !strings.Contains(string(r.body), "maxRecurrence") {
			t.Fatalf("body: %s", r.body)
		}
		hourly := strings.Replace(every30min, `"interval": 30`, `"interval": 60`, 1)
		b.mustDo(t, http.StatusCreated, "PUT", base+"/free/jobs/hourly", hourly)
	})
	t.Run("list pages with $top, $skip, $filter and nextLink", func(t *testing.T) {
		r := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$top=2", "").json(t)
		if len(r["value"].([]any)) != 2 || r["nextLink"] == nil {
			t.Fatalf("page 1: %v", r)
		}
		link := r["nextLink"].(string)
		if !strings.Contains(link, "%24skip=2") && !strings.Contains(link, "$skip=2") {
			t.Fatalf("nextLink %q", link)
		}
		r = b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$top=2&$skip=2", "").json(t)
		if len(r["value"].([]any)) != 1 || r["nextLink"] != nil {
			t.Fatalf("page 2: %v", r)
		}
		r = b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$filter=state%20eq%20disabled", "").json(t)
		if v := r["value"].([]any); len(v) != 1 || v[0].(map[string]any)["name"] != "jc/weekly" {
			t.Fatalf("filter: %v", r)
		}
		for _, q := range []string{"$top=0", "$top=101", "$skip=-1", "$filter=status%20eq%20Failed", "$filter=state%20eq%20Sleeping"} {
			b.mustDo(t, http.StatusBadRequest, "GET", base+"/jc/jobs?"+q, "")
		}
		b.mustDo(t, http.StatusNotFound, "GET", base+"/none/jobs", "")
	})
	t.Run("run executes the job now", func(t *testing.T) {
		b.mustDo(t, http.StatusOK, "POST", base+"/jc/jobs/two/run", "")
		if len(b.sched.runs) != 1 || b.sched.runs[0].Job != "two" {
			t.Fatalf("runs: %v", b.sched.runs)
		}
		b.mustDo(t, http.StatusNotFound, "POST", base+"/jc/jobs/none/run", "")
	})
	t.Run("a Completed job can only be deleted", func(t *testing.T) {
		ctx := context.Background()
		ref := contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc", Job: "two"}
		j, err := b.store.GetJob(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		j.Properties.State = contracts.JobStateCompleted
		if _, err := b.store.UpdateJob(ctx, j, j.Revision); err != nil {
			t.Fatal(err)
		}
		b.mustDo(t, http.StatusConflict, "PUT", base+"/jc/jobs/two", weeklyJob)
		b.mustDo(t, http.StatusConflict, "PATCH", base+"/jc/jobs/two", `{"properties": {"state": "Enabled"}}`)
		b.mustDo(t, http.StatusConflict, "POST", base+"/jc/jobs/two/run", "")
		b.mustDo(t, http.StatusOK, "DELETE", base+"/jc/jobs/two", "")
		b.mustDo(t, http.StatusNotFound, "DELETE", base+"/jc/jobs/two", "")
	})
	t.Run("disable and enable set every job's state", func(t *testing.T) {
		b.mustDo(t, http.StatusOK, "POST", base+"/jc/disable", "")
		r := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$filter=state%20eq%20Enabled", "").json(t)
		if len(r["value"].([]any)) != 0 {
			t.Fatalf("enabled after disable: %v", r)
		}
		b.mustDo(t, http.StatusOK, "POST", base+"/jc/enable", "")
		r = b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$filter=state%20eq%20Disabled", "").json(t)
		if len(r["value"].([]any)) != 0 {
			t.Fatalf("disabled after enable: %v", r)
		}
		if s := b.mustDo(t, http.StatusOK, "GET", base+"/jc", "").body; !strings.Contains(string(s), `"state":"Enabled"`) {
			t.Fatalf("collection: %s", s)
		}
	})
}

func TestAJobsStatusShowsHowItsLatestAttemptEnded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/weekly", weeklyJob)
	status := func(t *testing.T) map[string]any {
		t.Helper()
		m := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/weekly", "").json(t)
		return m["properties"].(map[string]any)["status"].(map[string]any)
	}
	if s := status(t); s["lastStatus"] != nil {
		t.Fatalf("lastStatus before any attempt: %v", s)
	}
	ran := time.Date(2016, 3, 30, 19, 0, 0, 0, time.UTC)
	b.sched.set("weekly", nil, contracts.Tally{Executions: 3, Failures: 3, Faulted: 1, LastExecution: ran,
		LastStatus: contracts.LastFaulted, LastStatusTime: ran.Add(time.Second)})
	if s := status(t); s["lastStatus"] != "Faulted" || s["faultedCount"] != 1.0 {
		t.Fatalf("status: %v", s)
	}
	list := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs", "").json(t)["value"].([]any)
	if s := list[0].(map[string]any)["properties"].(map[string]any)["status"].(map[string]any); s["lastStatus"] != "Faulted" {
		t.Fatalf("listed status: %v", s)
	}
}

func TestRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, token1, token2)
	t.Run("a request without a valid bearer token is 401", func(t *testing.T) {
		if code := b.mustDo(t, http.StatusUnauthorized, "GET", base, "").errorCode(t); code != codeAuthFailed {
			t.Fatalf("code %q", code)
		}
		if r := b.do(t, "GET", base, "", "Authorization", "Bearer wrong"); r.status != http.StatusUnauthorized {
			t.Fatalf("status %d", r.status)
		}
		if r := b.do(t, "GET", base, "", "Authorization", "Bearer "+token2); r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	})
	auth := []string{"Authorization", "Bearer " + token1}
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"an unknown path is 404", "GET", "/subscriptions/s/somewhere", "", http.StatusNotFound},
		{"a wrong method is 405", "POST", base + "/jc", "", http.StatusMethodNotAllowed},
		{"malformed JSON is 400", "PUT", base + "/jc", "{", http.StatusBadRequest},
		{"a body over 1 MiB is 413", "PUT", base + "/jc", `{"tags": {"a": "` + strings.Repeat("x", 2<<20) + `"}}`, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := b.do(t, tt.method, tt.path, tt.body, auth...)
			if r.status != tt.status || r.errorCode(t) == "" {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
		})
	}
	t.Run("an unsupported api-version is 400", func(t *testing.T) {
		req, _ := http.NewRequest("GET", b.srv.URL+base+"?api-version=1999-01-01", nil)
		req.Header.Set("Authorization", "Bearer "+token1)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", res.StatusCode)
		}
	})
}

// Regression: run answered 200 and did nothing for a Disabled job, or a job
// in a disabled collection.
func TestRunAnswers409WhenTheJobCannotRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)
	message := func(r response) string {
		t.Helper()
		return r.json(t)["error"].(map[string]any)["message"].(string)
	}

	b.mustDo(t, http.StatusOK, "PATCH", base+"/jc/jobs/j", `{"properties": {"state": "Disabled"}}`)
	if msg := message(b.mustDo(t, http.StatusConflict, "POST", base+"/jc/jobs/j/run", "")); msg != `job "j" in job collection "jc" is Disabled: enable it to run it` {
		t.Errorf("a Disabled job: %q", msg)
	}
	b.mustDo(t, http.StatusOK, "PATCH", base+"/jc/jobs/j", `{"properties": {"state": "Enabled"}}`)
	b.mustDo(t, http.StatusOK, "POST", base+"/jc/disable", "")
	if msg := message(b.mustDo(t, http.StatusConflict, "POST", base+"/jc/jobs/j/run", "")); !strings.Contains(msg, `job collection "jc" in resource group "rg1" is Disabled: its jobs cannot run`) {
		t.Errorf("a job in a Disabled collection: %q", msg)
	}
	b.mustDo(t, http.StatusOK, "POST", base+"/jc/enable", "")
	b.mustDo(t, http.StatusOK, "PATCH", base+"/jc", `{"properties": {"state": "Suspended"}}`)
	if msg := message(b.mustDo(t, http.StatusConflict, "POST", base+"/jc/jobs/j/run", "")); !strings.Contains(msg, "is Suspended: its jobs cannot run") {
		t.Errorf("a job in a Suspended collection: %q", msg)
	}
	b.mustDo(t, http.StatusOK, "PATCH", base+"/jc", `{"properties": {"state": "Enabled"}}`)
	if n := b.sched.runCount(); n != 0 {
		t.Fatalf("%d runs scheduled, want none", n)
	}
	b.mustDo(t, http.StatusOK, "POST", base+"/jc/jobs/j/run", "")
	if n := b.sched.runCount(); n != 1 {
		t.Fatalf("%d runs scheduled, want one", n)
	}
}

// Regression: a collection could be moved to a plan or quota below what it
// holds (Standard to Free with 7 every-minute jobs answered 200).
func TestCollectionQuotaCannotDropBelowItsJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	everyMinute := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "Minute", "interval": 1}}}`
	hourly := strings.Replace(everyMinute, `"Minute"`, `"Hour"`, 1)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/std", `{"properties": {"sku": {"name": "Standard"}}}`)
	for i := range 7 {
		b.mustDo(t, http.StatusCreated, "PUT", fmt.Sprintf("%s/std/jobs/job%d", base, i), everyMinute)
	}
	stored := string(b.mustDo(t, http.StatusOK, "GET", base+"/std", "").body)

	t.Run("a plan that holds fewer jobs is refused naming the numbers", func(t *testing.T) {
		r := b.mustDo(t, http.StatusConflict, "PUT", base+"/std", `{"properties": {"sku": {"name": "Free"}}}`)
		if r.errorCode(t) != codeQuotaExceeded || !strings.Contains(string(r.body), "holds 7 jobs, more than the 5") {
			t.Errorf("PUT: %s", r.body)
		}
		r = b.mustDo(t, http.StatusConflict, "PATCH", base+"/std", `{"properties": {"quota": {"maxJobCount": 6}}}`)
		if !strings.Contains(string(r.body), "holds 7 jobs, more than the 6") {
			t.Errorf("PATCH: %s", r.body)
		}
	})
	t.Run("a maxRecurrence a job recurs more often than is refused naming the job", func(t *testing.T) {
		r := b.mustDo(t, http.StatusConflict, "PATCH", base+"/std", `{"properties": {"quota": {"maxRecurrence": {"frequency": "Hour", "interval": 1}}}}`)
		if r.errorCode(t) != codeQuotaExceeded || !strings.Contains(string(r.body), `its job \"job0\"`) || !strings.Contains(string(r.body), "every 1h0m0s") {
			t.Errorf("PATCH: %s", r.body)
		}
	})
	t.Run("nothing stored changed", func(t *testing.T) {
		if now := string(b.mustDo(t, http.StatusOK, "GET", base+"/std", "").body); now != stored {
			t.Errorf("the collection changed:\n%s\nwas\n%s", now, stored)
		}
	})
	t.Run("a quota the jobs fit in is taken, and other changes stay possible", func(t *testing.T) {
		for i := range 7 {
			if i < 5 {
				b.mustDo(t, http.StatusOK, "PUT", fmt.Sprintf("%s/std/jobs/job%d", base, i), hourly)
			} else {
				b.mustDo(t, http.StatusOK, "DELETE", fmt.Sprintf("%s/std/jobs/job%d", base, i), "")
			}
		}
		b.mustDo(t, http.StatusOK, "PUT", base+"/std", `{"properties": {"sku": {"name": "Free"}}}`)
		b.mustDo(t, http.StatusOK, "PATCH", base+"/std", `{"tags": {"env": "test"}}`)
	})
}

// A quota made stricter while a job is being created under the old one
// counts that job: the change is written before the jobs are counted, and
// taken back when they do not fit. The job stays, created under the quota
// that held when it was written.
func TestAQuotaLoweredWhileAJobIsCreatedCountsIt(t *testing.T) {
	t.Parallel()
	meanwhile := &jobCreatedMeanwhile{}
	b := setupWith(t, testkit.NATS(t), Config{}, func(b *bundle) {
		meanwhile.Store = b.store
		b.api.store = jobStore{st: meanwhile}
	})
	everyMinute := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "Minute", "interval": 1}}}`
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", `{"properties": {"sku": {"name": "Standard"}, "quota": {"maxJobCount": 3}}}`)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/a", everyMinute)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/b", everyMinute)
	stored := string(b.mustDo(t, http.StatusOK, "GET", base+"/jc", "").body)
	ref := contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc", Job: "c"}
	one := 1
	props := contracts.JobProperties{
		Action:     &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{URI: "https://example.com", Method: "GET"}},
		Recurrence: &contracts.Recurrence{Frequency: contracts.FrequencyMinute, Interval: &one},
		State:      contracts.JobStateEnabled,
	}

	meanwhile.job.Store(&store.Job{Ref: ref, Properties: props})
	r := b.mustDo(t, http.StatusConflict, "PATCH", base+"/jc", `{"properties": {"quota": {"maxJobCount": 2}}}`)
	if r.errorCode(t) != codeQuotaExceeded || !strings.Contains(string(r.body), "holds 3 jobs, more than the 2") {
		t.Fatalf("PATCH: %s", r.body)
	}
	if now := string(b.mustDo(t, http.StatusOK, "GET", base+"/jc", "").body); now != stored {
		t.Errorf("the quota was not put back:\n%s\nwas\n%s", now, stored)
	}
	b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/c", "")

	ref.Job = "d"
	b.mustDo(t, http.StatusOK, "DELETE", base+"/jc/jobs/c", "")
	meanwhile.job.Store(&store.Job{Ref: ref, Properties: props})
	r = b.mustDo(t, http.StatusConflict, "PATCH", base+"/jc", `{"properties": {"quota": {"maxRecurrence": {"frequency": "Hour", "interval": 1}}}}`)
	if r.errorCode(t) != codeQuotaExceeded {
		t.Fatalf("PATCH: %s", r.body)
	}
	if now := string(b.mustDo(t, http.StatusOK, "GET", base+"/jc", "").body); now != stored {
		t.Errorf("the quota was not put back:\n%s\nwas\n%s", now, stored)
	}
}

// jobCreatedMeanwhile creates the job set in job just before the next
// change of a collection is written, after the change read the collection:
// as another request creating it at that moment would.
type jobCreatedMeanwhile struct {
	*store.Store
	job atomic.Pointer[store.Job]
}

func (m *jobCreatedMeanwhile) PutCollection(ctx context.Context, c store.Collection, expected uint64) (store.Collection, error) {
	if j := m.job.Swap(nil); j != nil && expected != 0 {
		if _, err := m.Store.CreateJobIn(ctx, *j, store.Admission{CollectionRevision: expected}); err != nil {
			return store.Collection{}, err
		}
	}
	return m.Store.PutCollection(ctx, c, expected)
}

// A job whose creator read its collection before the collection changed is
// not kept as read: the create is drafted again against the collection as
// it is, here with a quota it no longer fits in.
func TestAJobDraftedBeforeTheQuotaWasLoweredIsDraftedAgain(t *testing.T) {
	t.Parallel()
	stale := &collectionChangedMeanwhile{}
	b := setupWith(t, testkit.NATS(t), Config{}, func(b *bundle) {
		stale.Store = b.store
		b.api.store = jobStore{st: stale}
	})
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", `{"properties": {"sku": {"name": "Standard"}}}`)
	everyMinute := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "Minute", "interval": 1}}}`
	stale.to.Store(&contracts.JobCollectionQuota{MaxRecurrence: &contracts.JobMaxRecurrence{Frequency: contracts.FrequencyHour}})
	r := b.mustDo(t, http.StatusConflict, "PUT", base+"/jc/jobs/often", everyMinute)
	if r.errorCode(t) != codeQuotaExceeded || !strings.Contains(string(r.body), "maxRecurrence") {
		t.Fatalf("PUT: %s", r.body)
	}
	b.mustDo(t, http.StatusNotFound, "GET", base+"/jc/jobs/often", "")
	if stale.refused.Load() != 1 {
		t.Errorf("%d creates were refused for a changed collection, want 1", stale.refused.Load())
	}
}

// collectionChangedMeanwhile sets the collection's quota to the one in to
// just before a job is created, after the create read the collection: as
// another request changing it at that moment would.
type collectionChangedMeanwhile struct {
	*store.Store
	to      atomic.Pointer[contracts.JobCollectionQuota]
	refused atomic.Int32
}

func (q *collectionChangedMeanwhile) CreateJobIn(ctx context.Context, j store.Job, a store.Admission) (store.Job, error) {
	if quota := q.to.Swap(nil); quota != nil {
		c, err := q.Store.GetCollection(ctx, j.Ref.CollectionRef())
		if err != nil {
			return store.Job{}, err
		}
		c.Properties.Quota = quota
		if _, err := q.Store.PutCollection(ctx, c, c.Revision); err != nil {
			return store.Job{}, err
		}
	}
	saved, err := q.Store.CreateJobIn(ctx, j, a)
	if errors.Is(err, store.ErrConflict) {
		q.refused.Add(1)
	}
	return saved, err
}

// Request data the API echoes (nextLink, error messages) is safe however
// long: no 5xx, and an error message quotes only the start of a value.
func TestLongInputsAreEchoedSafely(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc", collectionBody)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/a", weeklyJob)
	b.mustDo(t, http.StatusCreated, "PUT", base+"/jc/jobs/b", weeklyJob)
	long := strings.Repeat("x", 100_000)

	r := b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs?$top=1&other="+long, "").json(t)
	if link, _ := r["nextLink"].(string); !strings.Contains(link, "%24skip=1") && !strings.Contains(link, "$skip=1") {
		t.Errorf("nextLink of a long query: %.200s", link)
	}
	b.mustDo(t, http.StatusOK, "GET", base+"/jc/jobs/a/history?$top=1&other="+long, "")
	for _, q := range []string{"$top=" + long, "$skip=" + long, "$filter=" + long, "$filter=state%20eq%20" + long} {
		r := b.mustDo(t, http.StatusBadRequest, "GET", base+"/jc/jobs?"+q, "")
		if len(r.body) > 500 || !strings.Contains(string(r.body), "(100000 bytes)") {
			t.Errorf("GET …/jobs?%.20s…: %d bytes: %.300s", q, len(r.body), r.body)
		}
	}
	if r := b.mustDo(t, http.StatusBadRequest, "GET", base+"/jc/jobs/a/preview?count="+long, ""); len(r.body) > 500 {
		t.Errorf("preview with a long count: %d bytes", len(r.body))
	}
	if r := b.mustDo(t, http.StatusNotFound, "GET", "/subscriptions/"+long, ""); len(r.body) > 500 {
		t.Errorf("an unknown long path: %d bytes", len(r.body))
	}
}
