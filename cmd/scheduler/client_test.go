package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// schedulerBinary builds the scheduler once for the package's tests.
func schedulerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the scheduler binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "scheduler-cli")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "scheduler")
		if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the scheduler: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// startDev runs `scheduler dev` as its own process on a free port and
// returns the base URL of its API.
func startDev(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(schedulerBinary(t), "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-format", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	api := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`REST API\s+(http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				api <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-api:
	case <-time.After(60 * time.Second):
		t.Fatal("scheduler dev did not print its API address")
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		res, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, "scheduler dev did not become ready")
	return url
}

// cli runs the binary with the environment pointing at server and returns
// its output and exit code.
func cli(t *testing.T, server, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(schedulerBinary(t), args...)
	cmd.Env = append(os.Environ(), envServer+"="+server, envSubscription+"=sub1", envResourceGroup+"=rg1", envCollection+"=ops", envToken+"=")
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

// The client commands, run as the real binary against a real `scheduler
// dev`, manage collections and jobs, run a job, show its history and its
// next runs, and exit with the documented codes.
func TestTheClientCommands(t *testing.T) {
	t.Parallel()
	server := startDev(t)
	var calls atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		fmt.Fprint(w, "pong")
	}))
	defer target.Close()
	dir := t.TempDir()
	jobFile := filepath.Join(dir, "ping.json")
	job := fmt.Sprintf(`{"properties": {"startTime": "2030-01-07T09:00:00Z",
		"action": {"type": "Http", "request": {"uri": %q, "method": "POST"}},
		"recurrence": {"frequency": "Day", "count": 3}}}`, target.URL+"/ping")
	if err := os.WriteFile(jobFile, []byte(job), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("collections are created, listed, read, disabled and enabled", func(t *testing.T) {
		must(t, server, "", "collections", "create", "ops")
		if out := must(t, server, "", "collections", "list"); !regexp.MustCompile(`(?m)^ops\s+Enabled\s+Standard`).MatchString(out) {
			t.Errorf("collections list:\n%s", out)
		}
		var c contracts.JobCollectionDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "collections", "get", "ops")), &c); err != nil || c.Name != "ops" {
			t.Errorf("collections get: %v %+v", err, c)
		}
		must(t, server, "", "collections", "disable", "ops")
		must(t, server, "", "collections", "enable", "ops")
	})

	t.Run("a job is created from a file and listed with its next run", func(t *testing.T) {
		must(t, server, "", "jobs", "create", "ping", "-f", jobFile)
		out := must(t, server, "", "jobs", "list")
		if !regexp.MustCompile(`(?m)^ping\s+Enabled\s+every day, 3 times\s+2030-01-07T09:00:00Z\s+0\s+0\s+0$`).MatchString(out) {
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
	})

	t.Run("a job run now calls its target, and history shows it", func(t *testing.T) {
		must(t, server, "", "jobs", "run", "ping")
		testkit.Eventually(t, 20*time.Second, func() bool {
			out, _, code := cli(t, server, "", "history", "ping", "--status", "completed")
			return code == 0 && strings.Contains(out, "Response from host '127.0.0.1': 'OK'")
		}, "history does not show the run")
		if calls.Load() != 1 {
			t.Errorf("the target was called %d times, want 1", calls.Load())
		}
		var entries []contracts.JobHistoryDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "history", "ping", "-o", "json")), &entries); err != nil || len(entries) != 1 {
			t.Fatalf("history -o json: %v %+v", err, entries)
		}
		if out := must(t, server, "", "history", "ping", "--status", "Failed"); strings.Count(out, "\n") != 1 {
			t.Errorf("history of failed attempts shows more than its header:\n%s", out)
		}
	})

	t.Run("disable and enable change the job's state", func(t *testing.T) {
		must(t, server, "", "jobs", "disable", "ping")
		var j contracts.JobDefinition
		if err := json.Unmarshal([]byte(must(t, server, "", "jobs", "get", "ping")), &j); err != nil || j.Properties.State != contracts.JobStateDisabled {
			t.Errorf("after disable: %v %s", err, j.Properties.State)
		}
		must(t, server, "", "jobs", "enable", "ping")
	})

	t.Run("exit codes and messages", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			stdin string
			args  []string
			code  int
			says  string
		}{
			{"a missing job is not found", "", []string{"jobs", "get", "nope"}, 3, "ResourceNotFound"},
			{"an invalid definition names its field", `{"properties": {"recurrence": {"frequency": "Minute", "interval": 1200}}}`,
				[]string{"jobs", "create", "bad", "-f", "-"}, 1, "recurrence.interval"},
			{"a file that is not JSON is a usage error", "not json", []string{"jobs", "create", "bad", "-f", "-"}, 2, "not JSON"},
			{"an unknown flag is a usage error", "", []string{"jobs", "list", "--frobnicate"}, 2, "frobnicate"},
			{"a bad status is a usage error", "", []string{"history", "ping", "--status", "Odd"}, 2, "--status"},
			{"a preview count out of range is a usage error", "", []string{"jobs", "preview", "ping", "-n", "0"}, 2, "--count"},
			{"an unreachable server says which", "", []string{"collections", "list", "--server", "http://127.0.0.1:1"}, 4, "cannot reach the scheduler at http://127.0.0.1:1"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, errOut, code := cli(t, server, tt.stdin, tt.args...)
				if code != tt.code || !strings.Contains(errOut, tt.says) {
					t.Errorf("exit %d, stderr %q; want exit %d saying %q", code, errOut, tt.code, tt.says)
				}
			})
		}
	})

	t.Run("deleting a job and a collection", func(t *testing.T) {
		must(t, server, "", "jobs", "delete", "ping")
		if _, _, code := cli(t, server, "", "jobs", "get", "ping"); code != 3 {
			t.Errorf("get after delete: exit %d, want 3", code)
		}
		must(t, server, "", "collections", "delete", "ops")
	})

	t.Run("completion scripts and dynamic completion of names", func(t *testing.T) {
		if out := must(t, server, "", "completion", "bash"); !strings.Contains(out, "__start_scheduler") {
			t.Errorf("completion bash printed no script")
		}
		must(t, server, "", "collections", "create", "billing")
		if out := must(t, server, "", "__complete", "collections", "get", ""); !strings.Contains(out, "billing") {
			t.Errorf("completing a collection name:\n%s", out)
		}
		if out := must(t, server, "", "__complete", "history", "x", "--status", ""); !strings.Contains(out, "Postponed") {
			t.Errorf("completing --status:\n%s", out)
		}
	})
}

// The token is sent, and never printed, not even in help.
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
	out, errOut, code := runCLI(t, "", "collections", "list", "--server", api.URL)
	if got != "Bearer s3cret-token" || code != 4 || strings.Contains(out+errOut, "s3cret-token") {
		t.Errorf("Authorization %q, exit %d, output %q", got, code, out+errOut)
	}
}
