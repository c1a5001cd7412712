package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runCLI runs the scheduler command in-process and returns its stdout,
// stderr and exit status.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := newRootCommand()
	var stdout, stderr bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	if err := cmd.Execute(); err != nil {
		return stdout.String(), stderr.String(), exitCode(err)
	}
	return stdout.String(), stderr.String(), 0
}

type example struct {
	Name   string          `json:"name"`
	Source string          `json:"source"`
	Now    time.Time       `json:"now"`
	Job    json.RawMessage `json:"job"`
	Want   []string        `json:"want"`
	Count  int             `json:"count"`
}

// The table of worked examples, seed examples, daylight-saving and month-end
// cases that the recurrence engine is tested with, through the command.
func TestPreviewPrintsTheExamples(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../planner/testdata/examples.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []example
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, ex := range rows {
		t.Run(ex.Source+"/"+ex.Name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(dir, fmt.Sprintf("job-%02d.json", i))
			if err := os.WriteFile(file, ex.Job, 0o600); err != nil {
				t.Fatal(err)
			}
			count := ex.Count
			if count == 0 {
				count = len(ex.Want)
			}
			out, errOut, code := runCLI(t, "", "preview", "--now", ex.Now.Format(time.RFC3339), "--count", strconv.Itoa(count), file)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if want := strings.Join(ex.Want, "\n") + "\n"; out != want {
				t.Fatalf("stdout\n%s\nwant\n%s", out, want)
			}
		})
	}
}

func TestPreviewPrintsJSONFromStandardInput(t *testing.T) {
	t.Parallel()
	job := `{"startTime": "2026-03-07T02:30", "action": {"type": "http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "day", "count": 4, "timeZone": "America/New_York"}}`
	out, errOut, code := runCLI(t, job, "preview", "--now", "2026-01-01T00:00:00Z", "--format", "json", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	want := []string{"2026-03-07T07:30:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q (the job completes after 4)", got, want)
	}
}

func TestPreviewRejectsAnInvalidDefinition(t *testing.T) {
	t.Parallel()
	job := `{"action": {"type": "http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "minute", "interval": 1200, "schedule": {"weekDays": ["monday"]}}}`
	out, errOut, code := runCLI(t, job, "preview", "-")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if out != "" {
		t.Fatalf("stdout must be empty, got %q", out)
	}
	for _, want := range []string{
		"recurrence.interval: 1200 is above the limit of 1000 for frequency Minute",
		"recurrence.schedule.weekDays: only allowed with frequency Week",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestPreviewRejectsBadFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"preview", "--now", "yesterday", "-"},
		{"preview", "--count", "0", "-"},
		{"preview", "--format", "xml", "-"},
		{"preview"},
	} {
		if _, _, code := runCLI(t, "{}", args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (a usage error)", args, code)
		}
	}
}

// The built binary exits with status 1, prints nothing on stdout and the
// violations on stderr for an invalid definition.
func TestPreviewBinaryExitStatus(t *testing.T) {
	t.Parallel()
	bin := schedulerBinary(t)
	cmd := exec.Command(bin, "preview", "-")
	cmd.Stdin = strings.NewReader(`{"recurrence": {"frequency": "fortnight"}}`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("want exit status 1, got %v", err)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout: %q", stdout.String())
	}
	for _, want := range []string{"recurrence.frequency", "action: required"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}

	good := exec.Command(bin, "preview", "--now", "2026-01-01T10:10:07Z", "--count", "3", "-")
	good.Stdin = strings.NewReader(`{"action": {"type": "http", "request": {"uri": "https://example.com", "method": "GET"}},
		"recurrence": {"frequency": "day", "schedule": {"minutes": [0, 30]}}}`)
	out, err := good.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "2026-01-01T10:10:07Z\n2026-01-01T10:30:00Z\n2026-01-01T11:00:00Z\n"; string(out) != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
}

// The example jobs under docs/examples stay valid.
func TestPreviewAcceptsTheDocumentedExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../docs/examples/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, file := range files {
		out, errOut, code := runCLI(t, "", "preview", "--now", "2026-01-01T00:00:00Z", "--count", "3", file)
		if code != 0 || strings.Count(out, "\n") != 3 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", file, code, out, errOut)
		}
	}
}
