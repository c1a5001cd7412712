//go:build unix

package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a server the test runs as a child process, in a process group
// of its own so that a signal reaches all of it: it can be killed (-9),
// paused (SIGSTOP), resumed and started again with the same command line.
// Its output, across restarts, goes to a file whose tail is printed when
// the test fails. The test's cleanup kills it.
type Process struct {
	// Name names the process in messages.
	Name string
	// Log is the file holding its output.
	Log string

	path string
	args []string
	env  []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	exitErr error
	paused  bool
	killed  bool // by Kill or the cleanup, not by itself
	exits   []string
}

// StartProcess starts path with args and the environment env (nil: the
// test process's) and returns it running. Its output goes to log.
func StartProcess(t testing.TB, name, log string, env []string, path string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, Log: log, path: path, args: args, env: env}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Kill()
		if t.Failed() {
			t.Logf("%s (output in %s), last lines:\n%s", p.Name, p.Log, p.Tail(40))
		}
	})
	return p
}

// Start starts the process again after it exited or was killed; it is an
// error to start a running process.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.hasExited() {
		return fmt.Errorf("%s is already running (pid %d)", p.Name, p.cmd.Process.Pid)
	}
	out, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%s: the output file: %w", p.Name, err)
	}
	fmt.Fprintf(out, "---- %s start %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.Name)
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = processAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.paused, p.killed, p.exitErr = cmd, exited, false, false, nil
	go func() {
		err := cmd.Wait()
		out.Close()
		p.mu.Lock()
		p.exitErr = err
		if !p.killed {
			p.exits = append(p.exits, fmt.Sprintf("%s: exited by itself (%v)", time.Now().UTC().Format(time.RFC3339), err))
		}
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// hasExited reports whether the current command has exited; p.mu is held.
func (p *Process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Running reports whether the process runs (paused counts as running).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.hasExited()
}

// Paused reports whether the process is stopped by Pause.
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused && !p.hasExited()
}

// Pid returns the process id of the current run, 0 before the first.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited returns a channel closed when the current run ends.
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// SelfExits lists the times the process exited without being killed, with
// its exit status.
func (p *Process) SelfExits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.exits...)
}

// signal sends sig to the process group of the current run.
func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.hasExited() {
		return fmt.Errorf("%s is not running", p.Name)
	}
	if sig == syscall.SIGKILL {
		p.killed = true
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return nil
}

// Kill kills the process group with SIGKILL and waits (up to 10 s) until
// the process has exited. Killing a process that is not running does
// nothing.
func (p *Process) Kill() error {
	if !p.Running() {
		return nil
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.Exited():
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s did not exit within 10s of SIGKILL", p.Name)
	}
}

// Restart kills the process if it runs and starts it again.
func (p *Process) Restart() error {
	if err := p.Kill(); err != nil {
		return err
	}
	return p.Start()
}

// Pause stops the process group with SIGSTOP.
func (p *Process) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume continues a paused process group with SIGCONT.
func (p *Process) Resume() error { return p.signal(syscall.SIGCONT) }

// Tail returns the last n lines of the process's output.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Ports FreePort hands out: below Linux's ephemeral range (32768–60999
// by default), from which the kernel takes the source port of every
// outgoing connection. A port of that range, free when FreePort looked,
// could be taken by a connection (a route between two test nodes, a
// health probe) before the server given it binds it.
const (
	firstFreePort = 20000
	freePorts     = 12000
)

var (
	portsMu sync.Mutex
	given   = map[int]bool{}
)

// FreePort returns a loopback TCP port that was free a moment ago, outside
// the ephemeral range and not handed out before by this process.
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	start := rand.IntN(freePorts)
	for i := range freePorts {
		port := firstFreePort + (start+i)%freePorts
		if given[port] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		given[port] = true
		return port
	}
	t.Fatalf("no free loopback port from %d to %d", firstFreePort, firstFreePort+freePorts-1)
	return 0
}
