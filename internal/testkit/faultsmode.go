package testkit

import (
	"os"
	"testing"
)

// FaultsEnv names the variable that runs the fault suite, and the tests of
// the helpers it uses, which start server processes and kill them: "short"
// (a couple of minutes of faults, what CI runs) or "full". Unset, those
// tests skip at once, so that `go test ./...` stays quick and needs no
// services.
const FaultsEnv = "SCHEDULER_FAULTS"

// FaultsMode returns "short" or "full" from SCHEDULER_FAULTS, skips the
// test when it is unset, and fails it on any other value.
func FaultsMode(t testing.TB) string {
	t.Helper()
	switch mode := os.Getenv(FaultsEnv); mode {
	case "short", "full":
		return mode
	case "":
		t.Skip("a fault test: set " + FaultsEnv + "=short or full to run it (task faults)")
	default:
		t.Fatalf("%s=%q: want short or full", FaultsEnv, mode)
	}
	return ""
}
