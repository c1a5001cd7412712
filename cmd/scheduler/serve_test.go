package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zeroKey writes the base64 of 32 zero bytes to a file and returns its
// path.
func zeroKey(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServePlannerRejectsAnIncompleteConfiguration(t *testing.T) {
	t.Setenv(envNATSURL, "")
	t.Setenv(envRedisURL, "")
	t.Setenv(envEncryptionKey, "")
	for _, tt := range []struct {
		name string
		args []string
		says string
	}{
		{"no encryption key", []string{"serve", "planner"}, "an encryption key is required"},
		{"a bad encryption key", []string{"serve", "planner", "--encryption-key-file", "serve_test.go"}, "the encryption key"},
		{"an all-zero encryption key", []string{"serve", "planner", "--encryption-key-file", zeroKey(t)}, "weak"},
		{"a weak key for a worker", []string{"serve", "worker", "--encryption-key-file", zeroKey(t)}, "weak"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newRootCommand()
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			if err == nil || exitCode(err) != 1 {
				t.Fatalf("err %v, want exit 1", err)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("%q lacks %q", err, tt.says)
			}
		})
	}
	t.Run("missing servers and tokens beyond loopback are named", func(t *testing.T) {
		t.Setenv(envEncryptionKey, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
		cmd := newRootCommand()
		cmd.SetArgs([]string{"serve", "planner", "--listen", "0.0.0.0:0"})
		err := cmd.Execute()
		if err == nil || exitCode(err) != 1 {
			t.Fatalf("err %v", err)
		}
		for _, want := range []string{"NATS URL is required", "Redis URL is required", "configure bearer tokens (--api-tokens"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
	})
	t.Run("short tokens are refused, naming the flag", func(t *testing.T) {
		t.Setenv(envEncryptionKey, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
		t.Setenv(envAPITokens, "hunter2,"+strings.Repeat("x", 32))
		cmd := newRootCommand()
		cmd.SetArgs([]string{"serve", "planner", "--nats-url", "nats://127.0.0.1:1", "--redis-url", "redis://127.0.0.1:1"})
		err := cmd.Execute()
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "--api-tokens (SCHEDULER_API_TOKENS): token 1 of 2") || strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a token file that cannot be read stops the start, naming the flag", func(t *testing.T) {
		t.Setenv(envEncryptionKey, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
		cmd := newRootCommand()
		cmd.SetArgs([]string{"serve", "planner", "--nats-url", "nats://127.0.0.1:1", "--redis-url", "redis://127.0.0.1:1", "--api-tokens-file", "missing.yaml", "--intake=false"})
		err := cmd.Execute()
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "--api-tokens-file (SCHEDULER_API_TOKENS_FILE): reading the token file") {
			t.Fatalf("err %v", err)
		}
	})
}

// A negative --publish-ahead or --hold stops the role at start with a
// usage error naming the flag.
func TestServeRefusesANegativeLeadOrHold(t *testing.T) {
	t.Setenv(envEncryptionKey, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	for _, tt := range []struct {
		name string
		args []string
		says string
	}{
		{"planner", []string{"serve", "planner", "--publish-ahead", "-1s"}, "--publish-ahead must be 0 or more, not -1s"},
		{"worker", []string{"serve", "worker", "--hold", "-5"}, "--hold must be 0 or more, not -5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newRootCommand()
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err %v (exit %d), want exit %d saying %q", err, exitCode(err), exitUsage, tt.says)
			}
		})
	}
}
