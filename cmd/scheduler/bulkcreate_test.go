package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
)

// bulkDefinition is the properties of a job that runs in 2030, at a target
// nobody listens on.
const bulkDefinition = `{"startTime": "2030-01-07T09:00:00Z", "action": {"type": "Http", "request": {"uri": "http://127.0.0.1:1/", "method": "POST"}},
	"recurrence": {"frequency": "Day", "count": 3}}`

// bulkEntry is one job of a file of many, on one line.
func bulkEntry(name string) string {
	return fmt.Sprintf(`{"name": %q, "properties": %s}`, name, strings.ReplaceAll(bulkDefinition, "\n", ""))
}

// A file of many jobs, one a line or as an array, is created by the real
// binary against a real `scheduler dev`; entries that do not parse or that
// the server refuses are reported with their line and the others still go.
func TestCreatingManyJobs(t *testing.T) {
	t.Parallel()
	server := startDev(t)
	dir := t.TempDir()
	must(t, server, "", "collections", "create", "ops", "-f", writeFile(t, dir, "ops.json", `{"properties": {"sku": {"name": "Standard"}, "quota": {"maxJobCount": 1000}}}`))
	listJobs := func(t *testing.T) []contracts.JobDefinition {
		t.Helper()
		var jobs []contracts.JobDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "jobs", "list", "-o", "json")), &jobs); err != nil {
			t.Fatal(err)
		}
		return jobs
	}

	t.Run("a file of 200 jobs, one a line, is created", func(t *testing.T) {
		var b strings.Builder
		for i := range 200 {
			b.WriteString(bulkEntry(fmt.Sprintf("job-%03d", i)) + "\n")
			if i == 100 {
				b.WriteString("\n  \n") // blank lines are skipped
			}
		}
		file := writeFile(t, dir, "jobs.ndjson", b.String())
		out, errOut, code := cli(t, server, "", "jobs", "create", "-f", file, "--concurrency", "8")
		if code != 0 || out != "" || !strings.Contains(errOut, "created 200 of 200 jobs, 0 failed, in ") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		if strings.Contains(errOut, "\r") {
			t.Errorf("stderr is not a terminal, yet it shows a progress line: %q", errOut)
		}
		if jobs := listJobs(t); len(jobs) != 200 {
			t.Errorf("the API lists %d jobs, want 200", len(jobs))
		}
		var j contracts.JobDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "jobs", "get", "job-199")), &j); err != nil || j.Properties.Recurrence == nil {
			t.Errorf("jobs get job-199: %v %+v", err, j)
		}
	})

	t.Run("an array from stdin is created, with a JSON summary", func(t *testing.T) {
		entries := []string{bulkEntry("arr-a"), bulkEntry("arr-b"), bulkEntry("arr-c")}
		out, errOut, code := cli(t, server, "[\n"+strings.Join(entries, ",\n")+"\n]", "jobs", "create", "-f", "-", "-c", "ops", "-o", "json")
		var s bulkSummary
		if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 || s.Created != 3 || s.Failed != 0 || len(s.Failures) != 0 {
			t.Fatalf("exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
		}
		for _, name := range []string{"arr-a", "arr-b", "arr-c"} {
			must(t, server, "", "jobs", "get", name)
		}
	})

	t.Run("a bad line and an invalid definition fail, naming their lines, and the others are created", func(t *testing.T) {
		invalid := `{"name": "broken", "properties": {"recurrence": {"frequency": "Minute", "interval": 1200}}}`
		file := writeFile(t, dir, "mixed.ndjson", strings.Join([]string{
			bulkEntry("good-1"), `{"name": "half`, "", invalid, bulkEntry("good-2"), `{"properties": {}}`}, "\n"))
		out, errOut, code := cli(t, server, "", "jobs", "create", "-f", file)
		if code != exitRefused || out != "" {
			t.Errorf("exit %d, want %d; stdout %q", code, exitRefused, out)
		}
		for _, want := range []string{
			"line 2: not a JSON object",
			`line 4 (job "broken"): BadRequest: `,
			"properties.recurrence.interval",
			`line 6: "name" is required`,
			"created 2 of 5 jobs, 3 failed",
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr does not say %q:\n%s", want, errOut)
			}
		}
		if strings.Index(errOut, "line 2:") > strings.Index(errOut, "line 4 ") {
			t.Errorf("failures are not in the file's order:\n%s", errOut)
		}
		must(t, server, "", "jobs", "get", "good-1")
		must(t, server, "", "jobs", "get", "good-2")
		if _, _, code := cli(t, server, "", "jobs", "get", "broken"); code != exitNotFound {
			t.Errorf("the invalid job exists: jobs get exit %d", code)
		}

		out, _, code = cli(t, server, "", "jobs", "create", "-f", file, "-o", "json")
		var s bulkSummary
		if err := json.Unmarshal([]byte(out), &s); err != nil || code != exitRefused || s.Created != 2 || s.Failed != 3 || len(s.Failures) != 3 {
			t.Fatalf("-o json: exit %d, %v, stdout %q", code, err, out)
		}
		for i, want := range []bulkFailure{{Line: 2, Code: "InvalidEntry"}, {Line: 4, Job: "broken", Code: "BadRequest"}, {Line: 6, Code: "InvalidEntry"}} {
			if got := s.Failures[i]; got.Line != want.Line || got.Job != want.Job || got.Code != want.Code || got.Message == "" || got.Index != nil {
				t.Errorf("failure %d: %+v, want %+v", i, got, want)
			}
		}
	})

	t.Run("an array's failures are named by their index", func(t *testing.T) {
		_, errOut, code := cli(t, server, `[`+bulkEntry("idx-0")+`, 7, {"name": "a/b", "properties": {}}, `+bulkEntry("idx-0")+`]`, "jobs", "create", "-f", "-")
		if code != exitRefused || !strings.Contains(errOut, "index 1: not a JSON object") ||
			!strings.Contains(errOut, `index 2 (job "a/b"): "name" "a/b" holds a '/'`) || !strings.Contains(errOut, `index 3 (job "idx-0"): job "idx-0" is also at index 0`) || !strings.Contains(errOut, "created 1 of 4 jobs") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})

	t.Run("one object with a name, over several lines, is a file of one job", func(t *testing.T) {
		_, errOut, code := cli(t, server, "{\"name\": \"solo\",\n \"properties\": "+bulkDefinition+"}\n", "jobs", "create", "-f", "-")
		if code != 0 || !strings.Contains(errOut, "created 1 of 1 jobs") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
		must(t, server, "", "jobs", "get", "solo")
	})

	t.Run("past 20 failures, the rest are counted", func(t *testing.T) {
		_, errOut, code := cli(t, server, strings.Repeat("nope\n", 25), "jobs", "create", "-f", "-")
		if code != exitUsage || !strings.Contains(errOut, "line 20: ") || strings.Contains(errOut, "line 21: ") ||
			!strings.Contains(errOut, "… and 5 more\n") || !strings.Contains(errOut, "created 0 of 25 jobs, 25 failed") {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})

	t.Run("a missing collection fails every job as not found", func(t *testing.T) {
		_, errOut, code := cli(t, server, bulkEntry("x")+"\n"+bulkEntry("y"), "jobs", "create", "-f", "-", "-c", "absent")
		if code != exitNotFound || !strings.Contains(errOut, `line 2 (job "y"): ResourceNotFound`) {
			t.Errorf("exit %d, stderr:\n%s", code, errOut)
		}
	})

	t.Run("usage errors", func(t *testing.T) {
		one := writeFile(t, dir, "one.json", `{"properties": `+bulkDefinition+`}`)
		for _, tt := range []struct {
			name  string
			stdin string
			args  []string
			says  string
		}{
			{"a concurrency of 0", bulkEntry("c"), []string{"--concurrency", "0"}, "--concurrency must be from 1 to 256, not 0"},
			{"a concurrency of 257", bulkEntry("c"), []string{"--concurrency", "257"}, "--concurrency must be from 1 to 256, not 257"},
			{"a concurrency that is not a number", bulkEntry("c"), []string{"--concurrency", "many"}, "--concurrency"},
			{"one definition without a name", "", []string{"-f", one}, `without a "name": name the job`},
			{"an empty file", "\n\n", []string{"-f", "-"}, "stdin holds no job"},
			{"a broken array", `[{"name": "a"`, []string{"-f", "-"}, "stdin is not a JSON array"},
			{"no file", "", nil, "-f FILE"},
			{"a file that cannot be read", "", []string{"-f", filepath.Join(dir, "absent.ndjson")}, "absent.ndjson"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				args := append([]string{"jobs", "create"}, tt.args...)
				if tt.stdin != "" && !strings.Contains(strings.Join(tt.args, " "), "-f") {
					args = append(args, "-f", "-")
				}
				out, errOut, code := cli(t, server, tt.stdin, args...)
				if code != exitUsage || out != "" || !strings.Contains(errOut, tt.says) {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 saying %q", code, out, errOut, tt.says)
				}
			})
		}
		if n := len(listJobs(t)); n != 207 {
			t.Errorf("the API lists %d jobs after the usage errors, want the 207 created before", n)
		}
	})
}

// The progress line counts the created and failed jobs and the rate.
func TestTheProgressLine(t *testing.T) {
	t.Parallel()
	p := &progressLine{total: 5000}
	if got, want := p.line(1700, 3, 2*time.Second), "created 1700/5000 (3 failed) 850/s"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	var created, failed atomic.Int64
	created.Store(2)
	failed.Store(1)
	var b strings.Builder
	stop := (&progressLine{w: &b, total: 5, now: time.Now}).run(&created, &failed)
	stop()
	if out := b.String(); !strings.HasPrefix(out, "\rcreated 2/5 (1 failed) ") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress output %q: want the line redrawn in place, then cleared", out)
	}
	var none *progressLine
	none.run(&created, &failed)()
	if isTerminal(&strings.Builder{}) {
		t.Error("a buffer is a terminal")
	}
}
