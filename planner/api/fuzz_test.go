package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/planner"
)

// FuzzJobBodies PUTs and PATCHes mutated job bodies at a stored job: no
// answer is a 5xx, and whatever is stored afterwards is still a valid job.
// Every input writes to the store, so minimizing an interesting one is slow;
// cap it when fuzzing:
//
//	go test ./planner/api -run '^$' -fuzz FuzzJobBodies -fuzztime 60s -fuzzminimizetime 5s
func FuzzJobBodies(f *testing.F) {
	b := setup(f)
	b.mustDo(f, http.StatusCreated, "PUT", base+"/jc", `{"properties": {"sku": {"name": "P20Premium"}}}`)
	b.mustDo(f, http.StatusCreated, "PUT", base+"/jc/jobs/j", weeklyJob)
	for _, seed := range []string{
		weeklyJob, `{}`, `{"properties": {"state": "Disabled"}}`, `{"properties": null}`, `[]`, `"x"`, `{"properties": {"recurrence": null}}`,
		`{"properties": {"action": {"type": "ServiceBusTopic", "serviceBusTopicMessage": {"namespace": "ns", "topicPath": "t", "authentication": {"sasKeyName": "k", "sasKey": "s"}}}}}`,
		`{"properties": {"recurrence": {"frequency": "Month", "schedule": {"monthlyOccurrences": {"day": "Friday", "Occurrence": -1}}}}}`,
		`{"startTime": "2016-04-01", "action": {"type": "http", "request": {"uri": "http://x", "method": "GET", "headers": {"a": 1}}}}`,
	} {
		f.Add(seed)
	}
	ref := contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc", Job: "j"}
	f.Fuzz(func(t *testing.T, body string) {
		for _, method := range []string{"PUT", "PATCH"} {
			if r := b.do(t, method, base+"/jc/jobs/j", body); r.status >= 500 {
				t.Fatalf("%s answered %d: %s", method, r.status, r.body)
			}
		}
		j, err := b.store.GetJob(context.Background(), ref)
		if err != nil {
			t.Fatalf("the stored job is gone or unreadable: %v", err)
		}
		stored, err := json.Marshal(j.Properties)
		if err != nil {
			t.Fatal(err)
		}
		if _, errs := planner.ParseJob(stored, b.now); len(errs) > 0 {
			t.Fatalf("the stored job is no longer valid: %v\n%s", errs, stored)
		}
	})
}
