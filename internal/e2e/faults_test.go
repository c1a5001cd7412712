package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// A result event delivered twice (here: published again under another
// message id, past the stream's duplicate check) is counted once and
// stored in history once.
func TestAResultDeliveredAgainIsNotCountedTwice(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, func(string, int) int { return http.StatusInternalServerError })
	nc, err := nats.Connect(s.ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	events := make(chan *nats.Msg, 10)
	sub, err := nc.ChanSubscribe(contracts.ResultSubjectPrefix+">", events)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	s.put("once", httpJob(tg.URL+"/x", `, "retryPolicy": {"retryType": "None"}`, `, "startTime": "2026-06-01T08:01:00Z"`))
	s.tick(time.Minute)
	var ev *nats.Msg
	select {
	case ev = <-events:
	case <-time.After(30 * time.Second):
		t.Fatal("no result event on NATS")
	}
	j := s.waitJob("once", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateFaulted }, "not Faulted")
	s.waitHistory("once", 1)

	js, _ := jetstream.New(nc)
	if _, err := js.PublishMsg(context.Background(), &nats.Msg{Subject: ev.Subject, Data: ev.Data,
		Header: nats.Header{jetstream.MsgIDHeader: []string{"another-id"}}}); err != nil {
		t.Fatal(err)
	}
	// Both consumers have processed the copy once the stream let it go.
	testkit.Eventually(t, 30*time.Second, func() bool {
		st, err := js.Stream(context.Background(), contracts.ResultsStream)
		if err != nil {
			return false
		}
		info, err := st.Info(context.Background())
		return err == nil && info.State.Msgs == 0 && info.State.LastSeq >= 2
	}, "the copy was not processed")
	before, _ := json.Marshal(j.Properties.Status)
	after, _ := json.Marshal(s.job("once").Properties.Status)
	if string(after) != string(before) {
		t.Errorf("status changed from %s to %s", before, after)
	}
	if n := len(s.history("once", "").Value); n != 1 {
		t.Errorf("%d history entries, want 1", n)
	}
}

// Redis loses everything: the planner rebuilds its timer from the job
// store and restores the jobs' counters and the occurrence each schedule
// reached from history, so a job with a count does not run its
// occurrences again.
func TestLosingRedisLosesNoCountAndRunsNoOccurrenceTwice(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, nil)
	s.put("thrice", httpJob(tg.URL+"/tick", "", `, "startTime": "2026-06-01T08:01:00Z", "recurrence": {"frequency": "Minute", "count": 3}`))
	for n := 1; n <= 2; n++ {
		s.tick(time.Minute)
		s.waitJob("thrice", func(j contracts.JobDefinition) bool { return executions(j) == n }, "the occurrence is not counted")
	}
	s.waitHistory("thrice", 2)
	before := s.job("thrice").Properties.Status

	rdb := redis.NewClient(mustParseRedisURL(t, s.redis.url))
	defer rdb.Close()
	testkit.FlushPrefix(rdb, s.redis.prefix) // Redis loses everything
	// The planner notices, restores the counters and schedules occurrence 3.
	j := s.waitJob("thrice", func(j contracts.JobDefinition) bool {
		st := j.Properties.Status
		return st.ExecutionCount == 2 && st.NextExecutionTime != nil && st.NextExecutionTime.Equal(t0.Add(3*time.Minute))
	}, "the counters and the next occurrence were not restored")
	if st := j.Properties.Status; st.LastExecutionTime == nil || !st.LastExecutionTime.Equal(*before.LastExecutionTime) {
		t.Errorf("status after the rebuild %+v, before %+v", st, before)
	}
	s.tick(time.Minute)
	j = s.waitJob("thrice", func(j contracts.JobDefinition) bool { return j.Properties.State == contracts.JobStateCompleted }, "not Completed")
	if n := len(tg.callsTo("/tick")); n != 3 || j.Properties.Status.ExecutionCount != 3 {
		t.Errorf("%d calls, status %+v: want 3", n, j.Properties.Status)
	}
	if h := s.waitHistory("thrice", 3)[0]; h.RepeatCount != 3 {
		t.Errorf("the last occurrence is numbered %d, want 3", h.RepeatCount)
	}
}

func mustParseRedisURL(t *testing.T, url string) *redis.Options {
	t.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// Deleting a job deletes its history: a job created again under the name
// starts with an empty history and zero counters.
func TestADeletedJobTakesItsHistoryAlong(t *testing.T) {
	t.Parallel()
	s := start(t, options{})
	tg := newTarget(t, s.clock, nil)
	def := httpJob(tg.URL+"/x", "", `, "recurrence": {"frequency": "Hour"}`)
	s.put("hourly", def)
	s.tick(time.Second) // the first occurrence is now
	s.waitHistory("hourly", 1)
	s.waitJob("hourly", func(j contracts.JobDefinition) bool { return executions(j) == 1 }, "not counted")
	if code, _ := testkit.Call(t, "DELETE", s.base+"/jobs/hourly", ""); code != http.StatusOK {
		t.Fatalf("delete: %d", code)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		h, err := jsHistory(s)
		return err == nil && h == 0
	}, "the history of the deleted job is still stored")
	s.put("hourly", httpJob(tg.URL+"/x", "", `, "startTime": "2026-06-01T10:00:00Z", "recurrence": {"frequency": "Hour"}`))
	if n := len(s.history("hourly", "").Value); n != 0 {
		t.Errorf("the new job has %d history entries", n)
	}
	if st := s.job("hourly").Properties.Status; st.ExecutionCount != 0 || st.LastExecutionTime != nil {
		t.Errorf("the new job's status %+v", st)
	}
}

// jsHistory counts the entries in the HISTORY stream.
func jsHistory(s *system) (uint64, error) {
	st, err := s.js.Stream(context.Background(), contracts.HistoryStream)
	if err != nil {
		return 0, err
	}
	info, err := st.Info(context.Background())
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

// History keeps the newest entries of each job, as many as configured.
func TestHistoryKeepsTheConfiguredNumberOfEntries(t *testing.T) {
	t.Parallel()
	s := start(t, options{historyPerJob: 3})
	tg := newTarget(t, s.clock, nil)
	s.put("often", httpJob(tg.URL+"/x", "", `, "startTime": "2026-06-01T08:01:00Z", "recurrence": {"frequency": "Minute"}`))
	for n := 1; n <= 5; n++ {
		s.tick(time.Minute)
		s.waitJob("often", func(j contracts.JobDefinition) bool { return executions(j) == n }, "not counted")
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		h := s.history("often", "")
		return len(h.Value) == 3 && h.Value[0].Properties.RepeatCount == 5
	}, "history does not hold the newest 3 entries")
	h := s.history("often", "")
	var repeats []int
	for _, v := range h.Value {
		repeats = append(repeats, v.Properties.RepeatCount)
	}
	if data, _ := json.Marshal(repeats); string(data) != "[5,4,3]" {
		t.Errorf("entries of occurrences %s, want [5,4,3]", data)
	}
}
