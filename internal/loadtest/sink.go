package loadtest

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Headers of the scheduler's HTTP calls the sink reads.
const (
	// HeaderExpectedExecutionTime carries the due time of the occurrence
	// a call belongs to, in DueLayout.
	HeaderExpectedExecutionTime = "x-ms-scheduler-expected-execution-time"
	// DueLayout is the layout of HeaderExpectedExecutionTime: whole
	// seconds, UTC.
	DueLayout = "2006-01-02T15:04:05"
)

// Sink notes the calls of a load's jobs: for each job, how many calls came
// for the occurrence it watches, when the first arrived and the due time
// it carried. It takes calls
// from any number of goroutines without a lock. As an http.Handler it
// answers 200 at once to POST {Path}/{job number}; Record serves callers
// that find the job and due time their own way.
type Sink struct {
	path string
	due  func(i int) time.Time
	now  func() time.Time
	jobs []sinkJob
	// period is the gap to a job's next occurrence; 0 for jobs that run
	// once.
	period time.Duration
	// called counts the jobs called at least once; stray the requests that
	// name no job of the load or carry no due time; other the calls for
	// another occurrence than the watched one (a recurring job's next).
	called, stray, other atomic.Int64
	all                  chan struct{}
	allOnce              sync.Once
}

// sinkJob is what the sink notes of one job.
type sinkJob struct {
	calls atomic.Int32
	at    atomic.Int64 // unix nanoseconds of the first call's arrival
	due   atomic.Int64 // unix nanoseconds of the due time the first call carried
}

// SinkConfig configures a Sink.
type SinkConfig struct {
	// Jobs is how many jobs call the sink, numbered from 0.
	Jobs int
	// Due is the due time of the occurrence of job i the sink watches.
	Due func(i int) time.Time
	// Period is the gap between a recurring job's occurrences: a call
	// that carries a due time Period or more after the watched one is of
	// a later occurrence, and one that carries an earlier due time, of an
	// earlier one. Defaults to 0: the jobs run once, and each of their
	// calls is of the watched occurrence, whatever due time it carries (a
	// job created after its due time runs at once).
	Period time.Duration
	// Path is the path the jobs' URLs start with, without a trailing
	// slash: requests elsewhere are stray. Defaults to "" (the root).
	Path string
	// Now is the clock that stamps arrivals. Defaults to time.Now.
	Now func() time.Time
}

// NewSink returns a sink for cfg's jobs.
func NewSink(cfg SinkConfig) *Sink {
	s := &Sink{path: cfg.Path, due: cfg.Due, period: cfg.Period, now: cfg.Now, jobs: make([]sinkJob, cfg.Jobs), all: make(chan struct{})}
	if s.now == nil {
		s.now = time.Now
	}
	if cfg.Jobs == 0 {
		close(s.all)
	}
	return s
}

// ServeHTTP notes a call to {Path}/{job number} with its due time from
// HeaderExpectedExecutionTime, and answers 200 with no body. It reads
// nothing of the body.
func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := s.now()
	rest, ok := strings.CutPrefix(r.URL.Path, s.path+"/")
	i, err := strconv.Atoi(rest)
	due, dueErr := time.ParseInLocation(DueLayout, r.Header.Get(HeaderExpectedExecutionTime), time.UTC)
	if !ok || err != nil || dueErr != nil {
		s.stray.Add(1)
		return
	}
	s.Record(i, due, at)
}

// Record notes that job i was called at at for its occurrence due at due
// (as the call said). A job the load does not have counts as stray; an
// occurrence other than the watched one is counted apart.
func (s *Sink) Record(i int, due, at time.Time) {
	if i < 0 || i >= len(s.jobs) {
		s.stray.Add(1)
		return
	}
	if watched := s.due(i); s.period > 0 && (due.Before(watched) || due.Sub(watched) >= s.period) {
		s.other.Add(1)
		return
	}
	j := &s.jobs[i]
	if j.calls.Add(1) == 1 {
		j.at.Store(at.UnixNano())
		j.due.Store(due.UnixNano())
		if s.called.Add(1) == int64(len(s.jobs)) {
			s.allOnce.Do(func() { close(s.all) })
		}
	}
}

// Called is how many jobs were called at least once.
func (s *Sink) Called() int { return int(s.called.Load()) }

// Jobs is how many jobs the sink waits for.
func (s *Sink) Jobs() int { return len(s.jobs) }

// AllCalled is closed once every job was called.
func (s *Sink) AllCalled() <-chan struct{} { return s.all }

// Results gathers the figures of what arrived so far.
func (s *Sink) Results() Results {
	r := Results{Jobs: len(s.jobs), Stray: int(s.stray.Load()), OtherOccurrences: int(s.other.Load())}
	late := make([]time.Duration, 0, len(s.jobs))
	var lastCall time.Time
	for i := range s.jobs {
		j := &s.jobs[i]
		due := s.due(i)
		if i == 0 || due.Before(r.FirstDue) {
			r.FirstDue = due
		}
		calls := int(j.calls.Load())
		if calls == 0 {
			r.Lost = append(r.Lost, i)
			continue
		}
		r.Called++
		r.Duplicates += calls - 1
		at, said := time.Unix(0, j.at.Load()), time.Unix(0, j.due.Load())
		// Early is before the planned due time or, when the scheduler
		// moved it later, before the due time the call carried.
		if at.Before(due) || at.Before(said) {
			r.Early = append(r.Early, i)
		}
		if !said.Equal(due) {
			r.Moved++
		}
		if at.After(lastCall) {
			lastCall = at
		}
		late = append(late, at.Sub(due))
	}
	r.LastCall = lastCall
	r.Lateness = Summarize(late)
	r.Histogram = Histogram(late)
	return r
}
