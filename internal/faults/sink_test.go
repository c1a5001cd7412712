package faults

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// call sends one attempt to the sink as the HTTP action does.
func call(t *testing.T, s *Sink, path, key string, expected time.Time) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(headerIdempotencyKey, key)
	req.Header.Set(headerExecutionTag, key)
	req.Header.Set(headerJobID, "job")
	req.Header.Set(headerExpected, expected.Format(expectedLayout))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func newSink(t *testing.T, b Behaviour) *Sink {
	t.Helper()
	s, err := NewSink(b, func(string) string { return "worker-x" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// A flaky path fails the first N attempts of each occurrence, and gives a
// repeated delivery of an attempt the answer its first delivery had.
func TestTheSinkFailsTheFirstAttemptsOfAFlakyOccurrence(t *testing.T) {
	t.Parallel()
	s := newSink(t, Behaviour{})
	a, b := t0, t0.Add(time.Minute)
	for _, step := range []struct {
		key  string
		at   time.Time
		want int
	}{
		{"a0", a, 500}, {"a0", a, 500}, {"a1", a, 500}, {"b0", b, 500}, {"a2", a, 200}, {"a1", a, 500}, {"a2", a, 200},
	} {
		if got := call(t, s, "/flaky/2/job", step.key, step.at); got != step.want {
			t.Errorf("%s: %d, want %d", step.key, got, step.want)
		}
	}
	calls := s.Calls()
	if len(calls) != 7 || calls[0].Key != "a0" || calls[0].Worker != "worker-x" || !calls[0].Expected.Equal(a) || calls[0].Answered.IsZero() {
		t.Errorf("recorded %+v", calls)
	}
	if !s.seen("a2") || s.seen("c0") || s.keysOf("job") != 4 {
		t.Errorf("seen a2 %t, c0 %t; %d keys", s.seen("a2"), s.seen("c0"), s.keysOf("job"))
	}
}

func TestTheSinkAnswersEachPathAsItSays(t *testing.T) {
	t.Parallel()
	s := newSink(t, Behaviour{})
	for path, want := range map[string]int{"/ok/j": 200, "/err/j": 200, "/slow/j": 200, "/fail/j": 500, "/flaky/x/j": 400, "/what/j": 404} {
		if got := call(t, s, path, "k", t0); got != want {
			t.Errorf("%s: %d, want %d", path, got, want)
		}
	}
}

// A slow call is in flight, with its worker, until the hold ends; it is
// returned once its worker has waited on it a while.
func TestASlowCallIsInFlightUntilItIsAnswered(t *testing.T) {
	t.Parallel()
	s := newSink(t, Behaviour{Hold: time.Second})
	done := make(chan int)
	go func() { done <- call(t, s, "/slow/j", "k", t0) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, ok := s.WaitInFlight(ctx)
	if !ok || c.Key != "k" || c.Worker != "worker-x" {
		t.Fatalf("in flight: %+v %t", c, ok)
	}
	if held := time.Since(c.At); held < time.Second/10 {
		t.Errorf("returned a call held %s, not mid-action yet (a tenth of the hold at least)", held)
	}
	if code := <-done; code != 200 {
		t.Errorf("answered %d", code)
	}
	if n := len(s.InFlight()); n != 0 {
		t.Errorf("%d calls in flight after the answer", n)
	}
}
