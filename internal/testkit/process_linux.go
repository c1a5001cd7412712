package testkit

import "syscall"

// processAttr puts a child in a process group of its own and has the
// kernel kill it when the test process dies, so that a test killed by its
// timeout leaves no server behind.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
