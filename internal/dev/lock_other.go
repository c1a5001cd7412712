//go:build !unix

package dev

import (
	"errors"
	"os"
)

// errLocked: another open file holds the lock.
var errLocked = errors.New("locked")

// lockFile takes no lock: on systems without flock, dev does not keep a
// second process off its data directory.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) error { return nil }
