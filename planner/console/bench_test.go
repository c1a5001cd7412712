package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/history"
	historyservice "github.com/jobscheduler/scheduler/history/service"
	"github.com/jobscheduler/scheduler/internal/seal"
	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner"
	"github.com/jobscheduler/scheduler/planner/service"
	"github.com/jobscheduler/scheduler/planner/store"
)

// The console's pages must stay quick where a collection is large and a
// job has a long history: a collection of 10,000 jobs and a job with 1,000
// history entries each render in well under 200 ms. The time measured is
// a page's whole request over loopback: the console, the API calls it
// makes in process, the KV bucket, Redis and the history stream.
//
//	go test -run '^$' -bench . -benchtime 20x ./planner/console/

const (
	benchJobs    = 10_000
	benchHistory = 1_000
)

// benchConsole is a planner (console and API) over a collection of
// benchJobs jobs, one of them with benchHistory history entries.
type benchConsole struct {
	base string
	get  func(b *testing.B, path string)
}

func startBenchConsole(b *testing.B) *benchConsole {
	b.Helper()
	ctx := context.Background()
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i + 1)
	}
	ns := testkit.NATS(b)
	_, js := testkit.JetStream(b, ns)
	sealer, err := seal.New(key)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(ctx, js, store.Config{Sealer: sealer})
	if err != nil {
		b.Fatal(err)
	}
	coll := contracts.CollectionRef{Subscription: "bench", ResourceGroup: "rg", Collection: "big"}
	if _, err := st.PutCollection(ctx, store.Collection{Ref: coll}, 0); err != nil {
		b.Fatal(err)
	}
	jobs := make([]store.Job, 0, benchJobs)
	zones := []string{"", "Europe/Berlin", "America/New_York"}
	types := []string{
		`{"type": "Http", "request": {"uri": "https://example.com/hook", "method": "POST"}}`,
		`{"type": "StorageQueue", "queueMessage": {"storageAccount": "acct", "queueName": "jobs", "sasToken": "sv=x", "message": "m"}}`,
	}
	for i := range benchJobs {
		def := fmt.Sprintf(`{"startTime": "2026-01-01T00:00:00Z", "action": %s,
			"recurrence": {"frequency": "Week", "schedule": {"weekDays": ["Monday", "Friday"], "hours": [%d], "minutes": [%d]}, "timeZone": %q}}`,
			types[i%len(types)], i%24, i%60, zones[i%len(zones)])
		p, errs := planner.ParseJob([]byte(def), time.Now())
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		p.State = contracts.JobStateEnabled
		if i%7 == 0 {
			p.State = contracts.JobStateDisabled
		}
		jobs = append(jobs, store.Job{Ref: coll.Job(fmt.Sprintf("job-%05d", i)), Properties: p})
	}
	if err := st.ImportJobs(ctx, jobs); err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hist, err := historyservice.Start(ctx, historyservice.Config{NATSURL: ns.ClientURL(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { hist.Stop(context.Background()) })
	_, prefix, mr := testkit.Redis(b)
	redisURL := testkit.RedisURL()
	if mr != nil {
		redisURL = "redis://" + mr.Addr()
	}
	svc, err := service.Start(ctx, service.Config{NATSURL: ns.ClientURL(), RedisURL: redisURL, RedisPrefix: prefix,
		Listen: "127.0.0.1:0", EncryptionKey: key, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Stop(context.Background()) })
	testkit.Eventually(b, time.Minute, svc.Ready, "the planner did not become ready")

	// The history of job-00001: benchHistory results, as workers publish them.
	ref := coll.Job("job-00001")
	due := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	for i := range benchHistory {
		at := due.Add(time.Duration(i) * time.Hour)
		r := contracts.Result{Version: contracts.MessageVersion, Job: ref, ActionName: contracts.MainAction,
			OccurrenceID: contracts.OccurrenceID(ref, at, contracts.MainAction, 0), OccurrenceKey: contracts.OccurrenceKey(ref, at, contracts.MainAction, 0),
			Occurrence: int64(i + 1), ExpectedTime: at, ActionType: contracts.ActionHTTP, StartTime: at, EndTime: at.Add(80 * time.Millisecond),
			Outcome: contracts.Succeeded, Message: "Http Action - Response from host 'example.com': 'OK' Response Headers: Date: Fri, 02 Jan 2026 09:00:00 GMT"}
		if i%10 == 3 {
			r.Outcome, r.Message = contracts.Failed, "Http Action - Request to host 'example.com' failed: 503 Service Unavailable"
		}
		data, err := json.Marshal(r.Event())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.Publish(ctx, contracts.ResultSubjectPrefix+ref.Tokens(), data, jetstream.WithMsgID(r.OccurrenceID)); err != nil {
			b.Fatal(err)
		}
	}
	reader := history.NewReader(js)
	testkit.Eventually(b, time.Minute, func() bool {
		entries, err := reader.List(ctx, ref)
		return err == nil && len(entries) == benchHistory
	}, "the history of %s did not reach %d entries", ref.Job, benchHistory)

	client := &http.Client{Timeout: 30 * time.Second}
	base := svc.URL()
	return &benchConsole{base: base, get: func(b *testing.B, path string) {
		res, err := client.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", path, res.StatusCode)
		}
	}}
}

func BenchmarkConsolePages(b *testing.B) {
	c := startBenchConsole(b)
	for _, page := range []struct{ name, path string }{
		{"collection of 10,000 jobs", "/c/bench/rg/big"},
		{"collection, page 100", "/c/bench/rg/big?page=100"},
		{"collection, search", "/c/bench/rg/big?q=job-099"},
		{"collection, Disabled StorageQueue jobs", "/c/bench/rg/big?state=Disabled&type=StorageQueue"},
		{"collection, sorted by next run", "/c/bench/rg/big?sort=nextExecutionTime"},
		{"job with 1,000 history entries", "/c/bench/rg/big/jobs/job-00001"},
		{"job, history page 20 of Failed", "/c/bench/rg/big/jobs/job-00001?status=Failed&hpage=4"},
		{"overview", "/"},
		// The reference: the API's own listing of the collection's first
		// page, which the collection page makes and renders.
		{"API listing alone", "/subscriptions/bench/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/big/jobs?api-version=2016-03-01&$top=50&$count=true"},
	} {
		b.Run(page.name, func(b *testing.B) {
			c.get(b, page.path) // warm
			b.ResetTimer()
			for b.Loop() {
				c.get(b, page.path)
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/page")
		})
	}
}
