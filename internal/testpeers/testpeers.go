// Package testpeers starts the protocol peers the integration tests talk to
// on loopback, as Node.js processes from the npm packages pinned in this
// directory's package-lock.json: Azurite for Azure Storage queues, and an
// AMQP 1.0 peer that plays Service Bus for a sender.
//
// Install them with `npm ci` in this directory (.ci/run does). Without
// Node.js or the packages, a test that asks for a peer is skipped with a
// message saying so, so `go test ./...` passes on any machine with Go; with
// SCHEDULER_TEST_PEERS=required (set by .ci/run) it fails instead.
package testpeers

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequiredEnv names the variable that, set to "required", turns a missing
// peer into a test failure.
const RequiredEnv = "SCHEDULER_TEST_PEERS"

// Dir returns the directory holding package.json and node_modules.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// node returns the node binary and the installed packages' directory, or
// skips (fails, when peers are required) the test when either is missing.
func node(t testing.TB, pkg string) (string, string) {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "Node.js is not installed (no node on PATH)")
	}
	modules := filepath.Join(Dir(), "node_modules")
	if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
		unavailable(t, fmt.Sprintf("the npm package %s is not installed: run `npm ci` in %s", pkg, Dir()))
	}
	return bin, modules
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequiredEnv) == "required" {
		t.Fatalf("test peer unavailable: %s", why)
	}
	t.Skipf("skipped: test peer unavailable: %s", why)
}

// Process is a running peer.
type Process struct {
	cmd    *exec.Cmd
	output *syncBuffer
	lines  chan string
	done   chan struct{}
}

// start runs node with args in Dir(), after checking that the npm package
// pkg is installed, and stops it when the test ends. Each line the process
// writes on standard output is sent to Lines.
func start(t testing.TB, pkg string, args ...string) *Process {
	t.Helper()
	bin, _ := node(t, pkg)
	cmd := exec.Command(bin, args...)
	cmd.Dir = Dir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Process{cmd: cmd, output: &syncBuffer{}, lines: make(chan string, 1024), done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.output
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", args, err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(io.TeeReader(stdout, p.output))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(p.Stop)
	return p
}

// Lines delivers the lines the peer writes on standard output.
func (p *Process) Lines() <-chan string { return p.lines }

// Output returns everything the peer wrote so far, for failure messages.
func (p *Process) Output() string { return p.output.String() }

// Stop ends the peer (its whole process group) and waits for it.
func (p *Process) Stop() {
	if p.cmd.Process == nil || p.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// WaitForPort waits until addr accepts TCP connections, failing the test
// with the peer's output after within.
func (p *Process) WaitForPort(t testing.TB, addr string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-p.done:
			t.Fatalf("the peer exited before listening on %s:\n%s", addr, p.Output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the peer did not listen on %s within %s:\n%s", addr, within, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}
