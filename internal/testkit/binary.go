package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the scheduler binary a test process built.
var built struct {
	once      sync.Once
	dir, path string
	err       error
}

// SchedulerBinary builds cmd/scheduler once per test process, on first
// use (so `go test -short` and runs of in-process tests alone build
// nothing), and returns its path. Under -short the test is skipped. A
// package that uses it removes the build with RemoveBinary in its
// TestMain.
func SchedulerBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the scheduler binary")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "scheduler-bin"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "scheduler")
		if out, err := exec.Command("go", "build", "-o", built.path, "github.com/jobscheduler/scheduler/cmd/scheduler").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("building the scheduler: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// RemoveBinary removes what SchedulerBinary built; call it from TestMain
// after the tests ran.
func RemoveBinary() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}
