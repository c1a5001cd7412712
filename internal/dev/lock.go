package dev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LockFile is the file in the data directory that a running `scheduler
// dev` holds locked, so that a second one cannot share the directory: two
// embedded NATS servers on one store would corrupt it.
const LockFile = "scheduler-dev.lock"

// ErrDataDirInUse is returned by Start when another process runs on the
// data directory.
var ErrDataDirInUse = errors.New("the data directory is in use")

// dirLock is the exclusive lock on a data directory.
type dirLock struct{ f *os.File }

// lockDir takes the exclusive lock on dir, held until release or the end of
// the process, and writes this process's id in the lock file so that a
// second process can name the first.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the data directory: %w", err)
	}
	if err := lockFile(f); err != nil {
		defer f.Close()
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("locking the data directory %s: %w", dir, err)
		}
		holder := "another process"
		if data, _ := os.ReadFile(path); len(data) > 0 {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				holder = "process " + strconv.Itoa(pid)
			}
		}
		return nil, fmt.Errorf("%w: %s, by %s (another scheduler dev?); stop it, or give this one another --data-dir",
			ErrDataDirInUse, dir, holder)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

// release lets another process take the directory. It is idempotent, and
// does nothing to a nil lock.
func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unlockFile(l.f)
	_ = l.f.Close()
	l.f = nil
}
