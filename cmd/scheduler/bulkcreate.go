package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
)

// Limits of `jobs create --concurrency`.
const (
	defaultConcurrency = 16
	maxConcurrency     = 256
	// shownFailures is how many failures are printed one by one; the rest
	// are counted.
	shownFailures = 20
)

// jobsFileHelp says what `jobs create` takes without NAME.
const jobsFileHelp = `Without NAME, FILE holds many jobs, each an object with its "name" and
the definition's "properties": a JSON array of them, or one a line
(NDJSON, blank lines skipped). They are created --concurrency at a time,
with a progress line when stderr is a terminal, then a summary on stderr
(with -o json, one summary object on stdout). An entry that does not parse
or that the server refuses is reported with its line (NDJSON) or index
(array) and the others are still created. The exit code is 0 when every
job was created, 1 when some were; when none was, the failures' code if
they all share one (2: no entry parsed, 3: the collection is missing,
4: the server cannot be reached), else 1.`

// bulkJob is one entry of a file of many jobs.
type bulkJob struct {
	pos  int // the line (NDJSON, from 1) or the index (array, from 0)
	name string
	body []byte // the definition to PUT, without its name
	err  error  // why the entry cannot be sent
}

// jobsFile is a parsed file of many jobs.
type jobsFile struct {
	array bool
	jobs  []bulkJob
	// method sends each job: PUT (the default) creates or replaces it,
	// PATCH changes it.
	method string
}

// parseJobsFile reads a file of many jobs: a JSON array of entries, or one
// entry a line. A single object is a one-line file when it has a name; a
// definition without one is a usage error asking for NAME. An entry that
// does not parse is kept with its error, so that the others still go.
func parseJobsFile(data []byte, source string) (*jobsFile, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s holds no job", source)}
	}
	f := &jobsFile{}
	if trimmed[0] == '[' {
		var entries []json.RawMessage
		if err := json.Unmarshal(trimmed, &entries); err != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s is not a JSON array: %v", source, err)}
		}
		if len(entries) == 0 {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s holds no job", source)}
		}
		f.array = true
		for i, e := range entries {
			f.jobs = append(f.jobs, parseJobEntry(i, e))
		}
		return f.refuseRepeats(), nil
	}
	if json.Valid(trimmed) && trimmed[0] == '{' {
		// One object: a file of one job when it has a name, else a
		// definition that needs NAME.
		if !hasName(trimmed) {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf(
				`%s is one definition without a "name": name the job (jobs create NAME -f FILE), or give each job of a file of many its "name"`, source)}
		}
		f.jobs = append(f.jobs, parseJobEntry(1, trimmed))
		return f, nil
	}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			f.jobs = append(f.jobs, parseJobEntry(i+1, line))
		}
	}
	return f.refuseRepeats(), nil
}

// refuseRepeats fails each entry whose name an earlier entry has: sent
// at the same time, which of the two definitions stays would be chance.
func (f *jobsFile) refuseRepeats() *jobsFile {
	first := map[string]int{}
	for i, j := range f.jobs {
		if j.err != nil {
			continue
		}
		if p, ok := first[j.name]; ok {
			where := fmt.Sprintf("line %d", p)
			if f.array {
				where = fmt.Sprintf("index %d", p)
			}
			f.jobs[i].err = fmt.Errorf("job %q is also at %s", j.name, where)
			continue
		}
		first[j.name] = j.pos
	}
	return f
}

// hasName says whether data is a JSON object with a "name" member.
func hasName(data []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	_, ok := m["name"]
	return ok
}

// parseJobEntry takes an entry's name out of it, leaving the definition the
// API checks.
func parseJobEntry(pos int, raw []byte) bulkJob {
	j := bulkJob{pos: pos}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		j.err = errors.New(`not a JSON object with a "name" and "properties"`)
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			j.err = fmt.Errorf("%w: %v", j.err, err)
		}
		return j
	}
	rawName, ok := m["name"]
	switch {
	case !ok:
		j.err = errors.New(`"name" is required`)
	case json.Unmarshal(rawName, &j.name) != nil:
		j.err = errors.New(`"name" must be a string`)
	case j.name == "":
		j.err = errors.New(`"name" must not be empty`)
	case strings.Contains(j.name, "/"):
		j.err = fmt.Errorf(`"name" %q holds a '/': a job's collection is given with --collection`, j.name)
	}
	if j.err != nil {
		return j
	}
	delete(m, "name")
	j.body, j.err = json.Marshal(m)
	return j
}

// bulkFailure is one job that was not created.
type bulkFailure struct {
	Line    int    `json:"line,omitempty"`
	Index   *int   `json:"index,omitempty"`
	Job     string `json:"job,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`

	pos  int
	exit int // the exit code this failure alone calls for
}

// bulkSummary is what `jobs create` prints after a file of many jobs.
type bulkSummary struct {
	Created  int           `json:"created"`
	Failed   int           `json:"failed"`
	NotSent  int           `json:"notSent,omitempty"`
	Seconds  float64       `json:"seconds"`
	Failures []bulkFailure `json:"failures"`
}

// createMany creates the jobs of a file of many, concurrency at a time,
// each with the same request as the creation of one job.
func (o *clientOptions) createMany(cmd *cobra.Command, file string, concurrency int) error {
	if concurrency < 1 || concurrency > maxConcurrency {
		return &exitError{code: exitUsage, err: fmt.Errorf("--concurrency must be from 1 to %d, not %d", maxConcurrency, concurrency)}
	}
	data, err := readJobsFile(cmd, file)
	if err != nil {
		return err
	}
	f, err := parseJobsFile(data, orStdin(file))
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	var progress *progressLine
	if isTerminal(stderr) {
		progress = &progressLine{w: stderr, total: len(f.jobs), now: time.Now}
	}
	s := o.runBulk(cmd.Context(), f, concurrency, progress)
	if o.output == "json" {
		if err := printJSON(cmd, s); err != nil {
			return err
		}
	} else {
		printBulkSummary(stderr, s, len(f.jobs))
	}
	return bulkExit(s, len(f.jobs))
}

// runBulk sends the file's jobs and gathers what became of them.
func (o *clientOptions) runBulk(ctx context.Context, f *jobsFile, concurrency int, progress *progressLine) bulkSummary {
	start := time.Now()
	var (
		created, failed atomic.Int64
		mu              sync.Mutex
		failures        []bulkFailure
	)
	fail := func(j bulkJob, code string, exit int, err error) {
		fl := bulkFailure{Job: j.name, Code: code, Message: err.Error(), pos: j.pos, exit: exit}
		if f.array {
			fl.Index = &j.pos
		} else {
			fl.Line = j.pos
		}
		mu.Lock()
		failures = append(failures, fl)
		mu.Unlock()
		failed.Add(1)
	}
	queue := make(chan bulkJob)
	var wg sync.WaitGroup
	for range min(concurrency, len(f.jobs)) {
		wg.Go(func() {
			for j := range queue {
				err := o.call(ctx, cmp.Or(f.method, http.MethodPut), o.jobPath(j.name), nil, j.body, nil)
				if err == nil {
					created.Add(1)
					continue
				}
				code, exit := failureCode(err)
				fail(j, code, exit, err)
			}
		})
	}
	stopProgress := progress.run(&created, &failed)
	sent := 0
feed:
	for _, j := range f.jobs {
		if j.err != nil {
			fail(j, "InvalidEntry", exitUsage, j.err)
			continue
		}
		select {
		case queue <- j:
			sent++
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	stopProgress()
	slices.SortFunc(failures, func(a, b bulkFailure) int { return a.pos - b.pos })
	s := bulkSummary{Created: int(created.Load()), Failed: int(failed.Load()), Seconds: time.Since(start).Seconds(), Failures: failures}
	if s.Failures == nil {
		s.Failures = []bulkFailure{}
	}
	s.NotSent = len(f.jobs) - s.Created - s.Failed
	return s
}

// armCode finds the API's error code at the start of a message:
// "BadRequest: …".
var armCode = regexp.MustCompile(`^([A-Za-z]+): `)

// failureCode names why a request failed: the API's error code when it
// gave one, and the exit code it calls for.
func failureCode(err error) (string, int) {
	exit := exitCode(err)
	if m := armCode.FindStringSubmatch(err.Error()); m != nil {
		return m[1], exit
	}
	switch exit {
	case exitUnreachable:
		return "Unreachable", exit
	case exitNotFound:
		return "NotFound", exit
	}
	return "Failed", exit
}

// printBulkSummary prints the failures, the first shownFailures of them
// one by one, then the counts.
func printBulkSummary(w io.Writer, s bulkSummary, total int) {
	for i, fl := range s.Failures {
		if i == shownFailures {
			fmt.Fprintf(w, "… and %d more\n", len(s.Failures)-shownFailures)
			break
		}
		where := fmt.Sprintf("line %d", fl.Line)
		if fl.Index != nil {
			where = fmt.Sprintf("index %d", *fl.Index)
		}
		if fl.Job != "" {
			where += fmt.Sprintf(" (job %q)", fl.Job)
		}
		fmt.Fprintf(w, "%s: %s\n", where, fl.Message)
	}
	fmt.Fprintf(w, "created %d of %d jobs, %d failed", s.Created, total, s.Failed)
	if s.NotSent > 0 {
		fmt.Fprintf(w, ", %d not sent (interrupted)", s.NotSent)
	}
	fmt.Fprintf(w, ", in %.1fs (%s)\n", s.Seconds, rate(s.Created, s.Seconds))
}

// bulkExit is the command's error: nil when every job was created,
// exitRefused when some were; when none was, the code the failures share
// (nothing parsed, no collection, no server), or exitRefused when they
// differ.
func bulkExit(s bulkSummary, total int) error {
	if s.Created == total {
		return nil
	}
	code := exitRefused
	if s.Created == 0 && s.NotSent == 0 {
		code = s.Failures[0].exit
		for _, fl := range s.Failures {
			if fl.exit != code {
				code = exitRefused
				break
			}
		}
	}
	return &exitError{code: code, err: fmt.Errorf("%d of %d jobs were not created", total-s.Created, total)}
}

// rate says how many jobs a second were created.
func rate(n int, seconds float64) string {
	if seconds <= 0 {
		return "-/s"
	}
	return fmt.Sprintf("%.0f/s", float64(n)/seconds)
}

// progressLine keeps one line on a terminal up to date with the counts.
type progressLine struct {
	w     io.Writer
	total int
	now   func() time.Time
	// verb says what became of the jobs done. Defaults to "created".
	verb string
}

// progressEvery is how often the progress line is redrawn.
const progressEvery = 200 * time.Millisecond

// run redraws the line until the returned stop is called, which clears
// it. A nil progressLine draws nothing.
func (p *progressLine) run(created, failed *atomic.Int64) (stop func()) {
	if p == nil {
		return func() {}
	}
	start := p.now()
	return redraw(p.w, func() string {
		return p.line(int(created.Load()), int(failed.Load()), p.now().Sub(start))
	})
}

// redraw keeps one line of a terminal showing text(), every
// progressEvery, until the returned stop is called, which clears it.
func redraw(w io.Writer, text func() string) (stop func()) {
	stopRedrawing := repeat(progressEvery, true, func() { fmt.Fprint(w, "\r"+text()+"\x1b[K") })
	return func() {
		stopRedrawing()
		fmt.Fprint(w, "\r\x1b[K")
	}
}

// repeat calls tick every d (and once at the start when atOnce) until the
// returned stop is called, which returns once no call is running.
func repeat(d time.Duration, atOnce bool, tick func()) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(d)
		defer t.Stop()
		if atOnce {
			tick()
		}
		for {
			select {
			case <-done:
				return
			case <-t.C:
				tick()
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// line is the progress line's text: "created 1200/5000 (3 failed) 850/s".
func (p *progressLine) line(created, failed int, elapsed time.Duration) string {
	return fmt.Sprintf("%s %d/%d (%d failed) %s", cmp.Or(p.verb, "created"), created, p.total, failed, rate(created, elapsed.Seconds()))
}

// isTerminal says whether w is a terminal, where a line can be redrawn.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// readJobsFile reads a file of many jobs, or stdin for "-".
func readJobsFile(cmd *cobra.Command, file string) ([]byte, error) {
	return readFileArg(cmd, file, "a file of jobs is required: -f FILE (- for stdin), or NAME -f FILE for one job", "the jobs")
}
