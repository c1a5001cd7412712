package httpaction_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/contracts"
)

func ExampleSender_Send() {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "job %s, attempt %s", r.Header.Get("x-ms-scheduler-jobid"), r.Header.Get("Idempotency-Key"))
	}))
	defer target.Close()

	// The target listens on loopback, which the address policy refuses
	// unless allowed.
	sender, err := httpaction.New(httpaction.Config{AllowLoopback: true})
	if err != nil {
		panic(err)
	}
	defer sender.Close()

	action := &contracts.JobAction{
		Type:    contracts.ActionHTTP,
		Request: &contracts.HTTPRequest{URI: target.URL + "/some-method", Method: "POST", Body: "Posting from a timer"},
	}
	attempt := actions.Attempt{
		ID:       "5f0c3a9e2b7d4c1e8a6f9b0d3e2c1a4b",
		Job:      contracts.JobRef{Collection: "jc1", Job: "job1"},
		Expected: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
	}
	outcome := sender.Send(context.Background(), action, attempt)
	fmt.Println(outcome.Succeeded, outcome.StatusCode)
	fmt.Println(outcome.Response)
	// Output:
	// true 200
	// job job1, attempt 5f0c3a9e2b7d4c1e8a6f9b0d3e2c1a4b
}
