//go:build unix && !linux

package testkit

import "syscall"

// processAttr puts a child in a process group of its own.
func processAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
