package dev

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// createClients is how many requests the create benchmark has in flight.
const createClients = 16

// BenchmarkCreateJobs creates b.N jobs in one collection of a running
// `scheduler dev` (its embedded NATS server syncing every write, its
// embedded Redis-protocol server) through the REST API, createClients
// requests at a time, and reports creates per second. Its ceiling, measured
// in the same run on the same server: as many KV writes of a job's size,
// each with its own key, the same number at a time, straight to the job
// bucket (what a create cannot do with less). Command and figures:
// docs/benchmarks.md.
func BenchmarkCreateJobs(b *testing.B) {
	env, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer env.Stop(context.Background())
	const coll = "/subscriptions/dev/resourceGroups/dev/providers/Microsoft.Scheduler/jobCollections/big"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: createClients}}
	put := func(path, body string) error {
		req, err := http.NewRequest(http.MethodPut, "http://"+env.APIAddr()+path+"?api-version=2016-03-01", bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			return fmt.Errorf("PUT %s: %d %s", path, resp.StatusCode, data)
		}
		return nil
	}
	if err := put(coll, fmt.Sprintf(`{"location": "local", "properties": {"sku": {"name": "P20Premium"}, "quota": {"maxJobCount": %d}}}`, b.N)); err != nil {
		b.Fatal(err)
	}
	job := `{"properties": {"startTime": "2030-01-01T00:00:00Z", "recurrence": {"frequency": "Day", "interval": 1},
		"action": {"type": "Http", "request": {"uri": "http://127.0.0.1:9/called", "method": "POST", "body": "hello"}}}}`

	b.ResetTimer()
	perSecond := concurrently(b, func(i int) error { return put(fmt.Sprintf("%s/jobs/job-%07d", coll, i), job) })
	b.StopTimer()
	b.ReportMetric(perSecond, "creates/s")

	_, js := testkit.JetStreamAt(b, env.NATSURL())
	kv, err := js.KeyValue(context.Background(), contracts.JobsBucket)
	if err != nil {
		b.Fatal(err)
	}
	value := bytes.Repeat([]byte("x"), 900) // a stored job's size
	ceiling := concurrently(b, func(i int) error {
		_, err := kv.Create(context.Background(), fmt.Sprintf("ceiling.%07d", i), value)
		return err
	})
	b.ReportMetric(ceiling, "kv-writes/s")
	b.ReportMetric(100*perSecond/ceiling, "%-of-ceiling")
}

// concurrently calls op for 1..b.N, createClients at a time, and returns
// the calls per second.
func concurrently(b *testing.B, op func(i int) error) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range createClients {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := op(int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(b.N) / time.Since(start).Seconds()
}
