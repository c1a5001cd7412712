package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/seal/sealtest"
	"github.com/jobscheduler/scheduler/planner/timer"
)

// A job written by a planner before format v2 of internal/seal still runs,
// and its execution is sealed in format v2, bound to where it is sent.
func TestAJobSealedInFormatV1RunsWithAnExecutionSealedInFormatV2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	j := e.addJob(t, "old", fmt.Sprintf(`{"startTime": %q, "action": {"type": "Https", "request": {"uri": "https://example.com/hook", "method": "POST",
		"authentication": {"type": "Basic", "username": "u", "password": "OLD-PASSWORD"}}}, "recurrence": {"frequency": "Minute", "count": 1}}`,
		t0.Add(time.Minute).Format(time.RFC3339)))
	kv, err := e.js.KeyValue(ctx, contracts.JobsBucket)
	if err != nil {
		t.Fatal(err)
	}
	key := j.Ref.KVKey()
	entry, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var record map[string]json.RawMessage
	if err := json.Unmarshal(entry.Value(), &record); err != nil {
		t.Fatal(err)
	}
	props := j.Properties
	props.Action = sealtest.SealActionV1(e.sealer, j.Properties.Action, key)
	if record["properties"], err = json.Marshal(props); err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal(record)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, key, old); err != nil {
		t.Fatal(err)
	}

	d := e.planner(t, nil)
	e.clock.Set(t0.Add(time.Minute))
	d.Wake()
	e.waitCount(t, 1)
	x, _ := e.lastExecution(t)
	if !strings.Contains(string(x.Action), seal.Prefix) || strings.Contains(string(x.Action), seal.PrefixV1) {
		t.Fatalf("the execution's action is not sealed in format v2: %s", x.Action)
	}
	var sealed contracts.JobAction
	if err := json.Unmarshal(x.Action, &sealed); err != nil {
		t.Fatal(err)
	}
	a, err := e.sealer.OpenAction(&sealed, x.OccurrenceID)
	if err != nil || a.Request.Authentication.Password != "OLD-PASSWORD" {
		t.Fatalf("the execution opened as %+v (%v)", a, err)
	}
}

// An execution is encoded byte for byte as json.Marshal encodes it.
func TestAppendExecutionEncodesAsJSONMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	base := contracts.Execution{
		Version: contracts.MessageVersion, OccurrenceID: "0123456789abcdef0123456789abcdef", OccurrenceKey: "sub/rg/jc/job/20260301T093000Z/MainAction/0",
		Job: contracts.JobRef{Subscription: "sub", ResourceGroup: "rg", Collection: "jc", Job: "job"}, ActionName: contracts.MainAction,
		Occurrence: 3, Attempt: 0, ExpectedTime: at, DispatchedAt: at.Add(-499999 * time.Microsecond),
		Timeout: 60000,
	}
	action, err := json.Marshal(contracts.JobAction{Type: "Http", Request: &contracts.HTTPRequest{URI: "https://example.com/?a=1&b=<2>", Method: "POST"}})
	if err != nil {
		t.Fatal(err)
	}
	base.Action = action
	for _, tt := range []struct {
		name string
		edit func(x *contracts.Execution)
	}{
		{"an attempt of the schedule", func(*contracts.Execution) {}},
		{"the last attempt of the last occurrence, with a revision", func(x *contracts.Execution) {
			x.Revision, x.LastAttempt, x.LastOccurrence, x.Attempt, x.ActionName = 42, true, true, 3, contracts.ErrorAction
		}},
		{"a run outside the schedule, at a millisecond", func(x *contracts.Execution) {
			x.Occurrence, x.ExpectedTime = 0, at.Add(123*time.Millisecond)
		}},
		{"names that need escapes", func(x *contracts.Execution) {
			x.Job.Job, x.Job.Collection, x.OccurrenceKey = `a"b\c`, "<jc>&é\u2028\x01", "k\t"
		}},
		{"no action", func(x *contracts.Execution) { x.Action = nil }},
		{"a due time to hold it until", func(x *contracts.Execution) { x.NotBefore = at.Add(250 * time.Millisecond) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := base
			tt.edit(&x)
			want, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendExecution(nil, &x)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("appendExecution:\n%s\njson.Marshal:\n%s", got, want)
			}
		})
	}
}

// An action without a secret is encoded once per job and carried as it is
// by every attempt; one with a secret is sealed for each attempt, and
// opens only for it.
func TestAnActionIsSealedForEachAttemptOnlyWhenItHasASecret(t *testing.T) {
	t.Parallel()
	e := setup(t)
	start := t0.Add(time.Minute).Format(time.RFC3339)
	plain := e.addJob(t, "plain", fmt.Sprintf(`{"startTime": %q, "action": {"type": "Https", "request": {"uri": "https://example.com/hook", "method": "POST"},
		"errorAction": {"type": "Https", "request": {"uri": "https://example.com/error", "method": "POST",
			"authentication": {"type": "Basic", "username": "u", "password": "ERROR-PASSWORD"}}}}}`, start))
	secret := e.addJob(t, "secret", fmt.Sprintf(`{"startTime": %q, "action": {"type": "Https", "request": {"uri": "https://example.com/hook", "method": "POST",
		"authentication": {"type": "Basic", "username": "u", "password": "PASSWORD"}}}}`, start))
	build := func(cj *cached, action contracts.ActionName, attempt int) contracts.Execution {
		t.Helper()
		c := timer.Claim{Entry: timer.Entry{JobKey: cj.job.Ref.KVKey(), Due: t0, Expected: t0, Occurrence: 1, Action: action, Attempt: attempt}}
		m, err := buildExecution(e.sealer, c, cj, t0, time.Minute, false)
		if err != nil {
			t.Fatal(err)
		}
		x, err := contracts.DecodeExecution(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	open := func(x contracts.Execution, id string) (*contracts.JobAction, error) {
		var sealed contracts.JobAction
		if err := json.Unmarshal(x.Action, &sealed); err != nil {
			t.Fatal(err)
		}
		return e.sealer.OpenAction(&sealed, id)
	}

	cj := &cached{job: plain}
	first, second := build(cj, contracts.MainAction, 0), build(cj, contracts.MainAction, 1)
	if string(first.Action) != string(second.Action) || strings.Contains(string(first.Action), "errorAction") {
		t.Errorf("the actions of two attempts of a job without a secret: %s and %s", first.Action, second.Action)
	}
	if _, ok := cj.plain.Load(contracts.MainAction); !ok {
		t.Error("the action without a secret is not kept with the job")
	}
	// Its error action has one: sealed for each attempt, never kept.
	errFirst, errSecond := build(cj, contracts.ErrorAction, 0), build(cj, contracts.ErrorAction, 1)
	if string(errFirst.Action) == string(errSecond.Action) {
		t.Error("the error action's secret is sealed the same for two attempts")
	}
	if _, ok := cj.plain.Load(contracts.ErrorAction); ok {
		t.Error("an action with a secret is kept with the job")
	}
	if a, err := open(errSecond, errSecond.OccurrenceID); err != nil || a.Request.Authentication.Password != "ERROR-PASSWORD" {
		t.Errorf("the error action opened as %+v (%v)", a, err)
	}

	sj := &cached{job: secret}
	one, two := build(sj, contracts.MainAction, 0), build(sj, contracts.MainAction, 1)
	if _, err := open(two, one.OccurrenceID); err == nil {
		t.Error("the second attempt's secret opens for the first attempt")
	}
	if a, err := open(two, two.OccurrenceID); err != nil || a.Request.Authentication.Password != "PASSWORD" {
		t.Errorf("the second attempt's action opened as %+v (%v)", a, err)
	}
}
