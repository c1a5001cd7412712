//go:build unix

package dev

import (
	"errors"
	"os"
	"syscall"
)

// errLocked: another open file holds the lock.
var errLocked = errors.New("locked")

// lockFile takes an exclusive lock on f without waiting. The kernel
// releases it when the process ends, however it ends.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
