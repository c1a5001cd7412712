package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/jobscheduler/scheduler/internal/dev"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// startDevInProcess runs the development environment in the test's
// process, on a free port, and returns the base URL of its API once it is
// ready.
func startDevInProcess(t *testing.T) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	env, err := dev.Start(context.Background(), dev.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Stop(context.Background()) })
	testkit.Eventually(t, 30*time.Second, env.Ready, "scheduler dev did not become ready")
	return "http://" + env.APIAddr()
}

// watchedBuffer collects a command's output and calls onLine once for the
// first write that holds line.
type watchedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	line   string
	onLine func()
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.onLine != nil && strings.Contains(w.buf.String(), w.line) {
		w.onLine()
		w.onLine = nil
	}
	return n, err
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// bench runs `scheduler bench` in the test's process against server, with
// ctx as the signals' context, and returns its output and exit code.
func bench(t *testing.T, ctx context.Context, stderr *watchedBuffer, server string, args ...string) (stdout string, code int) {
	t.Helper()
	cmd := newRootCommand()
	cmd.SetArgs(append([]string{"bench", "--server", server}, args...))
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		code = exitCode(err)
		_, _ = stderr.Write([]byte("scheduler: " + err.Error() + "\n"))
	}
	return out.String(), code
}

// benchJSON runs `scheduler bench --json` and decodes its report.
func benchJSON(t *testing.T, server string, args ...string) (benchReport, int, string) {
	t.Helper()
	stderr := &watchedBuffer{}
	out, code := bench(t, context.Background(), stderr, server, append(args, "--json")...)
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json printed no JSON object (%v), exit %d:\n%s\n%s", err, code, out, stderr)
	}
	return rep, code, stderr.String()
}

// collectionGone checks that the API no longer has the collection.
func collectionGone(t *testing.T, server, name string) {
	t.Helper()
	if name == "" {
		t.Fatal("the report names no collection")
	}
	o := &clientOptions{server: server, subscription: "dev", resourceGroup: "dev"}
	code, body := testkit.Call(t, http.MethodGet, server+o.collectionsPath(name)+"?api-version=2016-03-01", "")
	if code != http.StatusNotFound {
		t.Errorf("the collection %s is still there after the run: %d %s", name, code, body)
	}
}

// `scheduler bench` against a `scheduler dev` running in the test's
// process: every job calls the sink once, none early, none lost, and the
// collection is gone afterwards.
func TestBenchAgainstDev(t *testing.T) {
	t.Parallel()
	server := startDevInProcess(t)

	t.Run("a burst created disabled, then enabled with its due time, calls every job once, none early", func(t *testing.T) {
		t.Parallel()
		rep, code, stderr := benchJSON(t, server, "-n", "30")
		if code != 0 || rep.Jobs != 30 || rep.Calls.Called != 30 || rep.Calls.Early != 0 || rep.Calls.Lost != 0 ||
			rep.Calls.Duplicates != 0 || rep.Calls.Stray != 0 || !rep.Deleted || rep.Interrupted {
			t.Fatalf("exit %d, report %+v\n%s", code, rep, stderr)
		}
		if !rep.Create.Disabled || rep.Create.PerSecond <= 0 || rep.Enable == nil || rep.Enable.PerSecond <= 0 ||
			rep.LeadSeconds < quietBeforeDue.Seconds() || !strings.Contains(stderr, "bench: enabling them, the first due at") {
			t.Errorf("the jobs were not created disabled, then enabled with a due time from the create rate: %+v %+v lead %vs\n%s",
				rep.Create, rep.Enable, rep.LeadSeconds, stderr)
		}
		if rep.AheadSeconds < 10 {
			t.Errorf("the last job was enabled %vs before the due time, want 10s or more", rep.AheadSeconds)
		}
		total := 0
		for _, b := range rep.Histogram {
			total += b.Count
		}
		if total != 30 || rep.LatenessMs.Min < 0 || rep.LatenessMs.P50 > rep.LatenessMs.Max || !rep.FirstDue.Equal(rep.LastDue) {
			t.Errorf("histogram of %d calls, lateness %+v, due %v to %v", total, rep.LatenessMs, rep.FirstDue, rep.LastDue)
		}
		collectionGone(t, server, rep.Collection)
	})

	t.Run("a steady load of 10 jobs a second for 2 seconds calls every job once, and the report reads as text", func(t *testing.T) {
		t.Parallel()
		stderr := &watchedBuffer{}
		out, code := bench(t, context.Background(), stderr, server, "--mode", "steady", "--rate", "10", "--duration", "2s", "--lead", "2s")
		if code != 0 {
			t.Fatalf("exit %d:\n%s\n%s", code, out, stderr)
		}
		for _, want := range []string{
			`(?m)^calls\s+20 of 20 jobs called$`, `(?m)^early\s+0$`, `(?m)^lost\s+0$`, `(?m)^duplicates\s+0$`,
			`(?m)^load\s+steady: 10 jobs a second from \S+ to \S+$`, `(?m)^lateness\s+p50 \S+  p90 \S+  p99 \S+  max \S+`,
			`(?m)^create rate\s+\d+ creates/s \(20 jobs in`, `(?m)^throughput\s+\d+ calls/s`,
			"\nlateness histogram \\(due time to arrival\\)\n  ",
		} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("the report does not match %s:\n%s", want, out)
			}
		}
		if strings.Contains(stderr.String(), "\r") {
			t.Errorf("stderr is not a terminal, yet it shows a live line: %q", stderr)
		}
		m := regexp.MustCompile(`(?m)^collection\s+(bench-[0-9a-f]+) \(deleted\)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("the report names no deleted collection:\n%s", out)
		}
		collectionGone(t, server, m[1])
	})

	t.Run("recurring jobs are watched at their first occurrence", func(t *testing.T) {
		t.Parallel()
		rep, code, stderr := benchJSON(t, server, "-n", "5", "--recurring", "--lead", "2s")
		if code != 0 || !rep.Recurring || rep.Calls.Called != 5 || rep.Calls.Early != 0 || rep.Calls.Lost != 0 || !rep.Deleted {
			t.Fatalf("exit %d, report %+v\n%s", code, rep, stderr)
		}
		collectionGone(t, server, rep.Collection)
	})

	t.Run("jobs whose calls never reach the sink are lost, the exit code says so, and the collection is deleted", func(t *testing.T) {
		t.Parallel()
		// The workers call a port nobody listens on, not the sink.
		rep, code, stderr := benchJSON(t, server, "-n", "3", "--lead", "2s", "--timeout", "1s", "--sink-url", "http://127.0.0.1:1")
		if code != exitRefused || rep.Calls.Lost != 3 || len(rep.Calls.LostJobs) != 3 || rep.Calls.LostJobs[0] != "job-0000000" || !rep.Deleted {
			t.Fatalf("exit %d, report %+v\n%s", code, rep, stderr)
		}
		if !strings.Contains(stderr, "0 calls came before their due time and 3 jobs were never called") {
			t.Errorf("stderr does not say what failed:\n%s", stderr)
		}
		collectionGone(t, server, rep.Collection)
	})

	t.Run("an interruption while waiting still deletes the collection", func(t *testing.T) {
		t.Parallel()
		ctx, interrupt := context.WithCancel(context.Background())
		defer interrupt()
		stderr := &watchedBuffer{line: "bench: waiting for", onLine: interrupt}
		out, code := bench(t, ctx, stderr, server, "-n", "3", "--lead", "1h")
		if code != exitRefused || !strings.Contains(stderr.String(), "interrupted before every job called") ||
			!regexp.MustCompile(`(?m)^not called\s+3 `).MatchString(out) {
			t.Fatalf("exit %d:\n%s\n%s", code, out, stderr)
		}
		m := regexp.MustCompile(`bench: collection (bench-[0-9a-f]+) deleted`).FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("stderr does not say the collection was deleted:\n%s", stderr)
		}
		collectionGone(t, server, m[1])
	})
}

// Bad flags are refused before anything is created, with exit code 2 and
// a message naming the flag.
func TestBenchFlags(t *testing.T) {
	t.Parallel()
	// Nothing listens here: a command that got as far as the API would
	// exit 4, not 2.
	const server = "http://127.0.0.1:1"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "fast"}, `--mode must be burst or steady, not "fast"`},
		{[]string{"-n", "0"}, "-n must be from 1 to 1000000, not 0"},
		{[]string{"-n", "many"}, `invalid argument "many" for "-n, --jobs"`},
		{[]string{"--rate", "5"}, "--rate and --duration are for --mode steady"},
		{[]string{"--mode", "steady", "-n", "5"}, "-n is for --mode burst"},
		{[]string{"--mode", "steady", "--rate", "0"}, "--rate must be at least 1"},
		{[]string{"--mode", "steady", "--duration", "1500ms"}, "--duration must be whole seconds, at least 1s, not 1.5s"},
		{[]string{"--mode", "steady", "--rate", "1000000", "--duration", "2s"}, "--rate 1000000 for --duration 2s makes more than 1000000 jobs"},
		{[]string{"--concurrency", "0"}, "--concurrency must be from 1 to 256, not 0"},
		{[]string{"--lead", "-1s"}, "--lead must not be negative"},
		{[]string{"--timeout", "0s"}, "--timeout must be more than 0"},
		{[]string{"--sink-url", "ftp://example.com"}, `--sink-url "ftp://example.com" is not an http:// or https:// URL`},
		{[]string{"--sink-listen", "nowhere"}, `--sink-listen "nowhere" is not host:port`},
		{[]string{"--sink-listen", "0.0.0.0:0"}, "give the URL the workers call with --sink-url"},
		{[]string{"--server", "ftp://example.com"}, "--server"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			stderr := &watchedBuffer{}
			out, code := bench(t, context.Background(), stderr, server, tt.args...)
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, stderr, tt.want)
			}
		})
	}
}

// docs/bench.md names every flag of bench, so that a flag added later
// cannot go undocumented.
func TestTheBenchGuideNamesEveryFlag(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/bench.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, err := newRootCommand().Find([]string{"bench"})
	if err != nil {
		t.Fatal(err)
	}
	flags := 0
	visit := func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		flags++
		if !strings.Contains(string(data), "`--"+f.Name+"`") {
			t.Errorf("docs/bench.md does not name --%s", f.Name)
		}
	}
	cmd.LocalFlags().VisitAll(visit)
	if flags < 15 {
		t.Errorf("found %d flags of bench, want its own and the client flags", flags)
	}
}
