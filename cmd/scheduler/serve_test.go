package main

import (
	"strings"
	"testing"
)

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
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, code := runCLI(t, "", tt.args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
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
		for _, want := range []string{"NATS URL is required", "Redis URL is required", "configure bearer tokens"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
	})
}
