package dev

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// readmeBlock returns the shell commands of the README between the markers
// <!-- name --> and <!-- /name -->.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- "+name+" -->")
	block, _, ok2 := strings.Cut(rest, "<!-- /"+name+" -->")
	if !ok || !ok2 {
		t.Fatalf("the README has no block marked %s", name)
	}
	block = strings.TrimSpace(block)
	block = strings.TrimPrefix(block, "```sh")
	return strings.TrimSuffix(block, "```")
}

// The README's first job works as written: its commands, run against
// `dev`, create a job that calls the endpoint they name, and the job's
// history shows the call.
func TestTheReadmeFirstJob(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the README's commands need it")
	}
	env, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop(context.Background())
	testkit.Eventually(t, 10*time.Second, env.Ready, "not ready")

	// The README's commands, against this environment's address, with curl
	// failing on an HTTP error.
	script := strings.ReplaceAll(readmeBlock(t, "first-job"), "127.0.0.1:8080", env.APIAddr())
	script = strings.ReplaceAll(script, "curl ", "curl -fsS ")
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out)
	}

	base := "http://" + env.APIAddr() + "/subscriptions/dev/resourceGroups/dev/providers/Microsoft.Scheduler/jobCollections/demo"
	var history contracts.JobHistoryListResult
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, body := testkit.Call(t, "GET", base+"/jobs/ping/history?api-version=2016-03-01", "")
		return json.Unmarshal([]byte(body), &history) == nil && len(history.Value) >= 1
	}, "the history does not show the first run")
	h := history.Value[len(history.Value)-1].Properties
	if h.RepeatCount != 1 || !strings.HasPrefix(h.Message, "Http Action - Response from host '127.0.0.1': 'OK'") || !strings.Contains(h.Message, "Body: ok") {
		t.Errorf("the first run's history entry is %+v, not what the README shows", h)
	}
}
