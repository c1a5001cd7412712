package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// The transport flags reach the roles, and settings that cannot work stop
// the command at once (no server listens at the URLs given) with exit 1
// and a message naming the flag.
func TestServeRejectsTransportSettingsThatCannotWork(t *testing.T) {
	t.Setenv(envEncryptionKey, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	for _, name := range []string{envTLSCertFile, envTLSKeyFile, envNATSCreds, envNATSNkey, envNATSCAFile,
		envNATSCertFile, envNATSKeyFile, envRedisCAFile, envRedisCertFile, envRedisKeyFile} {
		t.Setenv(name, "")
	}
	ca := testkit.NewCA(t)
	pair := ca.Server(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	servers := []string{"--nats-url", "nats://127.0.0.1:1", "--redis-url", "redis://127.0.0.1:1"}
	planner := append([]string{"serve", "planner"}, servers...)
	worker := []string{"serve", "worker", "--nats-url", "nats://127.0.0.1:1"}
	history := []string{"serve", "history", "--nats-url", "nats://127.0.0.1:1"}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		says string
	}{
		{"a certificate without its key", slices.Concat(planner, []string{"--tls-cert-file", pair.CertFile}), nil,
			"--tls-cert-file is set without --tls-key-file: give both, or neither"},
		{"a key, from the environment, without its certificate", planner, map[string]string{envTLSKeyFile: pair.KeyFile},
			"--tls-key-file is set without --tls-cert-file"},
		{"a missing certificate file", slices.Concat(planner, []string{"--tls-cert-file", missing, "--tls-key-file", pair.KeyFile}), nil,
			"--tls-cert-file: open " + missing},
		{"a key that is not the certificate's", slices.Concat(planner, []string{"--tls-cert-file", pair.CertFile, "--tls-key-file", ca.Server(t).KeyFile}), nil,
			"--tls-cert-file and --tls-key-file are not a certificate and its key"},
		{"a Redis CA for a redis:// URL", slices.Concat(planner, []string{"--redis-ca-file", ca.File}), nil,
			"the Redis URL must start with rediss://"},
		{"a missing Redis CA", []string{"serve", "planner", "--nats-url", "nats://127.0.0.1:1", "--redis-url", "rediss://127.0.0.1:1", "--redis-ca-file", missing}, nil,
			"--redis-ca-file: open " + missing},
		{"a missing NATS CA of the planner", slices.Concat(planner, []string{"--nats-ca-file", missing}), nil, "--nats-ca-file: open " + missing},
		{"a missing NATS creds file of the worker", slices.Concat(worker, []string{"--nats-creds", missing}), nil, "--nats-creds: open " + missing},
		{"a NATS client certificate of the worker without its key", worker, map[string]string{envNATSCertFile: pair.CertFile},
			"--nats-cert-file is set without --nats-key-file"},
		{"a worker's endpoints certificate without its key", slices.Concat(worker, []string{"--tls-cert-file", pair.CertFile}), nil,
			"--tls-cert-file is set without --tls-key-file"},
		{"a missing NATS nkey of the history role", slices.Concat(history, []string{"--nats-nkey", missing}), nil, "--nats-nkey: "},
		{"a history role's endpoints key without its certificate", slices.Concat(history, []string{"--tls-key-file", pair.KeyFile}), nil,
			"--tls-key-file is set without --tls-cert-file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cmd := newRootCommand()
			cmd.SetArgs(tt.args)
			err := cmd.Execute()
			if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err %v (exit %d), want exit 1 and %q", err, exitCode(err), tt.says)
			}
			if strings.Contains(err.Error(), "BEGIN") {
				t.Errorf("the error quotes a file: %v", err)
			}
		})
	}
}
