package faults

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// NATSResumeBound is how soon dispatch must resume after a NATS node is
// lost: the election of a new stream leader (up to about 10 s when the
// machine's two cores also run every process of the suite) and one
// publish deadline (5 s) for the publish that was waiting on the lost
// leader. Dispatch that stopped for good, as it once did, never meets it.
const NATSResumeBound = 15 * time.Second

// Outcome is what a run produced, gathered once it settled.
type Outcome struct {
	// Settings are the system's.
	Settings Settings
	// Jobs are the run's jobs.
	Jobs []JobSpec
	// MustUntil and MayUntil bound the instants of each Forever job (by
	// name): those up to MustUntil must have run (they were due before the
	// job was disabled), those up to MayUntil may have.
	MustUntil, MayUntil map[string]time.Time
	// Calls are the sink's calls.
	Calls []Call
	// Faults are the faults injected.
	Faults []Fault
	// Jobs as the API shows them at the end, and their history, by name.
	Status  map[string]contracts.JobDefinition
	History map[string][]contracts.JobHistoryDefinitionProperties
	// ExecLastSeq is the EXEC stream's last sequence: how many executions
	// it ever stored. ExecPending is how many it holds still.
	ExecLastSeq, ExecPending uint64
	// API sums up every answer of the API; Unanswered counts the reader's
	// requests no planner answered.
	API        APIFigures
	Unanswered int
	// NotReady lists what was not ready or healthy at the end.
	NotReady []string
	// SelfExits lists the roles' exits that no fault caused.
	SelfExits []string
	// Timeline is when each part was ready and when not.
	Timeline []Transition
}

// Check is one verdict of a run.
type Check struct {
	Name   string
	Passed bool
	Detail string
}

// FaultRow holds the figures of one fault.
type FaultRow struct {
	Fault
	// Due counts the occurrences due while the fault lasted; Lost those
	// that never reached the sink.
	Due, Lost int
	// P99 and Max are their lateness (arrival − due time).
	P99, Max time.Duration
	// Delay is how late they were dispatched counted from the fault, not
	// from their due time: max(arrival − max(due, fault start)). With a
	// lost occurrence it is infinite.
	Delay time.Duration
	// Redelivered is, for a worker fault, how long after the fault the
	// attempt the worker had in flight was performed again (by another
	// worker, or by the same one started again).
	Redelivered time.Duration
	// ReadyAgain is how long after the fault the parts it hit were all
	// ready again; 0 when they never stopped being ready.
	ReadyAgain time.Duration
	// Bound is the fault's threshold (0: none) and Passed whether it held.
	Bound  time.Duration
	Metric string
	Passed bool
}

// Report is the analysis of a run.
type Report struct {
	// Occurrences and Attempts count what had to happen; LostOccurrences
	// and LostAttempts what did not reach the sink.
	Occurrences, Attempts         int
	LostOccurrences, LostAttempts []string
	// Unexpected are keys the sink saw that no expected attempt has (a
	// repeated attempt under another key, or an occurrence that should
	// not exist).
	Unexpected []string
	// Duplicates counts calls whose key had been seen before; Stale those
	// of them made by a paused worker after it resumed, for an attempt
	// another worker had already performed.
	Duplicates, Stale int
	// Early lists calls that arrived before their due time, or retries
	// before their interval.
	Early []string
	// Distinct is the number of distinct keys the sink saw.
	Distinct int
	// Lateness percentiles of the first attempt of every occurrence.
	P50, P99, Max time.Duration
	// Mismatches lists jobs whose status or history disagree with the sink.
	Mismatches []string
	Faults     []FaultRow
	Checks     []Check
}

// Failed returns the checks that failed.
func (r *Report) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// occurrence is one instant of one job.
type occurrence struct {
	job     JobSpec
	instant time.Time
}

// Analyze checks a run's outcome and computes its figures.
func Analyze(o Outcome) *Report {
	r := &Report{}
	required := map[string]Expected{}
	known := map[string]Expected{}
	var occurrences []occurrence
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, j := range o.Jobs {
		must, may := far, far
		if j.Forever {
			must, may = o.MustUntil[j.Name], o.MayUntil[j.Name]
		}
		for k, e := range j.ExpectedAttempts(must) {
			required[k] = e
		}
		for k, e := range j.ExpectedAttempts(may) {
			known[k] = e
		}
		for _, at := range j.Instants(must) {
			occurrences = append(occurrences, occurrence{j, at})
		}
	}
	r.Occurrences, r.Attempts = len(occurrences), len(required)

	seen := map[string][]Call{}
	for _, c := range o.Calls {
		seen[c.Key] = append(seen[c.Key], c)
	}
	r.Distinct = len(seen)
	for k, e := range required {
		if len(seen[k]) == 0 {
			r.LostAttempts = append(r.LostAttempts, describe(e))
		}
	}
	sort.Strings(r.LostAttempts)
	first := func(j JobSpec, at time.Time) (Call, bool) {
		cs := seen[contracts.OccurrenceID(j.Ref(), at, contracts.MainAction, 0)]
		if len(cs) == 0 {
			return Call{}, false
		}
		return cs[0], true
	}
	var lateness []time.Duration
	for _, oc := range occurrences {
		c, ok := first(oc.job, oc.instant)
		if !ok {
			r.LostOccurrences = append(r.LostOccurrences, fmt.Sprintf("%s@%s", oc.job.Name, oc.instant.Format("15:04:05")))
			continue
		}
		lateness = append(lateness, c.At.Sub(oc.instant))
	}
	sort.Strings(r.LostOccurrences)
	r.P50, r.P99, r.Max = percentile(lateness, 50), percentile(lateness, 99), percentile(lateness, 100)

	unexpected := map[string]bool{}
	paused := pausedWorkers(o.Faults)
	for k, cs := range seen {
		if _, ok := known[k]; !ok && !unexpected[k] {
			unexpected[k] = true
			r.Unexpected = append(r.Unexpected, fmt.Sprintf("%s key %s due %s (%d calls)", cs[0].Path, k, cs[0].Expected.Format("15:04:05"), len(cs)))
		}
		r.Duplicates += len(cs) - 1
		for _, c := range cs[1:] {
			if stale(c, cs[0], paused) {
				r.Stale++
			}
		}
		for _, c := range cs {
			if !c.Expected.IsZero() && c.At.Before(c.Expected) {
				r.Early = append(r.Early, fmt.Sprintf("%s due %s arrived %s early", c.Path, c.Expected.Format("15:04:05"), c.Expected.Sub(c.At)))
			}
		}
		if e, ok := known[k]; ok {
			if prev, ok := previousAttempt(e, seen); ok && !prev.Answered.IsZero() {
				gap := e.Job.RetryInterval
				if e.Action == contracts.ErrorAction {
					gap = 0
				}
				if earliest := prev.Answered.Add(gap - 50*time.Millisecond); cs[0].At.Before(earliest) {
					r.Early = append(r.Early, fmt.Sprintf("%s arrived %s before its interval ran out", describe(e), earliest.Sub(cs[0].At)))
				}
			}
		}
	}
	sort.Strings(r.Unexpected)
	sort.Strings(r.Early)

	r.Mismatches = consistency(o, seen, known)
	r.Faults = faultRows(o, occurrences, first, seen)
	r.Checks = checks(o, r)
	return r
}

// describe names an expected attempt.
func describe(e Expected) string {
	return fmt.Sprintf("%s@%s %s #%d", e.Job.Name, e.Instant.Format("15:04:05"), e.Action, e.Attempt)
}

// previousAttempt returns the first call of the attempt before e (the
// failed attempt a retry follows, or the last main attempt an error
// action follows).
func previousAttempt(e Expected, seen map[string][]Call) (Call, bool) {
	ref := e.Job.Ref()
	var key string
	switch {
	case e.Action == contracts.ErrorAction:
		main, _ := e.Job.Attempts()
		key = contracts.OccurrenceID(ref, e.Instant, contracts.MainAction, main-1)
	case e.Attempt > 0:
		key = contracts.OccurrenceID(ref, e.Instant, contracts.MainAction, e.Attempt-1)
	default:
		return Call{}, false
	}
	cs := seen[key]
	if len(cs) == 0 {
		return Call{}, false
	}
	return cs[0], true
}

// pausedWorkers returns, for each worker paused by a fault, the times it
// resumed and was paused.
func pausedWorkers(faults []Fault) map[string][]Fault {
	out := map[string][]Fault{}
	for _, f := range faults {
		if f.Kind == PauseWorker {
			out[f.Target] = append(out[f.Target], f)
		}
	}
	return out
}

// stale reports whether c, a repeated call of the attempt first called
// by firstCall, is a paused worker performing after it resumed what
// another worker had already performed.
func stale(c, firstCall Call, paused map[string][]Fault) bool {
	if c.Worker == "" || c.Worker == firstCall.Worker {
		return false
	}
	for _, f := range paused[c.Worker] {
		if !c.At.Before(f.End) && c.At.Before(f.End.Add(time.Minute)) {
			return true
		}
	}
	return false
}

// consistency compares each job's status and history with what the sink
// saw of it.
func consistency(o Outcome, seen map[string][]Call, known map[string]Expected) []string {
	type attempt struct {
		action  contracts.ActionName
		due     time.Time
		attempt int
		failed  bool
	}
	byJob := map[string][]attempt{}
	for k, cs := range seen {
		c := cs[0]
		a := attempt{action: contracts.MainAction, due: c.Expected, attempt: -1, failed: c.Status >= 300}
		if strings.HasPrefix(c.Path, "/err/") {
			a.action = contracts.ErrorAction
		}
		if e, ok := known[k]; ok {
			a.attempt = e.Attempt
		}
		byJob[c.Job] = append(byJob[c.Job], a)
	}
	var out []string
	for _, j := range o.Jobs {
		atts := byJob[j.Name]
		var executions, failures, faulted int
		main, _ := j.Attempts()
		for _, a := range atts {
			if a.action != contracts.MainAction {
				continue
			}
			executions++
			if a.failed {
				failures++
				if a.attempt == main-1 && j.Faults() {
					faulted++
				}
			}
		}
		def, ok := o.Status[j.Name]
		if !ok {
			out = append(out, j.Name+": not read")
			continue
		}
		var st contracts.JobStatus
		if def.Properties.Status != nil {
			st = *def.Properties.Status
		}
		var problems []string
		if def.Properties.State != j.FinalState() {
			problems = append(problems, fmt.Sprintf("state %s, want %s", def.Properties.State, j.FinalState()))
		}
		if st.ExecutionCount != executions || st.FailureCount != failures || st.FaultedCount != faulted {
			problems = append(problems, fmt.Sprintf("executionCount %d failureCount %d faultedCount %d, the sink saw %d, %d, %d",
				st.ExecutionCount, st.FailureCount, st.FaultedCount, executions, failures, faulted))
		}
		hist := o.History[j.Name]
		want := map[string]int{}
		for _, a := range atts {
			want[fmt.Sprintf("%s %s #%d failed=%t", a.action, a.due.Format("15:04:05"), a.attempt, a.failed)]++
		}
		got := map[string]int{}
		for _, h := range hist {
			due := time.Time{}
			if h.ExpectedExecutionTime != nil {
				due = h.ExpectedExecutionTime.UTC().Truncate(time.Second)
			}
			got[fmt.Sprintf("%s %s #%d failed=%t", h.ActionName, due.Format("15:04:05"), h.RetryCount, h.Status == contracts.StatusFailed)]++
		}
		if len(hist) != len(atts) || !sameCounts(want, got) {
			problems = append(problems, fmt.Sprintf("%d history entries for %d attempts; %s", len(hist), len(atts), diffCounts(want, got)))
		}
		if len(problems) > 0 {
			out = append(out, j.Name+": "+strings.Join(problems, "; "))
		}
	}
	return out
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// diffCounts names the first entries that differ: in the sink only (-)
// or in history only (+).
func diffCounts(sink, hist map[string]int) string {
	var parts []string
	for k, v := range sink {
		if hist[k] < v {
			parts = append(parts, "-"+k)
		}
	}
	for k, v := range hist {
		if sink[k] < v {
			parts = append(parts, "+"+k)
		}
	}
	sort.Strings(parts)
	if len(parts) > 4 {
		parts = append(parts[:4], fmt.Sprintf("… %d more", len(parts)-4))
	}
	return strings.Join(parts, ", ")
}

// faultRows computes each fault's figures.
func faultRows(o Outcome, occurrences []occurrence, first func(JobSpec, time.Time) (Call, bool), seen map[string][]Call) []FaultRow {
	var rows []FaultRow
	for i, f := range o.Faults {
		row := FaultRow{Fault: f}
		from, to := f.Start, f.End
		if to.Sub(from) < 5*time.Second {
			to = from.Add(5 * time.Second) // a flush is instant; what follows it counts
		}
		var late []time.Duration
		for _, oc := range occurrences {
			if oc.instant.Before(from) || oc.instant.After(to) {
				continue
			}
			row.Due++
			c, ok := first(oc.job, oc.instant)
			if !ok {
				row.Lost++
				continue
			}
			late = append(late, c.At.Sub(oc.instant))
			row.Delay = max(row.Delay, c.At.Sub(latest(oc.instant, f.Start)))
		}
		row.P99, row.Max = percentile(late, 99), percentile(late, 100)
		if row.Lost > 0 {
			row.P99, row.Max, row.Delay = infinite, infinite, infinite
		}
		if f.Key != "" {
			for _, c := range seen[f.Key] {
				if c.At.After(f.Start) {
					row.Redelivered = c.At.Sub(f.Start)
					break
				}
			}
		}
		// Readiness counts until the system was found healthy and stable
		// (the timeline polls every 250 ms), else until the next fault.
		until := f.End.Add(2 * time.Minute)
		switch {
		case !f.Healthy.IsZero():
			until = f.Healthy.Add(time.Second)
		case i+1 < len(o.Faults):
			until = o.Faults[i+1].Start
		}
		row.ReadyAgain = readyAgain(o.Timeline, whoFor(f), f.Start, until)
		switch f.Kind {
		case KillPlanner, PausePlanner:
			row.Bound, row.Metric = o.Settings.Lease+2*time.Second, "p99 lateness"
			row.Passed = row.Due == 0 || row.P99 < row.Bound
		case KillExecLeader, KillKVLeader:
			row.Bound, row.Metric = NATSResumeBound, "dispatch delay"
			row.Passed = row.Delay <= row.Bound
		default:
			row.Passed = row.Lost == 0
		}
		if f.Problem != "" && f.Healthy.IsZero() {
			row.Passed = false
		}
		rows = append(rows, row)
	}
	return rows
}

// infinite stands for the lateness of a lost occurrence.
const infinite = time.Duration(math.MaxInt64)

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// whoFor returns the prefix of the timeline names a fault hits: the role
// it hit, the planners for Redis, every part for a NATS node.
func whoFor(f Fault) string {
	switch f.Kind {
	case FlushRedis, KillRedis:
		return "planner"
	case KillExecLeader, KillKVLeader:
		return ""
	}
	return f.Target
}

// readyAgain returns how long after from the parts named with prefix were
// last seen becoming ready, having stopped being ready after from (and
// before to); 0 when none stopped.
func readyAgain(events []Transition, prefix string, from, to time.Time) time.Duration {
	down := map[string]bool{}
	var last time.Time
	for _, e := range events {
		if !strings.HasPrefix(e.Who, prefix) || e.At.Before(from) || e.At.After(to) {
			continue
		}
		if !e.Ready {
			down[e.Who] = true
		} else if down[e.Who] {
			last = e.At
			delete(down, e.Who)
		}
	}
	switch {
	case len(down) > 0:
		return infinite
	case last.IsZero():
		return 0
	}
	return last.Sub(from)
}

// percentile returns the p-th percentile (nearest rank) of ds, 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// checks turns the figures into the suite's verdicts.
func checks(o Outcome, r *Report) []Check {
	var cs []Check
	add := func(name string, passed bool, format string, args ...any) {
		cs = append(cs, Check{Name: name, Passed: passed, Detail: fmt.Sprintf(format, args...)})
	}
	add("no occurrence lost", len(r.LostAttempts) == 0,
		"%d occurrences, %d attempts expected; lost %d occurrences, %d attempts%s",
		r.Occurrences, r.Attempts, len(r.LostOccurrences), len(r.LostAttempts), sample(r.LostAttempts))
	add("one EXEC message per attempt", o.ExecLastSeq == uint64(r.Distinct),
		"EXEC stored %d executions (%d still pending); the sink saw %d distinct attempts",
		o.ExecLastSeq, o.ExecPending, r.Distinct)
	add("nothing early", len(r.Early) == 0, "%d early calls%s", len(r.Early), sample(r.Early))
	add("duplicate deliveries only with the same Idempotency-Key", len(r.Unexpected) == 0,
		"%d repeated deliveries with the same key; %d attempts with an unexpected key%s",
		r.Duplicates, len(r.Unexpected), sample(r.Unexpected))
	add("counters and history consistent", len(r.Mismatches) == 0, "%d of %d jobs disagree with the sink%s",
		len(r.Mismatches), len(o.Jobs), sample(r.Mismatches))
	bad := groupAnswers(append(slices.Clone(o.API.ServerErrors), o.API.WithoutRetryAfter...))
	add("no 5xx from the API", len(bad) == 0 && o.Unanswered == 0,
		"%d requests (%s); %d 5xx other than 503, %d 503 (%d without Retry-After), %d reads no planner answered within 5 s%s",
		o.API.Total, o.API, len(o.API.ServerErrors), len(o.API.Unavailable), len(o.API.WithoutRetryAfter), o.Unanswered, sample(bad))
	add("every role back to ready", len(o.NotReady) == 0, "%d not ready%s", len(o.NotReady), sample(o.NotReady))
	add("no role exited by itself", len(o.SelfExits) == 0, "%d exits%s", len(o.SelfExits), sample(o.SelfExits))
	var nats, planner []string
	natsOK, plannerOK := true, true
	for _, f := range r.Faults {
		switch f.Kind {
		case KillExecLeader, KillKVLeader:
			nats = append(nats, dur(f.Delay))
			natsOK = natsOK && f.Passed
		case KillPlanner, PausePlanner:
			planner = append(planner, dur(f.P99))
			plannerOK = plannerOK && f.Passed
		}
	}
	add(fmt.Sprintf("dispatch resumes within %s of a NATS node loss", NATSResumeBound), natsOK,
		"dispatch delay after each node kill: %s", strings.Join(nats, ", "))
	add(fmt.Sprintf("p99 lateness during a planner fault under lease + 2 s (%s)", o.Settings.Lease+2*time.Second), plannerOK,
		"p99 lateness of the occurrences due during each planner kill or pause: %s", strings.Join(planner, ", "))
	add("no stale work after a worker pause", r.Stale == 0,
		"%d attempts performed by a resumed worker after another worker had performed them", r.Stale)
	return cs
}

// groupAnswers sums up failed answers by route and status, with the
// first of each.
func groupAnswers(answers []Answer) []string {
	type group struct {
		n     int
		first Answer
	}
	groups := map[string]*group{}
	var order []string
	for _, a := range answers {
		k := fmt.Sprintf("%s %s %d", a.Method, a.Route, a.Status)
		if a.Status == http.StatusServiceUnavailable {
			k += " without Retry-After"
		}
		if groups[k] == nil {
			groups[k] = &group{first: a}
			order = append(order, k)
		}
		groups[k].n++
	}
	out := make([]string, len(order))
	for i, k := range order {
		g := groups[k]
		out[i] = fmt.Sprintf("%d × %s, the first at %s: %s", g.n, k, g.first.At.Format("15:04:05.000"), strings.TrimSpace(g.first.Body))
	}
	return out
}

// sample returns the first few items, for a message.
func sample(items []string) string {
	if len(items) == 0 {
		return ""
	}
	n := min(len(items), 5)
	s := ": " + strings.Join(items[:n], "; ")
	if len(items) > n {
		s += fmt.Sprintf("; … %d more", len(items)-n)
	}
	return s
}

// dur renders a duration for the tables, "lost" for an infinite one.
func dur(d time.Duration) string {
	switch {
	case d == infinite:
		return "∞ (lost)"
	case d == 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

// Print writes the report: the figures, a table of the faults and the
// checks.
func (r *Report) Print(logf func(format string, args ...any)) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n== figures\n")
	fmt.Fprintf(&b, "occurrences expected %d, lost %d; attempts expected %d, lost %d; distinct attempts seen %d\n",
		r.Occurrences, len(r.LostOccurrences), r.Attempts, len(r.LostAttempts), r.Distinct)
	fmt.Fprintf(&b, "duplicated deliveries (same key) %d, of which stale after a pause %d; unexpected keys %d; early calls %d\n",
		r.Duplicates, r.Stale, len(r.Unexpected), len(r.Early))
	fmt.Fprintf(&b, "lateness of every occurrence's first call: p50 %s, p99 %s, max %s\n", dur(r.P50), dur(r.P99), dur(r.Max))
	fmt.Fprintf(&b, "\n== faults\n%-28s %-10s %7s %9s %5s %5s %10s %10s %10s %10s %11s  %s\n",
		"fault", "target", "at", "lifted", "due", "lost", "p99 late", "max late", "delay", "redeliver", "ready again", "threshold")
	var t0 time.Time
	if len(r.Faults) > 0 {
		t0 = r.Faults[0].Start
	}
	for _, f := range r.Faults {
		threshold := ""
		if f.Bound > 0 {
			verdict := "ok"
			if !f.Passed {
				verdict = "FAILED"
			}
			threshold = fmt.Sprintf("%s ≤ %s: %s", f.Metric, f.Bound, verdict)
		} else if !f.Passed {
			threshold = "FAILED"
		}
		if f.Problem != "" {
			threshold += " (" + f.Problem + ")"
		}
		fmt.Fprintf(&b, "%-28s %-10s %7s %9s %5d %5d %10s %10s %10s %10s %11s  %s\n",
			f.Kind, f.Target, "+"+f.Start.Sub(t0).Round(time.Second).String(), "+"+f.End.Sub(f.Start).Round(100*time.Millisecond).String(),
			f.Due, f.Lost, dur(f.P99), dur(f.Max), dur(f.Delay), dur(f.Redelivered), dur(f.ReadyAgain), threshold)
	}
	fmt.Fprintf(&b, "\n== checks\n")
	for _, c := range r.Checks {
		verdict := "PASS"
		if !c.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(&b, "%s  %s: %s\n", verdict, c.Name, c.Detail)
	}
	logf("%s", b.String())
}
