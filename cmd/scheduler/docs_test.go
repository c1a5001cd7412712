package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// envOfUsage finds the environment variable a flag's usage names.
var envOfUsage = regexp.MustCompile(`\(env (SCHEDULER_[A-Z_]+)\)`)

// The configuration reference in docs/operations.md names every flag of
// every role and its environment variable, so that a flag added later
// cannot go undocumented.
func TestTheOperationsGuideNamesEveryFlag(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	serve, _, err := newRootCommand().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	roles := 0
	for _, role := range serve.Commands() {
		roles++
		role.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !strings.Contains(doc, "`--"+f.Name+"`") {
				t.Errorf("docs/operations.md does not name --%s of serve %s", f.Name, role.Name())
			}
			m := envOfUsage.FindStringSubmatch(f.Usage)
			if m == nil {
				t.Errorf("serve %s --%s names no environment variable", role.Name(), f.Name)
			} else if !strings.Contains(doc, "`"+m[1]+"`") {
				t.Errorf("docs/operations.md does not name %s (serve %s --%s)", m[1], role.Name(), f.Name)
			}
		})
	}
	if roles != 3 {
		t.Errorf("found %d roles under serve, want planner, worker and history", roles)
	}
}
