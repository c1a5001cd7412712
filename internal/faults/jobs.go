package faults

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// Target says how a job's target answers.
type Target int

const (
	// Succeeds answers 200 at once.
	Succeeds Target = iota
	// Slow answers 200 after the sink's hold.
	Slow
	// Flaky fails the first FailFirst attempts of each occurrence.
	Flaky
	// Fails always answers 500: every occurrence faults.
	Fails
)

// JobSpec is one job of the run: its definition and what the suite expects
// of it.
type JobSpec struct {
	// Name is the job's name.
	Name string
	// Target says how its target answers; FailFirst is the failures of a
	// Flaky target.
	Target    Target
	FailFirst int
	// Start is its startTime (whole seconds, in the future when created).
	Start time.Time
	// Every is the recurrence's period in minutes (0: a one-time job).
	Every int
	// Count is the recurrence's count (0: none).
	Count int
	// End is the recurrence's endTime (zero: none).
	End time.Time
	// Forever marks a recurring job without count or end, disabled when
	// the run stops making occurrences.
	Forever bool
	// Retries and RetryInterval are the Fixed retry policy (RetryInterval
	// 0: retryType None).
	Retries       int
	RetryInterval time.Duration
	// ErrorAction gives the job an error action (an /err/ call).
	ErrorAction bool
}

// Ref returns the job's reference, as the attempt ids name it.
func (j JobSpec) Ref() contracts.JobRef {
	return contracts.JobRef{Subscription: "faults", ResourceGroup: "rg", Collection: "jc", Job: j.Name}
}

// Path returns the sink path of its main action.
func (j JobSpec) Path() string {
	switch j.Target {
	case Slow:
		return "/slow/" + j.Name
	case Flaky:
		return fmt.Sprintf("/flaky/%d/%s", j.FailFirst, j.Name)
	case Fails:
		return "/fail/" + j.Name
	}
	return "/ok/" + j.Name
}

// ErrorPath returns the sink path of its error action.
func (j JobSpec) ErrorPath() string { return "/err/" + j.Name }

// Definition returns the job's JSON definition, its actions calling sink.
func (j JobSpec) Definition(sink string) string {
	action := map[string]any{
		"type":    "Http",
		"request": map[string]any{"uri": sink + j.Path(), "method": "POST", "body": j.Name},
	}
	if j.RetryInterval > 0 {
		action["retryPolicy"] = map[string]any{
			"retryType": "Fixed", "retryCount": j.Retries,
			"retryInterval": fmt.Sprintf("PT%dS", int(j.RetryInterval/time.Second)),
		}
	} else {
		action["retryPolicy"] = map[string]any{"retryType": "None"}
	}
	if j.ErrorAction {
		action["errorAction"] = map[string]any{
			"type":    "Http",
			"request": map[string]any{"uri": sink + j.ErrorPath(), "method": "POST", "body": "error " + j.Name},
		}
	}
	props := map[string]any{"action": action, "startTime": j.Start.UTC().Format(time.RFC3339)}
	if j.Every > 0 {
		rec := map[string]any{"frequency": "Minute", "interval": j.Every}
		if j.Count > 0 {
			rec["count"] = j.Count
		}
		if !j.End.IsZero() {
			rec["endTime"] = j.End.UTC().Format(time.RFC3339)
		}
		props["recurrence"] = rec
	}
	data, _ := json.Marshal(map[string]any{"properties": props})
	return string(data)
}

// Instants returns the occurrences the job must have had when the run
// stopped making occurrences at until: its start for a one-time job; for
// a recurring one the grid Start + k·Every minutes, up to its count, its
// end, or until (for a Forever job).
func (j JobSpec) Instants(until time.Time) []time.Time {
	if j.Every == 0 {
		return []time.Time{j.Start}
	}
	var out []time.Time
	for t := j.Start; ; t = t.Add(time.Duration(j.Every) * time.Minute) {
		switch {
		case j.Count > 0 && len(out) == j.Count,
			!j.End.IsZero() && t.After(j.End),
			j.Forever && t.After(until):
			return out
		}
		out = append(out, t)
		if len(out) > 100000 {
			return out
		}
	}
}

// Attempts returns how many attempts of the main action each occurrence
// makes, and whether its error action runs.
func (j JobSpec) Attempts() (main int, errorAction bool) {
	switch j.Target {
	case Flaky:
		if j.FailFirst <= j.Retries {
			return j.FailFirst + 1, false
		}
		return j.Retries + 1, j.ErrorAction
	case Fails:
		return j.Retries + 1, j.ErrorAction
	}
	return 1, false
}

// Faults reports whether each occurrence of the job faults.
func (j JobSpec) Faults() bool {
	main, _ := j.Attempts()
	return j.Target == Fails || (j.Target == Flaky && j.FailFirst >= main)
}

// FinalState returns the state the job ends in: Completed or Faulted as
// its last occurrence ends, Disabled for a Forever job (the suite disables
// it).
func (j JobSpec) FinalState() contracts.JobState {
	switch {
	case j.Forever:
		return contracts.JobStateDisabled
	case j.Faults():
		return contracts.JobStateFaulted
	}
	return contracts.JobStateCompleted
}

// Expected is one attempt the sink must see.
type Expected struct {
	Job      JobSpec
	Instant  time.Time
	Action   contracts.ActionName
	Attempt  int
	Succeeds bool
}

// ExpectedAttempts returns every attempt the job must make for its
// instants up to until, keyed by attempt id (the idempotency key the
// target receives).
func (j JobSpec) ExpectedAttempts(until time.Time) map[string]Expected {
	out := map[string]Expected{}
	main, errorAction := j.Attempts()
	for _, at := range j.Instants(until) {
		for n := range main {
			ok := j.Target == Succeeds || j.Target == Slow || (j.Target == Flaky && n >= j.FailFirst)
			out[contracts.OccurrenceID(j.Ref(), at, contracts.MainAction, n)] = Expected{Job: j, Instant: at, Action: contracts.MainAction, Attempt: n, Succeeds: ok}
		}
		if errorAction {
			out[contracts.OccurrenceID(j.Ref(), at, contracts.ErrorAction, 0)] = Expected{Job: j, Instant: at, Action: contracts.ErrorAction, Succeeds: true}
		}
	}
	return out
}

// Mix sizes the jobs of a run.
type Mix struct {
	// Window is how long the run makes occurrences, from its start.
	Window time.Duration
	// TickEvery spaces the one-time slow jobs that keep calls due every
	// few seconds through the window; TickJobs are due at each instant
	// (defaults to 1).
	TickEvery time.Duration
	TickJobs  int
	// Of is how many jobs of each other kind there are.
	Of int
	// Count is the count of the counted recurring jobs.
	Count int
	// RetryInterval is the retry policies' interval.
	RetryInterval time.Duration
}

// Jobs returns the run's jobs, starting at t0: TickJobs one-time slow
// jobs every TickEvery through the window; recurring jobs every minute with a count,
// with an end time and without either; jobs whose target fails the first
// attempts then succeeds, one-time and recurring; and jobs whose target
// always fails, so that their error action runs and they end Faulted.
func (m Mix) Jobs(t0 time.Time) []JobSpec {
	var jobs []JobSpec
	ri := m.RetryInterval
	for i := 0; time.Duration(i)*m.TickEvery <= m.Window; i++ {
		for k := range max(m.TickJobs, 1) {
			jobs = append(jobs, JobSpec{Name: fmt.Sprintf("tick-%03d-%d", i, k), Target: Slow, Start: t0.Add(time.Duration(i) * m.TickEvery),
				Retries: 2, RetryInterval: ri})
		}
	}
	spread := func(i int) time.Time { return t0.Add(time.Duration(3+i*11%60) * time.Second) }
	end := t0.Add(m.Window)
	for i := range m.Of {
		jobs = append(jobs,
			JobSpec{Name: fmt.Sprintf("every-%d", i), Target: Succeeds, Start: spread(i), Every: 1, Count: m.Count,
				Retries: 2, RetryInterval: ri, ErrorAction: true},
			JobSpec{Name: fmt.Sprintf("until-%d", i), Target: Succeeds, Start: spread(i + 1), Every: 1, End: end,
				Retries: 2, RetryInterval: ri},
			JobSpec{Name: fmt.Sprintf("forever-%d", i), Target: Succeeds, Start: spread(i + 2), Every: 1, Forever: true,
				Retries: 2, RetryInterval: ri},
			JobSpec{Name: fmt.Sprintf("flaky-once-%d", i), Target: Flaky, FailFirst: 1 + i%2,
				Start: t0.Add(time.Duration(i+1) * m.Window / time.Duration(m.Of+1)), Retries: 3, RetryInterval: ri, ErrorAction: true},
			JobSpec{Name: fmt.Sprintf("flaky-every-%d", i), Target: Flaky, FailFirst: 1, Start: spread(i + 3), Every: 1, Count: 2,
				Retries: 2, RetryInterval: ri, ErrorAction: true},
			JobSpec{Name: fmt.Sprintf("doomed-%d", i), Target: Fails,
				Start: t0.Add(time.Duration(2*i+1) * m.Window / time.Duration(2*m.Of+1)), Retries: 1, RetryInterval: ri, ErrorAction: true},
			JobSpec{Name: fmt.Sprintf("doomed-every-%d", i), Target: Fails, Start: spread(i + 4), Every: 1, Count: 2,
				Retries: 1, RetryInterval: ri, ErrorAction: true},
		)
	}
	return jobs
}

// NextTick returns the first instant of the ticking jobs after now, for
// a fault to hit just before occurrences come due.
func (m Mix) NextTick(t0, now time.Time) time.Time {
	if now.Before(t0) {
		return t0
	}
	return t0.Add((now.Sub(t0)/m.TickEvery + 1) * m.TickEvery)
}
