package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jobscheduler/scheduler/internal/loadtest"
)

// Limits and defaults of `scheduler bench`.
const (
	maxBenchJobs = 1_000_000
	// quietBeforeDue is how long before its due time each job should be
	// created. A planner reads a job written less than 10 s before its
	// first occurrence from the store once more before it publishes it
	// (a job the quota check takes back must never fire); jobs created
	// further ahead, as scheduled jobs are, skip that read.
	quietBeforeDue = 11 * time.Second
	// parkedAhead is how far ahead the jobs are due while they are
	// created disabled, before they get their due time.
	parkedAhead = 24 * time.Hour
	// cleanupTimeout bounds the deletion of the collection at the end.
	cleanupTimeout = 30 * time.Second
	// shownJobs is how many lost or early jobs are named one by one.
	shownJobs = 10
	// plainEvery is how often the count of calls is printed while waiting
	// when stderr is not a terminal.
	plainEvery = 5 * time.Second
)

const benchHelp = `Measure a running scheduler (scheduler dev, or a deployment) through its
REST API: create a throw-away job collection of HTTP jobs that call a sink
this command runs, and see when each call arrives.

--mode burst makes -n jobs due at one instant; --mode steady makes --rate
jobs due at each whole second for --duration. Jobs run once, or with
--recurring every minute (the first occurrence is watched). The jobs are
created disabled, then enabled with their due time, chosen from the create
rate so that every job is enabled at least 11 s before it is due. --lead
instead creates them enabled, the first due --lead after the creation
starts.

The sink listens on --sink-listen; workers on other machines need its URL
from where they run (--sink-url), and workers of a deployment reach private
addresses only with --allow-private-networks. The collection (and so its
jobs) is deleted at the end, also on Ctrl-C, unless --keep is given.

The report (--json: one JSON object) gives the create rate, the calls'
throughput from the first due time to the last call, their lateness from
due time to arrival (percentiles and a histogram), early calls (before
their due time), lost jobs (never called within --timeout after the last
due time) and duplicate calls. See docs/bench.md.

Exit codes: 0 every job called once on time or later; 1 early calls, lost
jobs, a failed create or an interruption; 2 bad flags; 3 and 4 as the
client commands (not found; server unreachable or token refused).`

// benchOptions are the flags of `scheduler bench`.
type benchOptions struct {
	mode        string
	jobs        int
	rate        int
	duration    time.Duration
	recurring   bool
	concurrency int
	lead        time.Duration
	timeout     time.Duration
	sinkListen  string
	sinkURL     string
	keep        bool
	json        bool
}

func newBenchCommand() *cobra.Command {
	o := &clientOptions{}
	b := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench [--mode burst -n N | --mode steady --rate R --duration D]",
		Short: "Measure a running scheduler: create many HTTP jobs, receive their calls, report how late they came",
		Long:  benchHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return b.run(cmd, o)
		},
	}
	addClientFlags(cmd, o, false)
	f := cmd.Flags()
	f.StringVar(&b.mode, "mode", "burst", "burst: -n jobs due at one instant; steady: --rate jobs due at each second for --duration")
	f.IntVarP(&b.jobs, "jobs", "n", 1000, "how many jobs a burst has")
	f.IntVar(&b.rate, "rate", 100, "how many jobs of a steady load are due at each second")
	f.DurationVar(&b.duration, "duration", 10*time.Second, "how long a steady load lasts, in whole seconds")
	f.BoolVar(&b.recurring, "recurring", false, "make each job recur every minute, and watch its first occurrence")
	f.IntVar(&b.concurrency, "concurrency", defaultConcurrency, fmt.Sprintf("how many jobs are created at a time (1 to %d)", maxConcurrency))
	f.DurationVar(&b.lead, "lead", 0, "create the jobs enabled, the first due this long after the creation starts (default: create them disabled, then enable them with a due time 11s after the last is enabled, at the least)")
	f.DurationVar(&b.timeout, "timeout", time.Minute, "how long after the last due time a job that has not called counts as lost")
	f.StringVar(&b.sinkListen, "sink-listen", "127.0.0.1:0", "address the sink listens on")
	f.StringVar(&b.sinkURL, "sink-url", "", "URL at which the workers reach the sink (default: http:// and the --sink-listen address)")
	f.BoolVar(&b.keep, "keep", false, "keep the collection and its jobs at the end")
	f.BoolVar(&b.json, "json", false, "print the report as one JSON object (as -o json)")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"burst", "steady"}, cobra.ShellCompDirectiveNoFileComp))
	silenceFlagErrors(cmd)
	return cmd
}

// usage is a usage error: exit code 2.
func usage(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// plan checks the flags and returns the load they describe, its due times
// still to be fixed.
func (b *benchOptions) plan(cmd *cobra.Command) (loadtest.Plan, error) {
	changed := cmd.Flags().Changed
	p := loadtest.Plan{Recurring: b.recurring}
	switch b.mode {
	case "burst":
		if changed("rate") || changed("duration") {
			return p, usage("--rate and --duration are for --mode steady; a burst takes -n")
		}
		if b.jobs < 1 || b.jobs > maxBenchJobs {
			return p, usage("-n must be from 1 to %d, not %d", maxBenchJobs, b.jobs)
		}
		p.Jobs = b.jobs
	case "steady":
		if changed("jobs") {
			return p, usage("-n is for --mode burst; a steady load takes --rate and --duration")
		}
		if b.rate < 1 {
			return p, usage("--rate must be at least 1 job a second, not %d", b.rate)
		}
		if b.duration < time.Second || b.duration%time.Second != 0 {
			return p, usage("--duration must be whole seconds, at least 1s, not %s", b.duration)
		}
		seconds := int(b.duration / time.Second)
		if b.rate > maxBenchJobs/seconds {
			return p, usage("--rate %d for --duration %s makes more than %d jobs", b.rate, b.duration, maxBenchJobs)
		}
		p.Jobs, p.PerSecond = b.rate*seconds, b.rate
	default:
		return p, usage("--mode must be burst or steady, not %q", b.mode)
	}
	switch {
	case b.concurrency < 1 || b.concurrency > maxConcurrency:
		return p, usage("--concurrency must be from 1 to %d, not %d", maxConcurrency, b.concurrency)
	case b.lead < 0:
		return p, usage("--lead must not be negative, not %s", b.lead)
	case b.timeout <= 0:
		return p, usage("--timeout must be more than 0, not %s", b.timeout)
	}
	if b.sinkURL != "" {
		u, err := url.Parse(b.sinkURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return p, usage("--sink-url %q is not an http:// or https:// URL without query", b.sinkURL)
		}
	}
	return p, nil
}

// listenSink opens the sink's listener and returns the URL workers call,
// the jobs' numbers to be appended.
func (b *benchOptions) listenSink(name string) (net.Listener, string, error) {
	host, _, err := net.SplitHostPort(b.sinkListen)
	if err != nil {
		return nil, "", usage("--sink-listen %q is not host:port: %v", b.sinkListen, err)
	}
	base := strings.TrimSuffix(b.sinkURL, "/")
	if base == "" {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return nil, "", usage("--sink-listen %q listens on every address: give the URL the workers call with --sink-url", b.sinkListen)
		}
	}
	ln, err := net.Listen("tcp", b.sinkListen)
	if err != nil {
		return nil, "", usage("--sink-listen %s: %v", b.sinkListen, err)
	}
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	return ln, base + "/" + name, nil
}

// run is the command: check, set up, create, wait, report, clean up.
func (b *benchOptions) run(cmd *cobra.Command, o *clientOptions) (err error) {
	if err := o.check(false); err != nil {
		return err
	}
	plan, err := b.plan(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	out := newBenchOutput(cmd.ErrOrStderr())
	name := "bench-" + randomHex(4)
	ln, target, err := b.listenSink(name)
	if err != nil {
		return err
	}
	defer ln.Close()
	sinkPath := strings.TrimSuffix(mustPath(target), "/")

	if err := b.createCollection(ctx, o, name, plan.Jobs); err != nil {
		return err
	}
	o.collection = name
	cleaned := false
	defer func() {
		if cleaned {
			return
		}
		if cerr := b.cleanup(ctx, o, out); cerr != nil && err == nil {
			err = cerr
		}
	}()
	out.say("collection %s: %d jobs (%s), the sink at %s", name, plan.Jobs, b.describe(plan), target)

	// The sink starts once the due times are fixed, before any job has
	// its own.
	var sink *loadtest.Sink
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second}
	defer srv.Close()
	serve := func(p loadtest.Plan) {
		sink = loadtest.NewSink(loadtest.SinkConfig{Jobs: p.Jobs, Due: p.Due, Period: p.Period(), Path: sinkPath})
		srv.Handler = sink
		go func() { _ = srv.Serve(ln) }()
	}
	var ph phases
	if b.lead > 0 {
		ph, err = b.createEnabled(ctx, o, &plan, target, serve, out)
	} else {
		ph, err = b.createThenEnable(ctx, o, &plan, target, serve, out)
	}
	if err != nil {
		return err
	}
	ahead := time.Until(plan.First)
	switch {
	case ahead < 0:
		out.say("warning: the jobs were written %s after the first due time; raise --lead", (-ahead).Round(time.Millisecond))
	case ahead < quietBeforeDue-time.Second:
		out.say("warning: the last job was written %s before the first due time, less than 10s: the planner reads such jobs once more before it runs them", ahead.Round(time.Millisecond))
	}

	interrupted := b.wait(ctx, plan, sink, out)
	r := sink.Results()
	cleaned = true
	cleanupErr := b.cleanup(ctx, o, out)
	rep := newBenchReport(name, b, plan, ph, ahead, r, interrupted)
	rep.Deleted = !b.keep && cleanupErr == nil
	if b.json || o.output == "json" {
		if err := printJSON(cmd, rep); err != nil {
			return err
		}
	} else {
		rep.print(cmd.OutOrStdout(), r)
	}
	switch {
	case cleanupErr != nil:
		return cleanupErr
	case interrupted:
		return &exitError{code: exitRefused, err: errors.New("interrupted before every job called")}
	case len(r.Early) > 0 || len(r.Lost) > 0:
		return &exitError{code: exitRefused, err: fmt.Errorf("%d calls came before their due time and %d jobs were never called", len(r.Early), len(r.Lost))}
	}
	return nil
}

// describe says what load the plan is, for the first line.
func (b *benchOptions) describe(p loadtest.Plan) string {
	kind := "one-time"
	if p.Recurring {
		kind = "recurring every minute"
	}
	if p.PerSecond == 0 {
		return "burst, " + kind
	}
	return fmt.Sprintf("steady, %d a second for %s, %s", p.PerSecond, b.duration, kind)
}

// createCollection creates the throw-away collection, with room for jobs
// jobs and recurrences every minute. A collection of that name that
// exists already is left alone (a PUT would replace it, and the end of
// the run delete it).
func (b *benchOptions) createCollection(ctx context.Context, o *clientOptions, name string, jobs int) error {
	switch err := o.call(ctx, http.MethodGet, o.collectionsPath(name), nil, nil, nil); {
	case err == nil:
		return &exitError{code: exitRefused, err: fmt.Errorf("a collection %s exists already: run again for another name", name)}
	case exitCode(err) != exitNotFound:
		return err
	}
	body := fmt.Sprintf(`{"properties": {"sku": {"name": "Standard"}, "quota": {"maxJobCount": %d, "maxRecurrence": {"frequency": "Minute", "interval": 1}}}}`, jobs)
	if err := o.call(ctx, http.MethodPut, o.collectionsPath(name), nil, []byte(body), nil); err != nil {
		return fmt.Errorf("creating the collection %s: %w", name, err)
	}
	return nil
}

// cleanup deletes the collection, even when ctx was cancelled (Ctrl-C),
// unless --keep was given.
func (b *benchOptions) cleanup(ctx context.Context, o *clientOptions, out *benchOutput) error {
	if b.keep {
		out.say("collection %s kept (--keep): delete it with scheduler collections delete %s", o.collection, o.collection)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := o.call(ctx, http.MethodDelete, o.collectionsPath(o.collection), nil, nil, nil); err != nil {
		return fmt.Errorf("deleting the collection %s: %w", o.collection, err)
	}
	out.say("collection %s deleted", o.collection)
	return nil
}

// jobsOf is the plan's jobs as a file of many jobs.
func jobsOf(p loadtest.Plan, target string) *jobsFile {
	f := &jobsFile{array: true, jobs: make([]bulkJob, p.Jobs)}
	for i := range p.Jobs {
		f.jobs[i] = bulkJob{pos: i, name: loadtest.JobName(i),
			body: []byte(`{"properties": ` + string(p.Definition(i, target)) + `}`)}
	}
	return f
}

// phases are the figures of the writing of the jobs: their creation, and
// when they were created disabled, their enabling.
type phases struct {
	create, enable bulkSummary
	enabled        bool // the jobs were created disabled, then enabled
	lead           time.Duration
}

// firstDueAfter fixes the plan's first due time: the first whole second
// at least lead after now.
func firstDueAfter(p *loadtest.Plan, now time.Time, lead time.Duration) {
	p.First = now.Add(lead).Truncate(time.Second)
	if p.First.Before(now.Add(lead)) {
		p.First = p.First.Add(time.Second)
	}
}

// createEnabled creates the plan's jobs enabled, the first due --lead
// after the creation starts; serve starts the sink once the due times are
// fixed.
func (b *benchOptions) createEnabled(ctx context.Context, o *clientOptions, plan *loadtest.Plan, target string, serve func(loadtest.Plan), out *benchOutput) (phases, error) {
	firstDueAfter(plan, time.Now(), b.lead)
	serve(*plan)
	out.say("creating %d jobs, %d at a time, the first due at %s", plan.Jobs, b.concurrency, plan.First.UTC().Format(time.RFC3339))
	s, err := b.send(ctx, o, jobsOf(*plan, target), out)
	if err != nil {
		return phases{}, err
	}
	out.say("created %d jobs in %.2fs: %s", s.Created, s.Seconds, rate(s.Created, s.Seconds))
	return phases{create: s, lead: b.lead}, nil
}

// createThenEnable creates the plan's jobs disabled and due a day ahead,
// which measures the create rate, then enables them with their due times,
// the first chosen so that the last job is enabled quietBeforeDue ahead of
// it at half the create rate; serve starts the sink once the due times are
// fixed. An enabling costs less than a creation (a
// creation counts the collection's jobs against its quota), so the due
// time holds however the creation slowed down as the collection filled.
func (b *benchOptions) createThenEnable(ctx context.Context, o *clientOptions, plan *loadtest.Plan, target string, serve func(loadtest.Plan), out *benchOutput) (phases, error) {
	parked := *plan
	parked.First = time.Now().Add(parkedAhead).Truncate(time.Second)
	f := jobsOf(parked, target)
	for i := range f.jobs {
		f.jobs[i].body = []byte(`{"properties": ` + strings.TrimSuffix(string(parked.Definition(i, target)), "}") + `, "state": "Disabled"}}`)
	}
	out.say("creating %d jobs disabled, %d at a time", plan.Jobs, b.concurrency)
	var ph phases
	var err error
	if ph.create, err = b.send(ctx, o, f, out); err != nil {
		return ph, err
	}
	createRate := float64(ph.create.Created) / max(ph.create.Seconds, 1e-3)
	out.say("created %d jobs in %.2fs: %s", ph.create.Created, ph.create.Seconds, rate(ph.create.Created, ph.create.Seconds))

	// The rate of the enabling is measured first on a few jobs, with
	// updates that leave them as they are; the slower of the two rates
	// bounds the lead too.
	n := min(plan.Jobs, max(4*b.concurrency, 64))
	f = &jobsFile{array: true, method: http.MethodPatch, jobs: make([]bulkJob, n)}
	for i := range n {
		f.jobs[i] = bulkJob{pos: i, name: loadtest.JobName(i), body: []byte(`{"properties": {"state": "Disabled"}}`)}
	}
	out.say("measuring the update rate on %d jobs", n)
	probe, err := b.send(ctx, o, f, out)
	if err != nil {
		return ph, err
	}
	updateRate := float64(probe.Created) / max(probe.Seconds, 1e-3)
	ph.enabled, ph.lead = true, min(plan.Lead(createRate, quietBeforeDue), plan.Lead(updateRate, quietBeforeDue))
	firstDueAfter(plan, time.Now(), ph.lead)
	serve(*plan)
	out.say("enabling them, the first due at %s (%s ahead)", plan.First.UTC().Format(time.RFC3339), ph.lead)
	f = &jobsFile{array: true, method: http.MethodPatch, jobs: make([]bulkJob, plan.Jobs)}
	for i := range plan.Jobs {
		f.jobs[i] = bulkJob{pos: i, name: loadtest.JobName(i),
			body: fmt.Appendf(nil, `{"properties": {"startTime": %q, "state": "Enabled"}}`, plan.Due(i).UTC().Format(time.RFC3339))}
	}
	if ph.enable, err = b.send(ctx, o, f, out); err != nil {
		return ph, err
	}
	out.say("enabled %d jobs in %.2fs: %s", ph.enable.Created, ph.enable.Seconds, rate(ph.enable.Created, ph.enable.Seconds))
	return ph, nil
}

// send sends a file of jobs, with a progress line on a terminal, and
// fails unless every job was sent.
func (b *benchOptions) send(ctx context.Context, o *clientOptions, f *jobsFile, out *benchOutput) (bulkSummary, error) {
	verb := "created"
	if f.method == http.MethodPatch {
		verb = "updated"
	}
	s := o.runBulk(ctx, f, b.concurrency, out.progress(len(f.jobs), verb))
	return s, b.created(ctx, s, len(f.jobs), out)
}

// created turns a creation that did not create every job into the
// command's error, saying why.
func (b *benchOptions) created(ctx context.Context, s bulkSummary, n int, out *benchOutput) error {
	if ctx.Err() != nil {
		return &exitError{code: exitRefused, err: errors.New("interrupted while creating the jobs")}
	}
	if s.Created == n {
		return nil
	}
	printBulkSummary(out.w, s, n)
	return bulkExit(s, n)
}

// wait waits until every job called, the timeout after the last due time
// passed, or ctx was cancelled; it says whether ctx was.
func (b *benchOptions) wait(ctx context.Context, plan loadtest.Plan, sink *loadtest.Sink, out *benchOutput) (interrupted bool) {
	deadline := plan.Last().Add(b.timeout)
	out.say("waiting for %d calls, the last due at %s, lost after %s", plan.Jobs, plan.Last().UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339))
	stop := out.live(func() string {
		calls := fmt.Sprintf("calls %s %d/%d", bar(sink.Called(), plan.Jobs, 30), sink.Called(), plan.Jobs)
		if left := time.Until(plan.First); left > 0 {
			return fmt.Sprintf("%s, first due in %s", calls, left.Round(100*time.Millisecond))
		}
		return fmt.Sprintf("%s, %s after the first due time", calls, time.Since(plan.First).Round(100*time.Millisecond))
	})
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-sink.AllCalled():
	case <-t.C:
	case <-ctx.Done():
		interrupted = true
	}
	stop()
	out.say("received calls of %d of %d jobs", sink.Called(), plan.Jobs)
	return interrupted
}

// bar draws done of total as a bar of width characters.
func bar(done, total, width int) string {
	n := 0
	if total > 0 {
		n = min(width, done*width/total)
	}
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// benchOutput writes what the command is doing on stderr: a live line
// redrawn on a terminal, plain lines otherwise.
type benchOutput struct {
	w        io.Writer
	terminal bool
}

func newBenchOutput(w io.Writer) *benchOutput {
	return &benchOutput{w: w, terminal: isTerminal(w)}
}

// say writes one line.
func (b *benchOutput) say(format string, args ...any) {
	fmt.Fprintf(b.w, "bench: "+format+"\n", args...)
}

// progress is the progress line of n jobs being sent, saying verb
// ("created") of those done: drawn on a terminal, none otherwise.
func (b *benchOutput) progress(n int, verb string) *progressLine {
	if !b.terminal {
		return nil
	}
	return &progressLine{w: b.w, total: n, now: time.Now, verb: verb}
}

// live shows text() until stop is called: redrawn on a terminal, a line
// every plainEvery otherwise.
func (b *benchOutput) live(text func() string) (stop func()) {
	if b.terminal {
		return redraw(b.w, text)
	}
	return repeat(plainEvery, false, func() { b.say("%s", text()) })
}

// benchReport is the report of a load, as --json prints it.
type benchReport struct {
	Collection string    `json:"collection"`
	Deleted    bool      `json:"deleted"`
	Mode       string    `json:"mode"`
	Recurring  bool      `json:"recurring"`
	Jobs       int       `json:"jobs"`
	PerSecond  int       `json:"perSecond,omitempty"`
	FirstDue   time.Time `json:"firstDue"`
	LastDue    time.Time `json:"lastDue"`
	// Create is the API's create benchmark: the jobs' creation, disabled
	// unless --lead was given.
	Create struct {
		Concurrency int     `json:"concurrency"`
		Seconds     float64 `json:"seconds"`
		PerSecond   float64 `json:"perSecond"`
		Disabled    bool    `json:"disabled"`
	} `json:"create"`
	// Enable is the enabling of the jobs created disabled, with their due
	// times.
	Enable *benchPhase `json:"enable,omitempty"`
	// LeadSeconds is from the start of the last phase (the enabling, or
	// the creation with --lead) to the first due time; AheadSeconds from
	// its end (negative: after).
	LeadSeconds  float64 `json:"leadSeconds"`
	AheadSeconds float64 `json:"aheadSeconds"`
	Calls        struct {
		// Called is how many jobs called; PerSecond their calls from the
		// first due time to the last call.
		Called           int      `json:"called"`
		PerSecond        float64  `json:"perSecond"`
		Early            int      `json:"early"`
		Lost             int      `json:"lost"`
		Duplicates       int      `json:"duplicates"`
		Moved            int      `json:"moved"`
		Stray            int      `json:"stray"`
		OtherOccurrences int      `json:"otherOccurrences"`
		EarlyJobs        []string `json:"earlyJobs"`
		LostJobs         []string `json:"lostJobs"`
	} `json:"calls"`
	// LatenessMs is from due time to arrival, in milliseconds.
	LatenessMs struct {
		Min  float64 `json:"min"`
		P50  float64 `json:"p50"`
		P90  float64 `json:"p90"`
		P99  float64 `json:"p99"`
		Max  float64 `json:"max"`
		Mean float64 `json:"mean"`
	} `json:"latenessMs"`
	Histogram   []benchBucket `json:"histogram"`
	Interrupted bool          `json:"interrupted"`
}

// benchPhase is how long a phase of writes took.
type benchPhase struct {
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"perSecond"`
}

// benchBucket is a bucket of the lateness histogram; an open end is left
// out.
type benchBucket struct {
	Label  string   `json:"label"`
	FromMs *float64 `json:"fromMs,omitempty"`
	ToMs   *float64 `json:"toMs,omitempty"`
	Count  int      `json:"count"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func newBenchReport(name string, b *benchOptions, p loadtest.Plan, ph phases, ahead time.Duration, r loadtest.Results, interrupted bool) benchReport {
	rep := benchReport{Collection: name, Mode: b.mode, Recurring: p.Recurring, Jobs: p.Jobs, PerSecond: p.PerSecond,
		FirstDue: p.First.UTC(), LastDue: p.Last().UTC(), Interrupted: interrupted}
	rep.Create.Concurrency = b.concurrency
	rep.Create.Seconds = ph.create.Seconds
	rep.Create.PerSecond = float64(ph.create.Created) / max(ph.create.Seconds, 1e-3)
	rep.Create.Disabled = ph.enabled
	if ph.enabled {
		rep.Enable = &benchPhase{Seconds: ph.enable.Seconds, PerSecond: float64(ph.enable.Created) / max(ph.enable.Seconds, 1e-3)}
	}
	rep.LeadSeconds = ph.lead.Seconds()
	rep.AheadSeconds = ahead.Seconds()
	c := &rep.Calls
	c.Called, c.PerSecond, c.Early, c.Lost = r.Called, r.CallsPerSecond(), len(r.Early), len(r.Lost)
	c.Duplicates, c.Moved, c.Stray, c.OtherOccurrences = r.Duplicates, r.Moved, r.Stray, r.OtherOccurrences
	c.EarlyJobs, c.LostJobs = jobNames(r.Early), jobNames(r.Lost)
	l := r.Lateness
	rep.LatenessMs.Min, rep.LatenessMs.P50, rep.LatenessMs.P90 = ms(l.Min), ms(l.P50), ms(l.P90)
	rep.LatenessMs.P99, rep.LatenessMs.Max, rep.LatenessMs.Mean = ms(l.P99), ms(l.Max), ms(l.Mean)
	rep.Histogram = []benchBucket{}
	for _, bk := range r.Histogram {
		jb := benchBucket{Label: bk.Label(), Count: bk.Count}
		if !bk.NoLow {
			v := ms(bk.Low)
			jb.FromMs = &v
		}
		if !bk.NoHigh {
			v := ms(bk.High)
			jb.ToMs = &v
		}
		rep.Histogram = append(rep.Histogram, jb)
	}
	return rep
}

// jobNames names the first shownJobs of the numbered jobs.
func jobNames(jobs []int) []string {
	names := []string{}
	for _, i := range jobs[:min(len(jobs), shownJobs)] {
		names = append(names, loadtest.JobName(i))
	}
	return names
}

// print writes the report for a reader.
func (rep benchReport) print(w io.Writer, r loadtest.Results) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	state := "kept"
	if rep.Deleted {
		state = "deleted"
	}
	load := fmt.Sprintf("burst: %d jobs due at %s", rep.Jobs, rep.FirstDue.Format(time.RFC3339))
	if rep.PerSecond > 0 {
		load = fmt.Sprintf("steady: %d jobs a second from %s to %s", rep.PerSecond, rep.FirstDue.Format(time.RFC3339), rep.LastDue.Format(time.RFC3339))
	}
	if rep.Recurring {
		load += ", recurring every minute (first occurrence watched)"
	}
	c := rep.Calls
	l := r.Lateness
	d := func(v time.Duration) string { return v.Round(100 * time.Microsecond).String() }
	fmt.Fprintf(tw, "collection\t%s (%s)\n", rep.Collection, state)
	fmt.Fprintf(tw, "load\t%s\n", load)
	fmt.Fprintf(tw, "jobs\t%d\n", rep.Jobs)
	disabled := ""
	if rep.Create.Disabled {
		disabled = ", disabled"
	}
	fmt.Fprintf(tw, "create rate\t%.0f creates/s (%d jobs in %.2fs, %d at a time%s)\n", rep.Create.PerSecond, rep.Jobs, rep.Create.Seconds, rep.Create.Concurrency, disabled)
	lead := "from the start of the creation"
	if e := rep.Enable; e != nil {
		fmt.Fprintf(tw, "enable rate\t%.0f updates/s (%d jobs in %.2fs, each given its due time)\n", e.PerSecond, rep.Jobs, e.Seconds)
		lead = "from the start of the enabling"
	}
	fmt.Fprintf(tw, "lead\t%s %s (the last job written %s before the first due time)\n",
		time.Duration(rep.LeadSeconds*float64(time.Second)), lead, time.Duration(rep.AheadSeconds*float64(time.Second)).Round(time.Millisecond))
	fmt.Fprintf(tw, "calls\t%d of %d jobs called\n", c.Called, rep.Jobs)
	fmt.Fprintf(tw, "throughput\t%.0f calls/s (first due time to last call)\n", c.PerSecond)
	if l.Count > 0 {
		fmt.Fprintf(tw, "lateness\tp50 %s  p90 %s  p99 %s  max %s  (due time to arrival; min %s, mean %s)\n",
			d(l.P50), d(l.P90), d(l.P99), d(l.Max), d(l.Min), d(l.Mean))
	}
	fmt.Fprintf(tw, "early\t%d%s\n", c.Early, named(c.EarlyJobs, c.Early))
	lost := "lost"
	if rep.Interrupted {
		lost = "not called"
	}
	fmt.Fprintf(tw, "%s\t%d%s\n", lost, c.Lost, named(c.LostJobs, c.Lost))
	fmt.Fprintf(tw, "duplicates\t%d\n", c.Duplicates)
	if c.Moved > 0 {
		fmt.Fprintf(tw, "moved\t%d calls carried another due time than planned: jobs written after their due time; raise --lead\n", c.Moved)
	}
	if c.Stray > 0 || c.OtherOccurrences > 0 {
		fmt.Fprintf(tw, "other requests\t%d stray, %d for later occurrences\n", c.Stray, c.OtherOccurrences)
	}
	if rep.Interrupted {
		fmt.Fprintf(tw, "interrupted\tthe figures cover the calls received until then\n")
	}
	_ = tw.Flush()
	if len(r.Histogram) > 0 {
		fmt.Fprintln(w, "\nlateness histogram (due time to arrival)")
		loadtest.WriteHistogram(w, r.Histogram, 40)
	}
}

// named lists the first names of some jobs: " (job-0000003, …)".
func named(names []string, n int) string {
	if n == 0 {
		return ""
	}
	s := " (" + strings.Join(names, ", ")
	if n > len(names) {
		s += ", …"
	}
	return s + ")"
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// mustPath is the path of a URL the command built.
func mustPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}
