package loadtest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The plan's due times, as the tests' sinks watch them: two jobs a second
// from 2030-01-07T09:00:00Z.
var testPlan = Plan{Jobs: 6, PerSecond: 2, First: time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC)}

// setup returns a sink for testPlan under /run, its jobs recurring every
// period (0: once), whose clock reads what the test sets, and a function
// that calls it as a worker would.
func setup(t *testing.T, period time.Duration) (*Sink, *time.Time, func(path string, due time.Time)) {
	t.Helper()
	now := testPlan.First
	s := NewSink(SinkConfig{Jobs: testPlan.Jobs, Due: testPlan.Due, Period: period, Path: "/run", Now: func() time.Time { return now }})
	call := func(path string, due time.Time) {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader("ignored"))
		if !due.IsZero() {
			r.Header.Set(HeaderExpectedExecutionTime, due.UTC().Format(DueLayout))
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("the sink answered %d", w.Code)
		}
	}
	return s, &now, call
}

func TestSink(t *testing.T) {
	t.Parallel()
	t.Run("calls of every job on time make no early, lost or duplicate calls", func(t *testing.T) {
		s, now, call := setup(t, 0)
		for i := range testPlan.Jobs {
			*now = testPlan.Due(i).Add(time.Duration(10*(i+1)) * time.Millisecond)
			call("/run/"+strconv.Itoa(i), testPlan.Due(i))
		}
		select {
		case <-s.AllCalled():
		default:
			t.Fatal("AllCalled is not closed after every job called")
		}
		r := s.Results()
		if r.Called != 6 || len(r.Lost) != 0 || len(r.Early) != 0 || r.Duplicates != 0 || r.Stray != 0 {
			t.Fatalf("%+v", r)
		}
		if r.Lateness.Min != 10*time.Millisecond || r.Lateness.Max != 60*time.Millisecond || r.Lateness.P50 != 30*time.Millisecond {
			t.Errorf("lateness %+v", r.Lateness)
		}
		// The first due time to the last call: 2 s and 60 ms for 6 calls.
		if got, want := r.CallsPerSecond(), 6/2.06; got < want-0.001 || got > want+0.001 {
			t.Errorf("%v calls a second, want %v", got, want)
		}
	})
	t.Run("an early call, a second call and a job never called are told apart", func(t *testing.T) {
		s, now, call := setup(t, 0)
		*now = testPlan.First.Add(-time.Second)
		call("/run/0", testPlan.Due(0))            // a second early
		*now = testPlan.First.Add(3 * time.Second) // after every due time
		call("/run/1", testPlan.Due(1))
		call("/run/1", testPlan.Due(1)) // the same occurrence again
		for i := 2; i < 5; i++ {
			call("/run/"+strconv.Itoa(i), testPlan.Due(i))
		}
		select {
		case <-s.AllCalled():
			t.Fatal("AllCalled is closed with job 5 never called")
		default:
		}
		r := s.Results()
		if r.Called != 5 || r.Duplicates != 1 || len(r.Early) != 1 || r.Early[0] != 0 || len(r.Lost) != 1 || r.Lost[0] != 5 {
			t.Fatalf("%+v", r)
		}
		if r.Lateness.Min != -time.Second || r.Histogram[0].Label() != "early (< 0)" {
			t.Errorf("the early call must show in the lateness: %+v %+v", r.Lateness, r.Histogram)
		}
	})
	t.Run("requests of no job of the load are stray, and a later occurrence is counted apart", func(t *testing.T) {
		s, _, call := setup(t, time.Minute)
		call("/run/6", testPlan.First)                   // no such job
		call("/other/0", testPlan.First)                 // not the load's path
		call("/run/x", testPlan.First)                   // no number
		call("/run/0", time.Time{})                      // no due time
		call("/run/0", testPlan.First.Add(time.Minute))  // the next occurrence of a recurring job
		call("/run/0", testPlan.First.Add(-time.Minute)) // an earlier one
		r := s.Results()
		if r.Stray != 4 || r.OtherOccurrences != 2 || r.Called != 0 || len(r.Lost) != 6 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("a one-time job run at another due time than planned counts, late from the planned one, early before either", func(t *testing.T) {
		s, now, call := setup(t, 0)
		moved := testPlan.First.Add(5 * time.Second) // created after its due time: due when created
		*now = moved.Add(100 * time.Millisecond)
		call("/run/0", moved)
		*now = moved.Add(-2 * time.Second) // after the planned due time, before the one the call says
		call("/run/1", moved)
		r := s.Results()
		if r.Called != 2 || r.Moved != 2 || r.OtherOccurrences != 0 || len(r.Early) != 1 || r.Early[0] != 1 {
			t.Fatalf("%+v", r)
		}
		if r.Lateness.Max != 5100*time.Millisecond {
			t.Errorf("lateness %+v, want it from the planned due time", r.Lateness)
		}
	})
	t.Run("calls from many goroutines are all counted", func(t *testing.T) {
		const n = 2000
		p := Plan{Jobs: n, First: testPlan.First}
		s := NewSink(SinkConfig{Jobs: n, Due: p.Due})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := g; i < n; i += 8 {
					s.Record(i, p.First, p.First.Add(time.Millisecond))
				}
			})
		}
		wg.Wait()
		<-s.AllCalled()
		if r := s.Results(); r.Called != n || len(r.Lost) != 0 || r.Duplicates != 0 {
			t.Fatalf("called %d, lost %d, duplicates %d", r.Called, len(r.Lost), r.Duplicates)
		}
	})
}
