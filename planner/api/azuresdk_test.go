package api

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	//lint:ignore SA1019 the retired service's own client is what existing users run, so it is the one to stay compatible with
	"github.com/Azure/azure-sdk-for-go/services/scheduler/mgmt/2016-03-01/scheduler"
	"github.com/Azure/go-autorest/autorest"
	"github.com/Azure/go-autorest/autorest/date"
	"github.com/Azure/go-autorest/autorest/to"
)

// The Azure SDK for Go's generated client for api-version 2016-03-01
// (azure-sdk-for-go v68, services/scheduler/mgmt/2016-03-01/scheduler) works
// against this API with only its base URL changed.
func TestAzureSDKClient(t *testing.T) {
	t.Parallel()
	b := setup(t, token1)
	ctx := context.Background()
	auth := autorest.NewBearerAuthorizer(staticToken(token1))
	collections := scheduler.NewJobCollectionsClientWithBaseURI(b.srv.URL, "sub1")
	collections.Authorizer = auth
	jobs := scheduler.NewJobsClientWithBaseURI(b.srv.URL, "sub1")
	jobs.Authorizer = auth

	t.Run("creates and reads a job collection", func(t *testing.T) {
		c, err := collections.CreateOrUpdate(ctx, "rg1", "sdk", scheduler.JobCollectionDefinition{
			Location: to.StringPtr("West Europe"),
			Properties: &scheduler.JobCollectionProperties{
				Sku:   &scheduler.Sku{Name: scheduler.P10Premium},
				State: scheduler.Enabled,
				Quota: &scheduler.JobCollectionQuota{MaxJobCount: to.Int32Ptr(20),
					MaxRecurrence: &scheduler.JobMaxRecurrence{Frequency: scheduler.Minute, Interval: to.Int32Ptr(1)}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if c.StatusCode != http.StatusCreated || to.String(c.Name) != "sdk" || c.Properties.Sku.Name != scheduler.P10Premium {
			t.Fatalf("created: %d %+v", c.StatusCode, c)
		}
		got, err := collections.Get(ctx, "rg1", "sdk")
		if err != nil || to.Int32(got.Properties.Quota.MaxJobCount) != 20 {
			t.Fatalf("get: %v %+v", err, got)
		}
		page, err := collections.ListBySubscription(ctx)
		if err != nil || len(page.Values()) != 1 {
			t.Fatalf("list: %v %d", err, len(page.Values()))
		}
	})

	t.Run("creates, lists, patches, runs and deletes jobs", func(t *testing.T) {
		start := date.Time{Time: time.Date(2015, 7, 13, 0, 0, 0, 0, time.UTC)}
		for _, name := range []string{"a", "b", "c"} {
			j, err := jobs.CreateOrUpdate(ctx, "rg1", "sdk", name, scheduler.JobDefinition{Properties: &scheduler.JobProperties{
				StartTime: &start,
				Action: &scheduler.JobAction{
					Type: scheduler.HTTP,
					Request: &scheduler.HTTPRequest{URI: to.StringPtr("https://example.com/" + name), Method: to.StringPtr("POST"),
						Headers:        map[string]*string{"Content-Type": to.StringPtr("application/json")},
						Authentication: scheduler.BasicAuthentication{Username: to.StringPtr("u"), Password: to.StringPtr("p4ss"), Type: scheduler.TypeBasic}},
					RetryPolicy: &scheduler.RetryPolicy{RetryType: scheduler.Fixed, RetryInterval: to.StringPtr("00:01:00"), RetryCount: to.Int32Ptr(2)},
				},
				Recurrence: &scheduler.JobRecurrence{
					Frequency: scheduler.Week,
					Schedule: &scheduler.JobRecurrenceSchedule{WeekDays: &[]scheduler.DayOfWeek{scheduler.Monday},
						Hours: &[]int32{5, 10, 15, 20}, Minutes: &[]int32{0, 10, 20, 30, 40, 50}},
				},
				State: scheduler.JobStateEnabled,
			}})
			if err != nil {
				t.Fatal(err)
			}
			if j.StatusCode != http.StatusCreated || to.String(j.Name) != "sdk/"+name {
				t.Fatalf("created: %d %s", j.StatusCode, to.String(j.Name))
			}
			if next := j.Properties.Status.NextExecutionTime; next == nil || !next.Equal(time.Date(2016, 4, 4, 5, 0, 0, 0, time.UTC)) {
				t.Fatalf("nextExecutionTime %v", next)
			}
		}
		var names []string
		it, err := jobs.ListComplete(ctx, "rg1", "sdk", to.Int32Ptr(2), nil, "")
		for ; err == nil && it.NotDone(); err = it.NextWithContext(ctx) {
			names = append(names, to.String(it.Value().Name))
		}
		if err != nil || len(names) != 3 {
			t.Fatalf("listing through nextLink: %v %v", err, names)
		}
		patched, err := jobs.Patch(ctx, "rg1", "sdk", "a", scheduler.JobDefinition{Properties: &scheduler.JobProperties{State: scheduler.JobStateDisabled}})
		if err != nil || patched.Properties.State != scheduler.JobStateDisabled {
			t.Fatalf("patch: %v %+v", err, patched.Properties)
		}
		page, err := jobs.List(ctx, "rg1", "sdk", nil, nil, "state eq Disabled")
		if err != nil || len(page.Values()) != 1 {
			t.Fatalf("filter: %v %d", err, len(page.Values()))
		}
		if _, err := jobs.Run(ctx, "rg1", "sdk", "b"); err != nil {
			t.Fatalf("run: %v", err)
		}
		got, err := jobs.Get(ctx, "rg1", "sdk", "b")
		if err != nil {
			t.Fatal(err)
		}
		if basic, ok := got.Properties.Action.Request.Authentication.AsBasicAuthentication(); !ok || to.String(basic.Username) != "u" || basic.Password != nil {
			t.Fatalf("authentication: %+v", got.Properties.Action.Request.Authentication)
		}
		if _, err := jobs.Delete(ctx, "rg1", "sdk", "c"); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := jobs.Get(ctx, "rg1", "sdk", "c"); err == nil {
			t.Fatal("deleted job still there")
		}
	})

	t.Run("round-trips a job without the extensions unchanged", func(t *testing.T) {
		const path = "/subscriptions/sub1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/sdk/jobs/b"
		read := func() map[string]any {
			r := b.do(t, "GET", path, "", "Authorization", "Bearer "+token1)
			if r.status != http.StatusOK {
				t.Fatalf("GET: %d %s", r.status, r.body)
			}
			return r.json(t)["properties"].(map[string]any)
		}
		before := read()
		// None of the scheduling policies shows on a job that names none.
		for _, key := range []string{"catchUp", "catchUpWindow", "overlap", "pauseAfterFaults"} {
			if _, ok := before[key]; ok {
				t.Errorf("a job without policies shows %s", key)
			}
		}
		for _, key := range []string{"flexibleWindow", "excludedCalendars", "onExcludedDay"} {
			if _, ok := before["recurrence"].(map[string]any)[key]; ok {
				t.Errorf("a job without policies shows recurrence.%s", key)
			}
		}
		for _, key := range []string{"consecutiveFaults", "stateReason"} {
			if _, ok := before["status"].(map[string]any)[key]; ok {
				t.Errorf("a job without policies shows status.%s", key)
			}
		}
		got, err := jobs.Get(ctx, "rg1", "sdk", "b")
		if err != nil {
			t.Fatal(err)
		}
		got.Properties.Status = nil
		basic, _ := got.Properties.Action.Request.Authentication.AsBasicAuthentication()
		basic.Password = to.StringPtr("p4ss") // never returned: the client sends it again
		got.Properties.Action.Request.Authentication = basic
		if _, err := jobs.CreateOrUpdate(ctx, "rg1", "sdk", "b", scheduler.JobDefinition{Properties: got.Properties}); err != nil {
			t.Fatal(err)
		}
		after := read()
		delete(before, "status")
		delete(after, "status")
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("the job written back by the SDK changed:\nbefore %v\nafter  %v", before, after)
		}
	})

	t.Run("disables, enables and deletes the collection", func(t *testing.T) {
		disable, err := collections.Disable(ctx, "rg1", "sdk")
		if err != nil {
			t.Fatal(err)
		}
		if err := disable.WaitForCompletionRef(ctx, collections.Client); err != nil {
			t.Fatal(err)
		}
		page, err := jobs.List(ctx, "rg1", "sdk", nil, nil, "state eq Enabled")
		if err != nil || len(page.Values()) != 0 {
			t.Fatalf("enabled jobs after disable: %v %d", err, len(page.Values()))
		}
		enable, err := collections.Enable(ctx, "rg1", "sdk")
		if err != nil {
			t.Fatal(err)
		}
		if err := enable.WaitForCompletionRef(ctx, collections.Client); err != nil {
			t.Fatal(err)
		}
		del, err := collections.Delete(ctx, "rg1", "sdk")
		if err != nil {
			t.Fatal(err)
		}
		if err := del.WaitForCompletionRef(ctx, collections.Client); err != nil {
			t.Fatal(err)
		}
		if _, err := collections.Get(ctx, "rg1", "sdk"); err == nil {
			t.Fatal("deleted collection still there")
		}
	})

	t.Run("errors arrive as ARM errors", func(t *testing.T) {
		_, err := jobs.Get(ctx, "rg1", "none", "none")
		var detailed autorest.DetailedError
		if !asDetailed(err, &detailed) || detailed.StatusCode != http.StatusNotFound {
			t.Fatalf("want a 404 DetailedError, got %v", err)
		}
	})
}

type staticToken string

func (s staticToken) OAuthToken() string { return string(s) }

func asDetailed(err error, target *autorest.DetailedError) bool {
	d, ok := err.(autorest.DetailedError)
	if ok {
		*target = d
	}
	return ok
}
