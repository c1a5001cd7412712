package events

import (
	"os/exec"
	"strings"
	"testing"
)

// The worker and history roles report to the same metrics and traces as
// the planner, through this package: they must not link the planner's
// code or its Redis client.
func TestTheWorkerAndHistoryRolesLinkNoPlannerCode(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{
		"github.com/jobscheduler/scheduler/worker/service",
		"github.com/jobscheduler/scheduler/history/service",
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/redis/go-redis") || strings.HasPrefix(dep, "github.com/jobscheduler/scheduler/planner") {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
