package dev

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// A collection and a job created through the API survive a restart of the
// development environment, and the job is scheduled again in the new,
// empty embedded Redis.
func TestAJobSurvivesARestart(t *testing.T) {
	t.Parallel()
	start := restartable(t)
	env := start()
	base := "http://" + env.APIAddr() + "/subscriptions/dev/resourceGroups/dev/providers/Microsoft.Scheduler/jobCollections/demo"
	job := `{"properties": {"startTime": "2030-01-01T09:00:00Z",
		"action": {"type": "Http", "request": {"uri": "https://example.com", "method": "POST",
			"authentication": {"type": "Basic", "username": "u", "password": "kept-secret"}}},
		"recurrence": {"frequency": "Day"}}}`

	if code, body := testkit.Call(t, "PUT", base+"?api-version=2016-03-01", `{"properties": {}}`); code != http.StatusCreated {
		t.Fatalf("collection: %d %s", code, body)
	}
	if code, body := testkit.Call(t, "PUT", base+"/jobs/nightly?api-version=2016-03-01", job); code != http.StatusCreated {
		t.Fatalf("job: %d %s", code, body)
	}
	env.Stop(context.Background())

	env = start()
	defer env.Stop(context.Background())
	code, body := testkit.Call(t, "GET", base+"/jobs/nightly?api-version=2016-03-01", "")
	if code != http.StatusOK {
		t.Fatalf("after the restart: %d %s", code, body)
	}
	var got struct {
		Properties struct {
			Status struct {
				NextExecutionTime string `json:"nextExecutionTime"`
			} `json:"status"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Properties.Status.NextExecutionTime != "2030-01-01T09:00:00Z" {
		t.Fatalf("next execution after the restart: %q\n%s", got.Properties.Status.NextExecutionTime, body)
	}
	if strings.Contains(body, "kept-secret") {
		t.Fatalf("secret returned: %s", body)
	}
}

// restartable returns a function that starts the development environment on
// one data directory, each time on the address the first start took, and
// waits until it is ready.
func restartable(t *testing.T) func() *Env {
	dir := t.TempDir()
	addr := "127.0.0.1:0" // the first start picks a port; a restart takes it again
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return func() *Env {
		t.Helper()
		env, err := Start(context.Background(), Config{Listen: addr, DataDir: dir, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		addr = env.APIAddr()
		testkit.Eventually(t, 10*time.Second, env.Ready, "not ready")
		return env
	}
}

// A job created through the API without a start time runs at once: dev's
// worker calls its HTTP endpoint on loopback, and the job's history and
// status show the call.
func TestAJobCallsItsEndpointAndItsHistoryShowsTheCall(t *testing.T) {
	t.Parallel()
	calls := make(chan *http.Request, 10)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls <- r
		w.Header().Set("X-Reply", "yes")
		fmt.Fprint(w, "hello from the target")
	}))
	defer target.Close()
	env, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop(context.Background())
	testkit.Eventually(t, 10*time.Second, env.Ready, "not ready")
	base := "http://" + env.APIAddr() + "/subscriptions/dev/resourceGroups/dev/providers/Microsoft.Scheduler/jobCollections/demo"
	testkit.Call(t, "PUT", base, `{"properties": {}}`)
	job := fmt.Sprintf(`{"action": {"type": "Http", "request": {"uri": %q, "method": "POST", "body": "ping"}}}`, target.URL+"/hook")
	if code, body := testkit.Call(t, "PUT", base+"/jobs/now", job); code != http.StatusCreated {
		t.Fatalf("job: %d %s", code, body)
	}
	select {
	case r := <-calls:
		if r.Method != "POST" || r.URL.Path != "/hook" || r.Header.Get("x-ms-scheduler-jobid") != "now" || r.Header.Get("Idempotency-Key") == "" {
			t.Fatalf("the target got %s %s with headers %v", r.Method, r.URL, r.Header)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the target was not called")
	}

	var history contracts.JobHistoryListResult
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, body := testkit.Call(t, "GET", base+"/jobs/now/history?api-version=2016-03-01", "")
		return json.Unmarshal([]byte(body), &history) == nil && len(history.Value) == 1
	}, "the history does not show the call")
	h := history.Value[0].Properties
	host := strings.TrimPrefix(target.URL, "http://")
	host = host[:strings.Index(host, ":")]
	if h.Status != "" || h.ActionName != contracts.MainAction || h.RepeatCount != 1 || h.RetryCount != 0 ||
		!strings.HasPrefix(h.Message, "Http Action - Response from host '"+host+"': 'OK'") || !strings.Contains(h.Message, "hello from the target") {
		t.Fatalf("history entry %+v", h)
	}
	var got contracts.JobDefinition
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, body := testkit.Call(t, "GET", base+"/jobs/now?api-version=2016-03-01", "")
		return json.Unmarshal([]byte(body), &got) == nil && got.Properties.State == contracts.JobStateCompleted
	}, "the one-time job did not complete")
	if st := got.Properties.Status; st == nil || st.ExecutionCount != 1 || st.FailureCount != 0 || st.LastExecutionTime == nil || st.NextExecutionTime != nil {
		t.Fatalf("status %+v", got.Properties.Status)
	}
}

// /healthz answers while the process lives; /readyz only while NATS and
// Redis answer and every job is scheduled.
func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	env, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop(context.Background())
	api := "http://" + env.APIAddr()
	if code, _ := testkit.Call(t, "GET", api+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		code, _ := testkit.Call(t, "GET", api+"/readyz", "")
		return code == http.StatusOK
	}, "/readyz never ready")
	env.redis.Close() // Redis goes away
	code, body := testkit.Call(t, "GET", api+"/readyz", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "Redis") {
		t.Fatalf("/readyz without Redis: %d %s", code, body)
	}
	if code, _ := testkit.Call(t, "GET", api+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("/healthz without Redis: %d", code)
	}
}
