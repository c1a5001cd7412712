package streams

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// connectAndPut connects as a role would and stores a KV value; it returns
// the connection's error, if any, and the logs.
func connectAndPut(t *testing.T, url string, opts ConnectOptions) (*testkit.Logs, error) {
	t.Helper()
	var logs testkit.Logs
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, js, err := Connect(ctx, url, "test", logs.Logger(), opts)
	if err != nil {
		return &logs, err
	}
	defer nc.Close()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "test"})
	if err != nil {
		t.Fatalf("creating a bucket: %v", err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("put: %v", err)
	}
	return &logs, nil
}

func TestConnectOverMutualTLS(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	ns := testkit.NATSWith(t, server.Options{TLSConfig: ca.ServerTLS(t, true), TLSVerify: true, TLSTimeout: 5})
	client := ca.Client(t, "planner")
	t.Run("with the CA and a client certificate the role does its work", func(t *testing.T) {
		t.Parallel()
		if logs, err := connectAndPut(t, ns.ClientURL(), ConnectOptions{CAFile: ca.File, CertFile: client.CertFile, KeyFile: client.KeyFile}); err != nil {
			t.Fatalf("%v\n%s", err, logs.String())
		}
	})
	t.Run("without a client certificate the server's refusal fails at once", func(t *testing.T) {
		t.Parallel()
		logs, err := connectAndPut(t, ns.ClientURL(), ConnectOptions{CAFile: ca.File})
		// The server's alert, or, when the first write meets the closed
		// connection before the alert is read, its closing.
		if err == nil || !strings.Contains(err.Error(), "certificate required") && !strings.Contains(err.Error(), "refused this role's client certificate") {
			t.Fatalf("err %v, want the server's refusal of a connection without a certificate", err)
		}
		if logs.Contains("not available yet") {
			t.Errorf("a refused certificate was waited out as if the server were down:\n%s", logs.String())
		}
	})
	t.Run("a server the CA did not sign is refused", func(t *testing.T) {
		t.Parallel()
		other := testkit.NewCA(t)
		_, err := connectAndPut(t, ns.ClientURL(), ConnectOptions{CAFile: other.File, CertFile: client.CertFile, KeyFile: client.KeyFile})
		if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
			t.Fatalf("err %v, want an unknown authority", err)
		}
	})
}

func TestConnectAsAnNkeyUser(t *testing.T) {
	t.Parallel()
	public, seedFile := testkit.NkeyUser(t)
	ns := testkit.NATSWith(t, server.Options{Nkeys: []*server.NkeyUser{{Nkey: public}}})
	if logs, err := connectAndPut(t, ns.ClientURL(), ConnectOptions{NkeyFile: seedFile}); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	_, stranger := testkit.NkeyUser(t)
	_, err := connectAndPut(t, ns.ClientURL(), ConnectOptions{NkeyFile: stranger})
	if err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("an unknown nkey: %v", err)
	}
}

func TestConnectWithACredentialsFile(t *testing.T) {
	t.Parallel()
	opts, creds := testkit.NATSOperator(t)
	ns := testkit.NATSWith(t, opts)
	if logs, err := connectAndPut(t, ns.ClientURL(), ConnectOptions{CredsFile: creds}); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	_, err := connectAndPut(t, ns.ClientURL(), ConnectOptions{})
	if err == nil {
		t.Fatal("a server in operator mode took a connection without credentials")
	}
}

func TestConnectOptionsThatDoNotLoadNameTheirFlag(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	client := ca.Client(t, "c")
	_, seedFile := testkit.NkeyUser(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	seedOnly := filepath.Join(dir, "seed-only.creds")
	seed, err := os.ReadFile(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seedOnly, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		opts ConnectOptions
		says string
	}{
		{"a creds file and an nkey", ConnectOptions{CredsFile: seedOnly, NkeyFile: seedFile}, "--nats-creds and --nats-nkey both name a user"},
		{"a missing creds file", ConnectOptions{CredsFile: missing}, "--nats-creds: open"},
		{"a creds file without a JWT", ConnectOptions{CredsFile: seedOnly}, "--nats-creds holds no user JWT"},
		{"a missing nkey file", ConnectOptions{NkeyFile: missing}, "--nats-nkey: "},
		{"a missing CA file", ConnectOptions{CAFile: missing}, "--nats-ca-file: open"},
		{"a client certificate without its key", ConnectOptions{CertFile: client.CertFile}, "--nats-cert-file is set without --nats-key-file"},
		{"a missing client key", ConnectOptions{CertFile: client.CertFile, KeyFile: missing}, "--nats-key-file: open"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// No server listens: the options fail before any attempt.
			_, _, err := Connect(context.Background(), "nats://127.0.0.1:1", "test", nil, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err %v, want %q", err, tt.says)
			}
			if strings.Contains(err.Error(), string(seed[:8])) {
				t.Errorf("the error quotes the seed: %v", err)
			}
		})
	}
}
