package loadtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Plan is a load of HTTP jobs: Jobs of them, all due at First (a burst), or
// PerSecond of them due at each whole second from First (steady), job i at
// First + i/PerSecond seconds.
type Plan struct {
	// Jobs is how many jobs the load has.
	Jobs int
	// PerSecond is how many jobs are due at each second; 0 makes a burst,
	// every job due at First.
	PerSecond int
	// First is when the first jobs are due, a whole second (due times go
	// on the wire in whole seconds).
	First time.Time
	// Recurring makes each job recur every minute from its due time
	// instead of running once; the load watches its first occurrence.
	Recurring bool
}

// Validate names the first field that cannot make a load.
func (p Plan) Validate() error {
	switch {
	case p.Jobs < 1:
		return fmt.Errorf("a load needs at least one job, not %d", p.Jobs)
	case p.PerSecond < 0:
		return fmt.Errorf("the jobs a second must be 0 (a burst) or more, not %d", p.PerSecond)
	case !p.First.Equal(p.First.Truncate(time.Second)):
		return errors.New("the first due time must be a whole second")
	}
	return nil
}

// Due is when job i is due.
func (p Plan) Due(i int) time.Time {
	if p.PerSecond == 0 {
		return p.First
	}
	return p.First.Add(time.Duration(i/p.PerSecond) * time.Second)
}

// Last is when the last job is due.
func (p Plan) Last() time.Time { return p.Due(p.Jobs - 1) }

// Period is the gap between two occurrences of a job: a minute when the
// plan is recurring, 0 when its jobs run once.
func (p Plan) Period() time.Duration {
	if p.Recurring {
		return time.Minute
	}
	return 0
}

// JobName is the name of job i: "job-0000042". Names sort as the jobs are
// numbered.
func JobName(i int) string { return fmt.Sprintf("job-%07d", i) }

// Definition is the job properties of job i, as the REST API takes them:
// a POST to url with the job's number as the last path segment, no retry
// (a second call would be a duplicate, not a retry), starting at its due
// time; once, or every minute when the plan is recurring.
func (p Plan) Definition(i int, url string) []byte {
	type request struct {
		URI    string `json:"uri"`
		Method string `json:"method"`
	}
	type action struct {
		Type        string            `json:"type"`
		Request     request           `json:"request"`
		RetryPolicy map[string]string `json:"retryPolicy"`
	}
	type recurrence struct {
		Frequency string `json:"frequency"`
		Interval  int    `json:"interval"`
	}
	def := struct {
		StartTime  string      `json:"startTime"`
		Action     action      `json:"action"`
		Recurrence *recurrence `json:"recurrence,omitempty"`
	}{
		StartTime: p.Due(i).UTC().Format(time.RFC3339),
		Action: action{Type: "Http", Request: request{URI: fmt.Sprintf("%s/%d", url, i), Method: "POST"},
			RetryPolicy: map[string]string{"retryType": "None"}},
	}
	if p.Recurring {
		def.Recurrence = &recurrence{Frequency: "Minute", Interval: 1}
	}
	data, _ := json.Marshal(def) // cannot fail: strings and numbers only
	return data
}

// Lead is how long before the first due time the creation of the plan's
// jobs must start, at rate creates a second, so that each job is created
// at least margin before it is due. Jobs are taken to be created in
// order, job i done at (i+1)/rate seconds; the rate is assumed to halve
// on the way (a busy server slows down as its timer fills). The result is
// rounded up to the next whole second.
func (p Plan) Lead(rate float64, margin time.Duration) time.Duration {
	if rate <= 0 {
		rate = 1
	}
	per := 2 / rate // seconds a create takes, with the safety factor
	worst := 0.0    // the most a create runs behind its job's offset from First
	for i := range p.Jobs {
		behind := float64(i+1)*per - p.Due(i).Sub(p.First).Seconds()
		worst = max(worst, behind)
	}
	lead := margin + time.Duration(worst*float64(time.Second))
	return lead.Truncate(time.Second) + time.Second
}
