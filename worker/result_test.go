package worker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// A target answering a 1 MB status reason made the result event larger
// than NATS accepts: publishing failed, the execution was handed back and
// performed five times, and its result was lost. The result's text is now
// cut to fit.
func TestAResultWithHugeTextIsStoredOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	huge := strings.Repeat("x", 1<<20)
	rec := newRecorder()
	rec.outcome = actions.Outcome{StatusCode: 599, Message: "Http Action - Response from host 'x': '" + huge + "'",
		Error: "599 " + huge, Response: huge}
	e.worker(t, rec, nil)
	x := e.execution(t, 1, nil)

	testkit.Eventually(t, 10*time.Second, func() bool { return len(e.results(t)) == 1 }, "no result stored")
	testkit.Eventually(t, 10*time.Second, func() bool { return e.pendingExecutions(t) == 0 }, "the execution was not acknowledged")
	if rec.count() != 1 {
		t.Fatalf("performed %d times, want once", rec.count())
	}
	ev := e.results(t)[0]
	r := ev.Data
	if ev.ID != x.OccurrenceID || r.Outcome != contracts.Failed || r.StatusCode != 599 {
		t.Errorf("result %s %s %d", ev.ID, r.Outcome, r.StatusCode)
	}
	for name, c := range map[string]struct {
		text, start string
		max         int
	}{
		"message":  {r.Message, "Http Action - Response from host 'x': 'xxx", maxMessageBytes},
		"error":    {r.Error, "599 xxx", maxErrorBytes},
		"response": {r.Response, "xxx", maxResponseBytes},
	} {
		if len(c.text) > c.max || !strings.HasPrefix(c.text, c.start) || !strings.HasSuffix(c.text, truncatedMarker) {
			t.Errorf("%s of %d bytes, %q…%q: want at most %d bytes, cut with a marker", name, len(c.text), c.text[:min(len(c.text), 50)],
				c.text[max(len(c.text)-20, 0):], c.max)
		}
	}
}

func TestAResultEventFitsTheLimit(t *testing.T) {
	t.Parallel()
	base := contracts.Execution{OccurrenceID: strings.Repeat("a", 32), OccurrenceKey: "sub/rg/jc/job/20260501T090000Z/MainAction/0",
		Job: testJob, ActionName: contracts.MainAction, ExpectedTime: t0, Version: contracts.MessageVersion}.Result(contracts.ActionHTTP)
	base.Outcome, base.StartTime, base.EndTime = contracts.Failed, t0, t0.Add(time.Second)
	for _, c := range []struct {
		name  string
		text  string
		limit int
	}{
		{"plain text", strings.Repeat("x", 100_000), 4096},
		{"text that grows sixfold in JSON", strings.Repeat("<\x01", 100_000), 4096},
		{"text of several-byte characters", strings.Repeat("é€😀", 50_000), 3000},
		{"invalid UTF-8", strings.Repeat("\xff", 50_000), 2000},
		{"a large limit keeps the bounds", strings.Repeat("y", 1<<20), 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := base
			r.Message, r.Error, r.Response = c.text, c.text, c.text
			data, err := encodeResult(r, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > c.limit {
				t.Fatalf("%d bytes, limit %d", len(data), c.limit)
			}
			got, err := contracts.ParseResultEvent(data)
			if err != nil {
				t.Fatal(err)
			}
			for name, f := range map[string]struct {
				s   string
				max int
			}{"message": {got.Message, maxMessageBytes}, "error": {got.Error, maxErrorBytes}, "response": {got.Response, maxResponseBytes}} {
				if len(f.s) > f.max || (f.s != "" && !strings.HasSuffix(f.s, truncatedMarker)) {
					t.Errorf("%s: %d bytes, ends %q", name, len(f.s), f.s[max(len(f.s)-20, 0):])
				}
			}
			if got.Message == "" {
				t.Error("the message was cut away entirely")
			}
		})
	}

	t.Run("a result too large without its text is an error", func(t *testing.T) {
		t.Parallel()
		if _, err := encodeResult(base, 100); err == nil || !strings.Contains(err.Error(), "NATS accepts 100") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestClip(t *testing.T) {
	t.Parallel()
	m := truncatedMarker
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{strings.Repeat("a", 40), 30, strings.Repeat("a", 30-len(m)) + m},
		{"ab" + strings.Repeat("é", 20), 2 + len(m) + 3, "abé" + m}, // not inside a character
		{strings.Repeat("a", 40), len(m) - 1, ""},
	} {
		if got := clip(c.s, c.n); got != c.want || len(got) > c.n {
			t.Errorf("clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// Stop used to overrun the drain timeout by up to 26s when NATS did not
// acknowledge a result: publishing was retried five times, 5s each,
// whatever the stop. It now ends at the drain timeout, and the execution
// is left to be performed again.
func TestStopEndsWithinTheDrainTimeoutWhenResultsAreNotAcknowledged(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.ensureStreams(t)
	rec := newRecorder()
	rec.block = make(chan struct{})
	const drain = 500 * time.Millisecond
	w, _ := e.worker(t, rec, func(c *Config) { c.DrainTimeout = drain })
	e.execution(t, 1, nil)
	<-rec.started

	// RESULTS goes away, and a subscriber that never answers takes its
	// subjects: a result's publish waits for an acknowledgement in vain.
	if err := e.js.DeleteStream(context.Background(), contracts.ResultsStream); err != nil {
		t.Fatal(err)
	}
	nc, _ := testkit.JetStream(t, e.ns)
	if _, err := nc.Subscribe(contracts.ResultSubjectPrefix+">", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	stopped := make(chan struct{})
	go func() { w.Stop(context.Background()); close(stopped) }()
	close(rec.block) // the action ends within the drain timeout; its result is not acknowledged
	select {
	case <-stopped:
	case <-time.After(drain + 10*time.Second):
		t.Fatalf("Stop still running %s after it was called", time.Since(began))
	}
	if took := time.Since(began); took > drain+2*time.Second {
		t.Fatalf("Stop took %s with a drain timeout of %s", took, drain)
	}
	if n := e.pendingExecutions(t); n != 1 {
		t.Fatalf("%d executions left, want the one whose result was not stored", n)
	}
}
