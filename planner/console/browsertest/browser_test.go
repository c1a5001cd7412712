package browsertest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
)

// requiredEnv names the variable that, set to "required", turns a missing
// Chromium, Node.js or playwright-core into a test failure instead of a
// skip.
const requiredEnv = "SCHEDULER_BROWSER_TESTS"

// chromiumEnv names the variable that overrides where Chromium is.
const chromiumEnv = "SCHEDULER_CHROMIUM"

// scenarioTimeout bounds one scenario's run, Chromium's start included.
const scenarioTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	code := m.Run()
	testkit.RemoveBinary()
	os.Exit(code)
}

func TestTheOverviewIsAPageWithAHeading(t *testing.T) {
	t.Parallel()
	c := startConsole(t)
	c.run(t, "smoke.mjs")
}

func TestTheConsoleAsksForATokenWhenTheAPIDoes(t *testing.T) {
	t.Parallel()
	c := startConsole(t, grant{name: "reader", role: "reader", scope: "/subscriptions/dev"})
	c.run(t, "signin.mjs")
}

func TestEachPageOfTheConsoleRenders(t *testing.T) {
	t.Parallel()
	c := startConsole(t)
	c.run(t, "pages.mjs")
}

func TestEachActionChangesTheJobAsTheAPISays(t *testing.T) {
	t.Parallel()
	c := startConsole(t)
	c.run(t, "actions.mjs")
}

func TestTheEditorShowsProblemsAtTheirFieldsAndKeepsSecrets(t *testing.T) {
	t.Parallel()
	c := startConsole(t)
	c.run(t, "editor.mjs")
}

func TestAReaderIsOfferedNoActionAndRefusedOne(t *testing.T) {
	t.Parallel()
	c := startConsole(t,
		grant{name: "reader", role: "reader", scope: "/subscriptions/dev"},
		grant{name: "writer", role: "writer", scope: "/subscriptions/dev"})
	c.run(t, "reader.mjs")
}

func TestAForgedRequestIsRefused(t *testing.T) {
	t.Parallel()
	c := startConsole(t, grant{name: "writer", role: "writer", scope: "/subscriptions/dev"})
	c.run(t, "forgery.mjs")
}

// The harness itself: a scenario fails on what its page reports, even
// when every assertion of the scenario holds.
func TestAScenarioFailsOnTheProblemsOfItsPage(t *testing.T) {
	t.Parallel()
	c := startConsole(t)
	for _, tc := range []struct {
		scenario string
		want     string // in the output of a failed run; "" when it passes
	}{
		{"testdata/console-error.mjs", "console error: the page logged this"},
		{"testdata/uncaught-exception.mjs", "uncaught exception: the page threw this"},
		{"testdata/failed-request.mjs", "request failed: GET http://127.0.0.1:9/unreachable.png"},
		{"testdata/allowed-error.mjs", ""},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			out, err := c.scenario(t, tc.scenario)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%s failed: %v\n%s", tc.scenario, err, out)
			case tc.want != "" && err == nil:
				t.Fatalf("%s passed; want it to fail with %q:\n%s", tc.scenario, tc.want, out)
			case !strings.Contains(out, tc.want):
				t.Fatalf("the output of %s does not say %q:\n%s", tc.scenario, tc.want, out)
			}
		})
	}
}

// tools are the programs a scenario needs.
type tools struct {
	node, chromium string
}

// requireTools finds Chromium, Node.js and the installed playwright-core,
// or skips the test saying which is missing (fails it when requiredEnv is
// "required").
func requireTools(t testing.TB) tools {
	t.Helper()
	chromium, err := findChromium()
	if err != nil {
		unavailable(t, "chromium not found: "+err.Error())
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "node not found: Node.js is not installed (no node on PATH)")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "playwright-core", "package.json")); err != nil {
		dir, _ := os.Getwd()
		unavailable(t, "playwright-core not found: run `npm ci` in "+dir)
	}
	return tools{node: node, chromium: chromium}
}

// findChromium returns SCHEDULER_CHROMIUM when set, else chromium on PATH,
// else Debian's /usr/bin/chromium.
func findChromium() (string, error) {
	if path := os.Getenv(chromiumEnv); path != "" {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", chromiumEnv, path, err)
		}
		return found, nil
	}
	if found, err := exec.LookPath("chromium"); err == nil {
		return found, nil
	}
	const debian = "/usr/bin/chromium"
	if _, err := os.Stat(debian); err != nil {
		return "", fmt.Errorf("no chromium on PATH nor at %s (apt-get install chromium, or set %s)", debian, chromiumEnv)
	}
	return debian, nil
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(requiredEnv) == "required" {
		t.Fatalf("%s (%s=required)", why, requiredEnv)
	}
	t.Skip(why)
}

// grant is a scoped token the console's API accepts, named for the
// scenarios.
type grant struct {
	name, role, scope string
}

// console is a running `scheduler dev` serving the console.
type console struct {
	tools
	// url is the base URL, such as http://127.0.0.1:41234.
	url string
	// tokens maps each grant's name to its bearer token.
	tokens map[string]string
}

// apiAddress is the line of dev's welcome that names the API's URL.
var apiAddress = regexp.MustCompile(`REST API\s+(http://\S+)`)

// startConsole runs `scheduler dev` as a process, on a free loopback port
// and a data directory of the test's own, and returns it once /readyz
// answers 200. With grants, dev reads a token file of them
// (--api-tokens-file) and the console asks for a token. The test's
// cleanup kills the process; when the test failed its output's tail is
// logged.
func startConsole(t *testing.T, grants ...grant) *console {
	t.Helper()
	c := &console{tools: requireTools(t), tokens: map[string]string{}}
	bin := testkit.SchedulerBinary(t)
	dir := t.TempDir()
	args := []string{"dev", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data")}
	if len(grants) > 0 {
		args = append(args, "--api-tokens-file", c.writeTokens(t, dir, grants))
	}
	p := testkit.StartProcess(t, "scheduler dev", filepath.Join(dir, "dev.log"), nil, bin, args...)

	exited := func() bool {
		select {
		case <-p.Exited():
			return true
		default:
			return false
		}
	}
	testkit.Eventually(t, 60*time.Second, func() bool {
		if data, err := os.ReadFile(p.Log); err == nil {
			if m := apiAddress.FindSubmatch(data); m != nil {
				c.url = string(m[1])
				return true
			}
		}
		return exited()
	}, "scheduler dev did not print its API address:\n%s", p.Tail(40))
	client := &http.Client{Timeout: 2 * time.Second}
	testkit.Eventually(t, 30*time.Second, func() bool {
		if exited() {
			return true
		}
		res, err := client.Get(c.url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, "scheduler dev did not become ready:\n%s", p.Tail(40))
	if exited() {
		t.Fatalf("scheduler dev exited at start:\n%s", p.Tail(40))
	}
	return c
}

// writeTokens writes a token file granting a new token to each grant and
// returns its path.
func (c *console) writeTokens(t *testing.T, dir string, grants []grant) string {
	t.Helper()
	var file strings.Builder
	file.WriteString("tokens:\n")
	for _, g := range grants {
		token := api.NewToken()
		entry, err := api.TokenEntry{Name: g.name, SHA256: api.HashToken(token), Role: g.role, Scopes: []string{g.scope}}.MarshalEntry()
		if err != nil {
			t.Fatalf("grant %s: %v", g.name, err)
		}
		for _, line := range strings.SplitAfter(string(entry), "\n") {
			if line != "" {
				file.WriteString("  " + line)
			}
		}
		c.tokens[g.name] = token
	}
	path := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs the scenario file (relative to this directory) against the
// console and fails the test when it fails.
func (c *console) run(t *testing.T, scenario string) {
	t.Helper()
	if _, err := c.scenario(t, scenario); err != nil {
		t.Fatalf("scenario %s: %v", scenario, err)
	}
}

// scenario runs `node scenario` with the console's URL, the tokens and
// Chromium's path in its environment, logs each line it writes as it
// comes, and returns all it wrote and an error when it exited non-zero or
// outlived scenarioTimeout.
func (c *console) scenario(t *testing.T, scenario string) (string, error) {
	t.Helper()
	tokens, err := json.Marshal(c.tokens)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.node, scenario)
	cmd.Env = append(os.Environ(),
		"SCHEDULER_CONSOLE_URL="+c.url,
		"SCHEDULER_CONSOLE_TOKENS="+string(tokens),
		chromiumEnv+"="+c.chromium,
	)
	// A group of its own, so that a timeout kills Chromium too; and
	// killed with the test process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Stdout, cmd.Stderr = w, w
	started := time.Now()
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatalf("starting node %s: %v", scenario, err)
	}
	timedOut := make(chan struct{})
	timer := time.AfterFunc(scenarioTimeout, func() {
		close(timedOut)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	defer timer.Stop()

	var out strings.Builder
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		t.Logf("%s: %s", scenario, lines.Text())
		out.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	// Whatever the scenario left behind (a Chromium it did not close)
	// goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	t.Logf("%s: node exited after %s", scenario, time.Since(started).Round(time.Millisecond))
	select {
	case <-timedOut:
		return out.String(), fmt.Errorf("killed after %s", scenarioTimeout)
	default:
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), fmt.Errorf("node exited with status %d", exit.ExitCode())
	}
	if err != nil {
		t.Fatalf("node %s: %v", scenario, err)
	}
	return out.String(), nil
}
