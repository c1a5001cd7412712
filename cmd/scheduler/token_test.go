package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/planner/api"
)

// scheduler token new prints a token and an entry that holds its hash,
// never the token, and that the planner accepts the token with.
func TestTokenNewPrintsATokenAndItsEntry(t *testing.T) {
	t.Parallel()
	out, errOut, code := runCLI(t, "", "token", "new", "--name", "deploy", "--role", "writer", "--scope", "/subscriptions/prod", "--scope", "/subscriptions/test/resourceGroups/web")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	head, entry, ok := strings.Cut(out, "Entry for the token file, under \"tokens:\":\n")
	if !ok {
		t.Fatalf("output:\n%s", out)
	}
	token := strings.TrimSpace(strings.TrimPrefix(head, "Token (give it to its client now; it is stored nowhere):\n"))
	if len(token) < api.MinTokenLength || strings.Contains(entry, token) {
		t.Fatalf("token %q, entry:\n%s", token, entry)
	}
	tokens, err := api.ParseTokens([]byte("tokens:\n" + entry))
	if err != nil {
		t.Fatalf("the entry does not parse: %v\n%s", err, entry)
	}
	if _, err := tokens.Authenticate(context.Background(), token); err != nil {
		t.Fatalf("the entry does not accept the token: %v", err)
	}

	hash, _, code := runCLI(t, token+"\n", "token", "hash")
	if code != 0 || !strings.Contains(entry, "sha256: "+strings.TrimSpace(hash)) {
		t.Fatalf("token hash: exit %d, %q not in\n%s", code, hash, entry)
	}
}

func TestTokenCommandsRefuseBadInput(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		stdin string
		args  []string
		says  string
	}{
		{"", []string{"token", "new", "--name", "x", "--role", "boss", "--scope", "*"}, `role: "boss" is not one of reader, writer, operator`},
		{"", []string{"token", "new", "--name", "x", "--role", "reader"}, "scopes: at least one is required"},
		{"", []string{"token", "new", "--role", "reader", "--scope", "/subscriptions/a/jobs"}, "name: required"},
		{"too-short\n", []string{"token", "hash"}, "a token of 9 characters is too short"},
		{"", []string{"token", "hash"}, "no token on stdin"},
	} {
		cmd := newRootCommand()
		cmd.SetArgs(tt.args)
		cmd.SetIn(strings.NewReader(tt.stdin))
		cmd.SetOut(io.Discard)
		err := cmd.Execute()
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%v: %v, want exit 2 and %q", tt.args, err, tt.says)
		} else if strings.Contains(err.Error(), "too-short") {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
}
