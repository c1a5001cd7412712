package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testkit.RemoveBinary()
	os.Exit(code)
}

// schedulerBinary is the scheduler, built once for the package's tests.
func schedulerBinary(t *testing.T) string { return testkit.SchedulerBinary(t) }

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startDev runs `scheduler dev` as its own process on a free port (it
// prints the address it got) and returns the base URL of its API once it
// is ready.
func startDev(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(schedulerBinary(t), "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "json")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var exited atomic.Bool
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		exited.Store(true)
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
	})
	re := regexp.MustCompile(`REST API\s+(http://\S+)`)
	var url string
	testkit.Eventually(t, 60*time.Second, func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
			return true
		}
		return exited.Load()
	}, "scheduler dev did not print its API address:\n%s", out)
	testkit.Eventually(t, 30*time.Second, func() bool {
		if exited.Load() {
			return true
		}
		res, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, "scheduler dev did not become ready:\n%s", out)
	if exited.Load() {
		t.Fatalf("scheduler dev exited:\n%s", out)
	}
	return url
}

// cli runs the binary with the environment pointing at server, in
// subscription sub1, resource group rg1 and collection ops, and returns
// its output and exit code.
func cli(t *testing.T, server, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return run(t, []string{envServer + "=" + server, envSubscription + "=sub1", envResourceGroup + "=rg1", envCollection + "=ops", envToken + "="},
		stdin, args...)
}

// run runs the binary with env added to the test's environment and
// returns its output and exit code.
func run(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(schedulerBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// must runs a command that must succeed and returns its output.
func must(t *testing.T, server, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := cli(t, server, stdin, args...)
	if code != 0 {
		t.Fatalf("scheduler %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// writeFile writes a definition file into dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rows returns the lines of a table after its header.
func rows(table string) []string {
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	return lines[1:]
}

// The client commands, run as the real binary against a real `scheduler
// dev`, manage collections and jobs, run a job, show its history and its
// next runs, complete names, and exit with the documented codes.
func TestTheClientCommands(t *testing.T) {
	t.Parallel()
	server := startDev(t)
	var calls atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path == "/fail" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "pong")
	}))
	defer target.Close()
	dir := t.TempDir()
	collectionFile := writeFile(t, dir, "ops.json", `{"properties": {"sku": {"name": "Standard"}, "quota": {"maxJobCount": 7}}}`)
	jobFile := writeFile(t, dir, "ping.json", fmt.Sprintf(`{"properties": {"startTime": "2030-01-07T09:00:00Z",
		"action": {"type": "Http", "request": {"uri": %q, "method": "POST"}},
		"recurrence": {"frequency": "Day", "count": 3}}}`, target.URL+"/ping"))
	// flaky's action fails, without retries, and its error action runs: one
	// run leaves two history entries.
	flakyFile := writeFile(t, dir, "flaky.json", fmt.Sprintf(`{"properties": {"startTime": "2030-01-07T09:00:00Z",
		"action": {"type": "Http", "request": {"uri": %q, "method": "POST"}, "retryPolicy": {"retryType": "None"},
			"errorAction": {"type": "Http", "request": {"uri": %q, "method": "POST"}}},
		"recurrence": {"frequency": "Day", "count": 3}}}`, target.URL+"/fail", target.URL+"/ping"))
	invalidFile := writeFile(t, dir, "bad.json", `{"properties": {"recurrence": {"frequency": "Minute", "interval": 1200}}}`)
	collectionState := func(t *testing.T, name string) contracts.JobCollectionState {
		t.Helper()
		var c contracts.JobCollectionDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "collections", "get", name)), &c); err != nil || c.Properties == nil {
			t.Fatalf("collections get %s: %v %+v", name, err, c)
		}
		return c.Properties.State
	}
	jobState := func(t *testing.T, name string) contracts.JobState {
		t.Helper()
		var j contracts.JobDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "jobs", "get", name)), &j); err != nil {
			t.Fatalf("jobs get %s: %v", name, err)
		}
		return j.Properties.State
	}

	t.Run("collections are created from a file, listed, read, disabled and enabled", func(t *testing.T) {
		must(t, server, "", "collections", "create", "ops", "-f", collectionFile)
		must(t, server, `{"properties": {"sku": {"name": "Free"}}}`, "collections", "create", "spare", "-f", "-")
		out := must(t, server, "", "collections", "list")
		if !regexp.MustCompile(`(?m)^ops\s+Enabled\s+Standard\s+7$`).MatchString(out) || len(rows(out)) != 2 {
			t.Errorf("collections list:\n%s", out)
		}
		var list []contracts.JobCollectionDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "collections", "list", "-o", "json")), &list); err != nil || len(list) != 2 {
			t.Errorf("collections list -o json: %v %+v", err, list)
		}
		must(t, server, "", "collections", "disable", "ops")
		if s := collectionState(t, "ops"); s != contracts.JobCollectionStateDisabled {
			t.Errorf("after disable: %s", s)
		}
		must(t, server, "", "collections", "enable", "ops")
		if s := collectionState(t, "ops"); s != contracts.JobCollectionStateEnabled {
			t.Errorf("after enable: %s", s)
		}
	})

	t.Run("a job is created from a file, read, and listed with its next run", func(t *testing.T) {
		must(t, server, "", "jobs", "create", "ping", "-f", jobFile)
		var j contracts.JobDefinition
		out, errOut, code := cli(t, server, "", "jobs", "get", "ping")
		if err := json.Unmarshal([]byte(out), &j); err != nil || code != 0 || j.Name != "ops/ping" {
			t.Errorf("jobs get: exit %d %v %+v", code, err, j)
		}
		if want := "schedule: every day at 09:00 UTC, 3 times\n"; errOut != want {
			t.Errorf("jobs get says on stderr %q, want %q", errOut, want)
		}
		if _, errOut, _ := cli(t, server, "", "jobs", "get", "ping", "-o", "json"); errOut != "" {
			t.Errorf("jobs get -o json says on stderr %q, want nothing", errOut)
		}
		out = must(t, server, "", "jobs", "list")
		if !regexp.MustCompile(`^NAME\s+STATE\s+SCHEDULE\s+NEXT RUN\s`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^ping\s+Enabled\s+every day at 09:00 UTC, 3 times\s+2030-01-07T09:00:00Z\s+0\s+0\s+0$`).MatchString(out) {
			t.Errorf("jobs list:\n%s", out)
		}
		var jobs []contracts.JobDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "jobs", "list", "-o", "json")), &jobs); err != nil || len(jobs) != 1 {
			t.Errorf("jobs list -o json: %v %d", err, len(jobs))
		}
	})

	t.Run("preview shows the stored job's next runs, within its count", func(t *testing.T) {
		out := must(t, server, "", "jobs", "preview", "ping", "--count", "5")
		if want := "2030-01-07T09:00:00Z\n2030-01-08T09:00:00Z\n2030-01-09T09:00:00Z\n"; out != want {
			t.Errorf("jobs preview:\n%s\nwant\n%s", out, want)
		}
		if out := must(t, server, "", "jobs", "preview", "ping", "-n", "1"); out != "2030-01-07T09:00:00Z\n" {
			t.Errorf("jobs preview -n 1:\n%s", out)
		}
	})

	t.Run("a job run now calls its target, and history shows it", func(t *testing.T) {
		if out := must(t, server, "", "jobs", "run", "ping"); out != "job ping is running\n" {
			t.Errorf("jobs run: %q", out)
		}
		testkit.Eventually(t, 20*time.Second, func() bool {
			out, _, code := cli(t, server, "", "history", "ping", "--status", "completed")
			return code == 0 && len(rows(out)) == 1 && strings.Contains(out, "Response from host '127.0.0.1': 'OK'")
		}, "history does not show the run")
		if calls.Load() != 1 {
			t.Errorf("the target was called %d times, want 1", calls.Load())
		}
		var entries []contracts.JobHistoryDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "history", "ping", "-o", "json")), &entries); err != nil || len(entries) != 1 {
			t.Fatalf("history -o json: %v %+v", err, entries)
		}
		// A completed attempt has no status, as in the original service.
		if p := entries[0].Properties; p.Status != "" || p.ActionName != contracts.MainAction || p.Message == "" {
			t.Errorf("history entry: %+v", p)
		}
	})

	t.Run("history is filtered by status and paged, and the list counts failures", func(t *testing.T) {
		must(t, server, "", "jobs", "create", "flaky", "-f", flakyFile)
		must(t, server, "", "jobs", "run", "flaky")
		testkit.Eventually(t, 20*time.Second, func() bool {
			out, _, code := cli(t, server, "", "history", "flaky")
			return code == 0 && len(rows(out)) == 2
		}, "history does not show the failed action and the error action")
		for _, tt := range []struct {
			args []string
			want string // a regular expression for each row
		}{
			{[]string{"--status", "Failed"}, `MainAction\s+Failed\s`},
			{[]string{"--status", "completed"}, `ErrorAction\s+Completed\s`},
			{[]string{"--status", "Postponed"}, ``},
			{[]string{"--top", "1"}, `ErrorAction\s+Completed\s`}, // newest first
			{[]string{"--top", "1", "--skip", "1"}, `MainAction\s+Failed\s`},
			{[]string{"--skip", "2"}, ``},
		} {
			out := must(t, server, "", append([]string{"history", "flaky"}, tt.args...)...)
			got := rows(out)
			if !strings.HasPrefix(out, "START") || (tt.want == "") != (len(got) == 0) || len(got) > 1 ||
				(len(got) == 1 && !regexp.MustCompile(tt.want).MatchString(got[0])) {
				t.Errorf("history flaky %s:\n%s\nwant one row matching %q", strings.Join(tt.args, " "), out, tt.want)
			}
		}
		out := must(t, server, "", "jobs", "list")
		for _, want := range []string{`(?m)^flaky\s+Enabled\s+every day at 09:00 UTC, 3 times\s+2030-01-07T09:00:00Z\s+1\s+1\s+1$`,
			`(?m)^ping\s+Enabled\s+every day at 09:00 UTC, 3 times\s+2030-01-07T09:00:00Z\s+1\s+0\s+0$`} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("jobs list does not match %s:\n%s", want, out)
			}
		}
	})

	t.Run("disable and enable change the job's state", func(t *testing.T) {
		must(t, server, "", "jobs", "disable", "ping")
		if s := jobState(t, "ping"); s != contracts.JobStateDisabled {
			t.Errorf("after disable: %s", s)
		}
		if out := must(t, server, "", "jobs", "list"); !regexp.MustCompile(`(?m)^ping\s+Disabled\s`).MatchString(out) {
			t.Errorf("jobs list after disable:\n%s", out)
		}
		must(t, server, "", "jobs", "enable", "ping")
		if s := jobState(t, "ping"); s != contracts.JobStateEnabled {
			t.Errorf("after enable: %s", s)
		}
	})

	t.Run("exit codes and messages", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			stdin string
			args  []string
			code  int
			says  []string
		}{
			{"a missing job is not found", "", []string{"jobs", "get", "nope"}, 3,
				[]string{`scheduler: ResourceNotFound: job "nope" in job collection "ops" was not found`}},
			{"a missing collection is not found", "", []string{"jobs", "list", "-c", "nope"}, 3, []string{"ResourceNotFound"}},
			{"an invalid definition is refused, naming its fields", "", []string{"jobs", "create", "bad", "-f", invalidFile}, 1,
				[]string{"scheduler: BadRequest: ", "properties.action: required", "properties.recurrence.interval: 1200 is above the limit"}},
			{"a file that is not JSON is a usage error", "not json", []string{"jobs", "create", "bad", "-f", "-"}, 2, []string{"stdin is not JSON"}},
			{"a file that cannot be read is a usage error", "", []string{"jobs", "create", "bad", "-f", filepath.Join(dir, "absent.json")}, 2,
				[]string{"reading the definition", "absent.json"}},
			{"a create without a file is a usage error", "", []string{"jobs", "create", "bad"}, 2, []string{"-f FILE"}},
			{"an unknown flag is a usage error", "", []string{"jobs", "list", "--frobnicate"}, 2, []string{"frobnicate"}},
			{"a missing argument is a usage error", "", []string{"jobs", "get"}, 2, []string{"name one job"}},
			{"a job named as COLLECTION/JOB is a usage error", "", []string{"jobs", "get", "ops/ping"}, 2, []string{"--collection"}},
			{"no collection is a usage error", "", []string{"jobs", "list", "-c", ""}, 2, []string{"--collection or SCHEDULER_COLLECTION"}},
			{"a bad output format is a usage error", "", []string{"jobs", "list", "-o", "yaml"}, 2, []string{"--output"}},
			{"a bad status is a usage error", "", []string{"history", "ping", "--status", "Odd"}, 2, []string{"--status"}},
			{"a preview count out of range is a usage error", "", []string{"jobs", "preview", "ping", "-n", "0"}, 2, []string{"--count"}},
			{"a server that is not a URL is a usage error", "", []string{"collections", "list", "--server", "127.0.0.1:8080"}, 2, []string{"--server"}},
			{"an unreachable server says which, and how to set it", "", []string{"collections", "list", "--server", "http://127.0.0.1:1"}, 4,
				[]string{"cannot reach the scheduler at http://127.0.0.1:1", "--server or SCHEDULER_SERVER"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				out, errOut, code := cli(t, server, tt.stdin, tt.args...)
				if code != tt.code {
					t.Errorf("exit %d, want %d; stderr %q", code, tt.code, errOut)
				}
				for _, s := range tt.says {
					if !strings.Contains(errOut, s) {
						t.Errorf("stderr %q does not say %q", errOut, s)
					}
				}
				if out != "" {
					t.Errorf("stdout %q, want nothing", out)
				}
			})
		}
	})

	t.Run("completion scripts and completion of names and values", func(t *testing.T) {
		for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
			if out := must(t, server, "", "completion", shell); !strings.Contains(out, "__complete") {
				t.Errorf("completion %s printed no script", shell)
			}
		}
		complete := func(args ...string) []string { // sorted, the directive first
			t.Helper()
			out := must(t, server, "", append([]string{"__complete"}, args...)...)
			return slices.Sorted(slices.Values(strings.Fields(out)))
		}
		for _, tt := range []struct {
			args []string
			want []string
		}{
			{[]string{"collections", "get", ""}, []string{"ops", "spare", ":4"}},
			{[]string{"jobs", "get", ""}, []string{"flaky", "ping", ":4"}},
			{[]string{"jobs", "run", "-c", "spare", ""}, []string{":4"}},
			{[]string{"history", ""}, []string{"flaky", "ping", ":4"}},
			{[]string{"jobs", "list", "--collection", ""}, []string{"ops", "spare", ":4"}},
			{[]string{"jobs", "list", "-o", ""}, []string{"table", "json", ":4"}},
			{[]string{"history", "ping", "--status", ""}, []string{"Completed", "Failed", "Postponed", ":4"}},
			{[]string{"collections", "get", "--server", "http://127.0.0.1:1", ""}, []string{":4"}}, // quietly nothing
		} {
			if got := complete(tt.args...); !slices.Equal(got, slices.Sorted(slices.Values(tt.want))) {
				t.Errorf("completing %q: %q, want %q", tt.args, got, tt.want)
			}
		}
	})

	t.Run("deleting a job and a collection", func(t *testing.T) {
		must(t, server, "", "jobs", "delete", "ping")
		if _, _, code := cli(t, server, "", "jobs", "get", "ping"); code != 3 {
			t.Errorf("jobs get after delete: exit %d, want 3", code)
		}
		must(t, server, "", "collections", "delete", "ops")
		if _, _, code := cli(t, server, "", "collections", "get", "ops"); code != 3 {
			t.Errorf("collections get after delete: exit %d, want 3", code)
		}
		if _, _, code := cli(t, server, "", "collections", "delete", "ops"); code != 3 {
			t.Errorf("deleting a deleted collection: exit %d, want 3", code)
		}
	})
}

// The token is sent, and never printed: not in help, not when the server
// refuses it; a password in --server is not printed either.
func TestTheTokenIsNeverPrinted(t *testing.T) {
	t.Setenv(envToken, "s3cret-token")
	out, errOut, _ := runCLI(t, "", "jobs", "--help")
	if strings.Contains(out+errOut, "s3cret-token") {
		t.Errorf("help shows the token")
	}
	var got string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error": {"code": "AuthenticationFailed", "message": "a valid bearer token is required"}}`)
	}))
	defer api.Close()
	out, errOut, code := run(t, []string{envToken + "=s3cret-token"}, "", "collections", "list", "--server", api.URL)
	if got != "Bearer s3cret-token" || code != 4 || strings.Contains(out+errOut, "s3cret-token") {
		t.Errorf("Authorization %q, exit %d, output %q", got, code, out+errOut)
	}
	if want := "scheduler: AuthenticationFailed: a valid bearer token is required (set --token or SCHEDULER_TOKEN)\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	out, errOut, code = run(t, nil, "", "collections", "list", "--server", "http://user:hunter2@127.0.0.1:1")
	if code != 4 || strings.Contains(out+errOut, "hunter2") || !strings.Contains(errOut, "http://user:xxxxx@127.0.0.1:1") {
		t.Errorf("exit %d, output %q", code, out+errOut)
	}
}

// Each status of an error answer maps to its documented exit code, with
// the API's code and message, and the details the message does not hold.
func TestAnswerErrors(t *testing.T) {
	t.Parallel()
	arm := func(code, message string) string {
		return fmt.Sprintf(`{"error": {"code": %q, "message": %q, "details": [{"target": "properties.action", "message": "required"}]}}`, code, message)
	}
	for _, tt := range []struct {
		status int
		body   string
		code   int
		says   string
	}{
		{400, arm("BadRequest", "The definition is invalid: properties.action: required"), exitRefused,
			"BadRequest: The definition is invalid: properties.action: required"},
		{400, arm("BadRequest", "The definition is invalid"), exitRefused, "BadRequest: The definition is invalid\n  properties.action: required"},
		{404, arm("ResourceNotFound", "job x was not found"), exitNotFound, "ResourceNotFound: job x was not found"},
		{409, arm("Conflict", "job x is Completed"), exitRefused, "Conflict: job x is Completed"},
		{401, arm("AuthenticationFailed", "a token is required"), exitUnreachable, "a token is required (set --token or SCHEDULER_TOKEN)"},
		{403, "", exitUnreachable, "the server answered 403 Forbidden (set --token or SCHEDULER_TOKEN)"},
		{500, arm("InternalError", "the job store failed"), exitRefused, "InternalError: the job store failed"},
		{502, "<html>bad gateway</html>", exitRefused, "the server answered 502 Bad Gateway"},
	} {
		err := answerError(tt.status, []byte(tt.body))
		if got := exitCode(err); got != tt.code || !strings.Contains(err.Error(), tt.says) || strings.Count(err.Error(), "properties.action") > 1 {
			t.Errorf("%d %s: exit %d %q, want exit %d %q", tt.status, tt.body, got, err, tt.code, tt.says)
		}
	}
}
