//go:build unix

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// Plan is a run of the fault suite.
type Plan struct {
	Settings Settings
	Mix      Mix
	// Faults are injected in this order.
	Faults []Kind
	// Down is how long a killed NATS node stays down (Redis half as long).
	Down time.Duration
	// Gap is the calm between two faults.
	Gap time.Duration
}

// Run starts a system, creates the plan's jobs, injects the faults while
// the jobs run, lets everything settle, and returns the outcome. Every
// wait has a deadline; the test's cleanup stops every process.
func Run(t *testing.T, p Plan) Outcome {
	t.Helper()
	sys := StartSystem(t, p.Settings)
	o := Outcome{Settings: sys.Settings, MustUntil: map[string]time.Time{}, MayUntil: map[string]time.Time{}}

	// The jobs start once they are all created.
	lead := 10*time.Second + time.Duration(len(p.Mix.Jobs(time.Now())))*100*time.Millisecond
	t0 := time.Now().Add(lead).Truncate(time.Second)
	o.Jobs = p.Mix.Jobs(t0)
	t.Logf("creating %d jobs starting at %s", len(o.Jobs), t0.Format("15:04:05"))
	for _, j := range o.Jobs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code, body, err := sys.API.Do(ctx, http.MethodPut, CollectionPath+"/jobs/"+j.Name, j.Definition(sys.Sink.URL()))
		cancel()
		if err != nil || code != http.StatusCreated {
			t.Fatalf("creating job %s: %d %s %v", j.Name, code, body, err)
		}
	}
	if late := time.Since(t0.Add(-time.Second)); late > 0 {
		t.Fatalf("creating the jobs took %s too long: their first instants have passed", late)
	}

	readCtx, stopReading := context.WithCancel(context.Background())
	reader := &Reader{API: &API{Bases: sys.API.Bases, Record: sys.Answers, Source: "reader", OneRound: true}, Jobs: o.Jobs}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() { defer readers.Done(); reader.Run(readCtx) }()
	t.Cleanup(func() { stopReading(); readers.Wait() })

	sleep(t.Context(), time.Until(t0.Add(5*time.Second)))
	injector := &Injector{Sys: sys, Down: p.Down, Gap: p.Gap, Healthy: 90 * time.Second, Logf: t.Logf,
		NextDue: func(after time.Time) time.Time { return p.Mix.NextTick(t0, after) }}
	o.Faults = injector.Run(t.Context(), p.Faults)
	end := t0.Add(p.Mix.Window)
	t.Logf("faults done; the jobs make occurrences until %s", end.Format("15:04:05"))
	sleep(t.Context(), time.Until(end))

	// The jobs without an end are disabled; their instants due before
	// are expected, those due after are not.
	for _, j := range o.Jobs {
		if !j.Forever {
			continue
		}
		before := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code, body, err := sys.API.Do(ctx, http.MethodPatch, CollectionPath+"/jobs/"+j.Name, `{"properties": {"state": "Disabled"}}`)
		cancel()
		if err != nil || code != http.StatusOK {
			t.Errorf("disabling job %s: %d %s %v", j.Name, code, body, err)
		}
		o.MustUntil[j.Name], o.MayUntil[j.Name] = before.Add(-2*time.Second), time.Now()
	}

	// Everything expected arrives, within a deadline that allows for the
	// longest chain of retries.
	want := map[string]bool{}
	var last time.Time
	longest := time.Duration(0)
	for _, j := range o.Jobs {
		must := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		if j.Forever {
			must = o.MustUntil[j.Name]
		}
		for k, e := range j.ExpectedAttempts(must) {
			want[k] = true
			last = latest(last, e.Instant)
		}
		main, _ := j.Attempts()
		longest = max(longest, time.Duration(main)*(j.RetryInterval+sys.Settings.ActionTimeout+sys.Settings.Lease))
	}
	deadline := last.Add(longest + time.Minute)
	t.Logf("waiting until %s for %d attempts", deadline.Format("15:04:05"), len(want))
	for time.Now().Before(deadline) && t.Context().Err() == nil {
		missing := 0
		for k := range want {
			if !sys.Sink.seen(k) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		sleep(t.Context(), 500*time.Millisecond)
	}

	// The jobs reach their final state and their history catches up.
	o.Status, o.History = map[string]contracts.JobDefinition{}, map[string][]contracts.JobHistoryDefinitionProperties{}
	settle := time.Now().Add(60 * time.Second)
	for _, j := range o.Jobs {
		for {
			def, hist, err := readJob(sys.API, j.Name)
			if err == nil {
				o.Status[j.Name], o.History[j.Name] = def, hist
			}
			if err == nil && def.Properties.State == j.FinalState() && len(hist) >= sys.Sink.keysOf(j.Name) || time.Now().After(settle) {
				break
			}
			sleep(t.Context(), 500*time.Millisecond)
		}
	}
	stopReading()
	readers.Wait()

	o.Calls = sys.Sink.Calls()
	o.API, o.Unanswered = sys.Answers.Figures(), int(reader.Unanswered.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if info, err := sys.NATS.StreamInfo(ctx, contracts.ExecStream); err == nil {
		o.ExecLastSeq, o.ExecPending = info.State.LastSeq, info.State.Msgs
	} else {
		t.Errorf("reading the EXEC stream: %v", err)
	}
	o.NotReady = sys.finalHealth(ctx)
	for _, r := range sys.Roles() {
		for _, e := range r.SelfExits() {
			o.SelfExits = append(o.SelfExits, r.Name+" "+e)
		}
	}
	o.Timeline = sys.Timeline.Events()
	return o
}

// readJob reads a job and its whole history.
func readJob(api *API, name string) (contracts.JobDefinition, []contracts.JobHistoryDefinitionProperties, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var def contracts.JobDefinition
	code, body, err := api.Do(ctx, http.MethodGet, CollectionPath+"/jobs/"+name, "")
	if err != nil || code != http.StatusOK {
		return def, nil, fmt.Errorf("GET job %s: %d %s %v", name, code, body, err)
	}
	if err := json.Unmarshal(body, &def); err != nil {
		return def, nil, err
	}
	var hist []contracts.JobHistoryDefinitionProperties
	for skip := 0; ; skip += 100 {
		code, body, err := api.Do(ctx, http.MethodGet, fmt.Sprintf("%s/jobs/%s/history?$top=100&$skip=%d", CollectionPath, name, skip), "")
		if err != nil || code != http.StatusOK {
			return def, nil, fmt.Errorf("GET history of %s: %d %s %v", name, code, body, err)
		}
		var page contracts.JobHistoryListResult
		if err := json.Unmarshal(body, &page); err != nil {
			return def, nil, err
		}
		for _, v := range page.Value {
			hist = append(hist, v.Properties)
		}
		if len(page.Value) < 100 {
			return def, hist, nil
		}
	}
}

// finalHealth returns what is not ready or healthy: each role's /readyz
// and /healthz, each NATS node's /healthz and routes, the EXEC stream's
// and the KV bucket's replicas, Redis. Roles get a minute to get there.
func (s *System) finalHealth(ctx context.Context) []string {
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_ = s.WaitHealthy(wait)
	var out []string
	for _, r := range s.Roles() {
		for _, path := range []string{"/readyz", "/healthz"} {
			if code, body := r.Probe(ctx, path); code != http.StatusOK {
				out = append(out, fmt.Sprintf("%s %s: %d %s", r.Name, path, code, body))
			}
		}
	}
	if err := s.NATS.Healthy(ctx); err != nil {
		out = append(out, err.Error())
	}
	for _, stream := range []string{contracts.ExecStream, "KV_" + contracts.JobsBucket} {
		if err := s.NATS.StreamCurrent(ctx, stream); err != nil {
			out = append(out, err.Error())
		}
	}
	if err := s.Redis.WaitUp(ctx); err != nil {
		out = append(out, err.Error())
	}
	return out
}

// Reader reads the API in the background as a client would, every
// 200 ms: it lists the jobs, or reads a job's history, from one planner
// (the other when the first does not answer). Every answer is recorded.
type Reader struct {
	API  *API
	Jobs []JobSpec
	// Unanswered counts the reads no planner answered.
	Unanswered atomic.Int64
}

// Run reads until ctx ends.
func (r *Reader) Run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		path := CollectionPath + "/jobs?$top=100"
		if i%2 == 1 {
			path = CollectionPath + "/jobs/" + url.PathEscape(r.Jobs[rand.IntN(len(r.Jobs))].Name) + "/history?$top=20"
		}
		if _, _, err := r.API.Do(ctx, http.MethodGet, path, ""); err != nil && ctx.Err() == nil {
			r.Unanswered.Add(1)
		}
		sleep(ctx, 200*time.Millisecond)
	}
}
