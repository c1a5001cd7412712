//go:build !linux

package faults

// socketOwner cannot tell a socket's process without /proc: every call's
// worker is unknown, and the worker faults pick a worker at random.
func socketOwner(string, map[int]string) string { return "" }
