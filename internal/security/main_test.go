package security

import (
	"os"
	"testing"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testkit.RemoveBinary()
	os.Exit(code)
}
