package service

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// tlsClient trusts only ca's pool and opens a new connection, so a new
// handshake, for every request.
func tlsClient(ca *testkit.CA) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, DisableKeepAlives: true,
	}}
}

func TestPlannerServesTheAPIOverTLS(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	mr := miniredis.RunT(t)
	ca := testkit.NewCA(t)
	first := ca.Server(t)
	var logs testkit.Logs
	svc, err := Start(context.Background(), Config{
		NATSURL: ns.ClientURL(), RedisURL: "redis://" + mr.Addr(), Listen: "127.0.0.1:0",
		TLSCertFile: first.CertFile, TLSKeyFile: first.KeyFile,
		EncryptionKey: make([]byte, 32), Logger: logs.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	if !strings.HasPrefix(svc.URL(), "https://") || !logs.Contains("planner started", "api=https://"+svc.Addr()) {
		t.Errorf("the start is not logged with https:// (URL %s):\n%s", svc.URL(), logs.String())
	}
	client := tlsClient(ca)
	presented := func() (serial string, code int) {
		t.Helper()
		res, err := client.Get(svc.URL() + "/healthz")
		if err != nil {
			t.Fatalf("GET /healthz over TLS: %v", err)
		}
		defer res.Body.Close()
		return res.TLS.PeerCertificates[0].SerialNumber.String(), res.StatusCode
	}

	t.Run("a client trusting the CA is served", func(t *testing.T) {
		if serial, code := presented(); code != http.StatusOK || serial != first.Leaf.SerialNumber.String() {
			t.Fatalf("/healthz: %d with certificate %s, want 200 with %s", code, serial, first.Leaf.SerialNumber)
		}
	})
	t.Run("plain HTTP is not served", func(t *testing.T) {
		res, err := http.Get("http://" + svc.Addr() + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				t.Fatal("plain HTTP got 200")
			}
		}
	})
	t.Run("a renewed certificate is presented to new connections", func(t *testing.T) {
		renewed := ca.WriteServer(t, first.CertFile, first.KeyFile)
		testkit.Eventually(t, 15*time.Second, func() bool {
			serial, code := presented()
			return code == http.StatusOK && serial == renewed.Leaf.SerialNumber.String()
		}, "the renewed certificate %s was never presented", renewed.Leaf.SerialNumber)
	})
}

func TestPlannerConnectsToRedisOverTLS(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	ca := testkit.NewCA(t)
	start := func(t *testing.T, serverTLS *tls.Config, cluster bool, redisTLS RedisTLS) (*Service, error) {
		t.Helper()
		mr := miniredis.NewMiniRedis()
		if err := mr.StartTLS(serverTLS); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(mr.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		svc, err := Start(ctx, Config{
			NATSURL: ns.ClientURL(), RedisURL: "rediss://" + mr.Addr(), RedisCluster: cluster, RedisTLS: redisTLS,
			RedisPrefix: "test-" + t.Name(), Listen: "127.0.0.1:0", EncryptionKey: make([]byte, 32), Logger: slog.New(slog.DiscardHandler),
		})
		if err == nil {
			t.Cleanup(func() { svc.Stop(context.Background()) })
		}
		return svc, err
	}
	client := ca.Client(t, "planner")
	for _, tt := range []struct {
		name          string
		verifyClients bool
		cluster       bool
		files         RedisTLS
		says          string // the error; "" for a planner that becomes ready
	}{
		{name: "with the CA of the server", files: RedisTLS{CAFile: ca.File}},
		{name: "without the CA the server's certificate is refused at once", says: "certificate signed by unknown authority"},
		{name: "with a client certificate for a server that verifies clients", verifyClients: true,
			files: RedisTLS{CAFile: ca.File, CertFile: client.CertFile, KeyFile: client.KeyFile}},
		{name: "without a client certificate the server's refusal fails at once", verifyClients: true,
			files: RedisTLS{CAFile: ca.File}, says: "certificate required"},
		{name: "a Redis Cluster with the CA", cluster: true, files: RedisTLS{CAFile: ca.File}},
		{name: "a Redis Cluster without the CA", cluster: true, says: "certificate signed by unknown authority"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc, err := start(t, ca.ServerTLS(t, tt.verifyClients), tt.cluster, tt.files)
			if tt.says != "" {
				if err == nil || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("err %v, want %q", err, tt.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 10*time.Second, func() bool {
				code, _ := testkit.Call(t, "GET", svc.URL()+"/readyz", "")
				return code == http.StatusOK
			}, "never ready")
		})
	}
}

func TestPlannerRejectsIncompleteTLSSettings(t *testing.T) {
	t.Parallel()
	base := Config{NATSURL: "nats://127.0.0.1:1", RedisURL: "redis://127.0.0.1:1", EncryptionKey: make([]byte, 32)}
	for _, tt := range []struct {
		name string
		edit func(c *Config)
		says string
	}{
		{"a certificate without its key", func(c *Config) { c.TLSCertFile = "cert.pem" }, "--tls-cert-file is set without --tls-key-file"},
		{"a key without its certificate", func(c *Config) { c.TLSKeyFile = "key.pem" }, "--tls-key-file is set without --tls-cert-file"},
		{"a missing certificate file", func(c *Config) { c.TLSCertFile, c.TLSKeyFile = "missing.pem", "missing.key" }, "--tls-cert-file: open missing.pem"},
		{"a Redis CA for a redis:// URL", func(c *Config) { c.RedisTLS.CAFile = "ca.pem" }, "the Redis URL must start with rediss://"},
		{"a Redis client certificate without its key", func(c *Config) { c.RedisURL, c.RedisTLS.CertFile = "rediss://127.0.0.1:1", "c.pem" }, "--redis-cert-file is set without --redis-key-file"},
		{"a missing Redis CA", func(c *Config) { c.RedisURL, c.RedisTLS.CAFile = "rediss://127.0.0.1:1", "missing.pem" }, "--redis-ca-file: open missing.pem"},
		{"a missing NATS CA", func(c *Config) { c.NATS.CAFile = "missing.pem" }, "--nats-ca-file: open missing.pem"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := base
			tt.edit(&cfg)
			// No server answers: the settings fail before any wait.
			_, err := Start(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err %v, want %q", err, tt.says)
			}
		})
	}
}
