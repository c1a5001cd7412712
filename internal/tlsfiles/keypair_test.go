package tlsfiles

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

type bundle struct {
	ca    *testkit.CA
	first testkit.Issued
	clock *testkit.Clock
	logs  *testkit.Logs
}

func setup(t *testing.T) (*KeyPair, bundle) {
	t.Helper()
	b := bundle{ca: testkit.NewCA(t), clock: testkit.NewClock(time.Unix(1_700_000_000, 0)), logs: &testkit.Logs{}}
	b.first = b.ca.Server(t)
	k, err := LoadKeyPair(Config{CertFile: b.first.CertFile, KeyFile: b.first.KeyFile, CertFlag: "--cert", KeyFlag: "--key",
		Now: b.clock.Now, Logger: b.logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	return k, b
}

func serial(c *tls.Certificate) string { return c.Leaf.SerialNumber.String() }

func TestKeyPairReloadsChangedFiles(t *testing.T) {
	t.Parallel()
	t.Run("a changed pair is served once the interval has passed", func(t *testing.T) {
		t.Parallel()
		k, b := setup(t)
		if got := serial(k.Certificate()); got != b.first.Leaf.SerialNumber.String() {
			t.Fatalf("serving %s, want the first certificate", got)
		}
		second := b.ca.WriteServer(t, b.first.CertFile, b.first.KeyFile)
		b.clock.Advance(CheckInterval / 2)
		if got := serial(k.Certificate()); got != b.first.Leaf.SerialNumber.String() {
			t.Fatalf("the files were read again before the interval passed: serving %s", got)
		}
		b.clock.Advance(CheckInterval)
		if got := serial(k.Certificate()); got != second.Leaf.SerialNumber.String() {
			t.Fatalf("serving %s, want the new certificate %s", got, second.Leaf.SerialNumber)
		}
		if !b.logs.Contains("loaded a changed certificate", "--cert") {
			t.Errorf("the reload was not logged:\n%s", b.logs.String())
		}
	})
	t.Run("a broken pair is logged and the one in use kept", func(t *testing.T) {
		t.Parallel()
		k, b := setup(t)
		other := b.ca.Server(t)
		key, err := os.ReadFile(other.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b.first.KeyFile, key, 0o600); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(CheckInterval)
		if got := serial(k.Certificate()); got != b.first.Leaf.SerialNumber.String() {
			t.Fatalf("serving %s after a key of another certificate, want the first", got)
		}
		if !b.logs.Contains("level=WARN", "does not load; keeping the one in use", "--cert and --key") {
			t.Fatalf("the broken pair was not logged:\n%s", b.logs.String())
		}
		if strings.Contains(b.logs.String(), "PRIVATE KEY") || strings.Contains(b.logs.String(), string(key[30:60])) {
			t.Errorf("the log quotes the key:\n%s", b.logs.String())
		}
		// The whole new pair then loads.
		third := b.ca.WriteServer(t, b.first.CertFile, b.first.KeyFile)
		b.clock.Advance(CheckInterval)
		if got := serial(k.Certificate()); got != third.Leaf.SerialNumber.String() {
			t.Fatalf("serving %s, want the repaired pair's %s", got, third.Leaf.SerialNumber)
		}
	})
	t.Run("a removed file keeps the pair in use", func(t *testing.T) {
		t.Parallel()
		k, b := setup(t)
		if err := os.Remove(b.first.CertFile); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(CheckInterval)
		if got := serial(k.Certificate()); got != b.first.Leaf.SerialNumber.String() {
			t.Fatalf("serving %s, want the first", got)
		}
		if !b.logs.Contains("level=WARN", "--cert: open") {
			t.Fatalf("the missing file was not logged:\n%s", b.logs.String())
		}
	})
}

// New handshakes of a listener present the renewed certificate.
func TestListenerServesTheRenewedCertificate(t *testing.T) {
	t.Parallel()
	k, b := setup(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l = k.Listener(l)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	presented := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: b.ca.Pool, ServerName: "localhost"})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer c.Close()
		if v := c.ConnectionState().Version; v < tls.VersionTLS12 {
			t.Errorf("TLS version %x, want 1.2 or later", v)
		}
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if got := presented(); got != b.first.Leaf.SerialNumber.String() {
		t.Fatalf("presented %s, want the first certificate", got)
	}
	second := b.ca.WriteServer(t, b.first.CertFile, b.first.KeyFile)
	b.clock.Advance(CheckInterval)
	if got := presented(); got != second.Leaf.SerialNumber.String() {
		t.Fatalf("presented %s, want the renewed %s", got, second.Leaf.SerialNumber)
	}
	if _, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: b.ca.Pool, ServerName: "localhost", MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("a TLS 1.1 handshake succeeded")
	}
}

func TestLoadingErrorsNameTheFlag(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	pair := ca.Server(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := ca.Server(t)
	for _, tt := range []struct {
		name      string
		cert, key string
		says      string
	}{
		{"a missing certificate", missing, pair.KeyFile, "--tls-cert-file: open"},
		{"a missing key", pair.CertFile, missing, "--tls-key-file: open"},
		{"a certificate file without a certificate", garbage, pair.KeyFile, "--tls-cert-file holds no PEM certificate"},
		{"a key file without a key", pair.CertFile, garbage, "--tls-cert-file and --tls-key-file are not a certificate and its key"},
		{"the key of another certificate", pair.CertFile, other.KeyFile, "--tls-cert-file and --tls-key-file are not a certificate and its key"},
		{"a certificate without its key", pair.CertFile, "", "--tls-cert-file is set without --tls-key-file"},
		{"a key without its certificate", "", pair.KeyFile, "--tls-key-file is set without --tls-cert-file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadOptionalKeyPair(Config{CertFile: tt.cert, KeyFile: tt.key, CertFlag: "--tls-cert-file", KeyFlag: "--tls-key-file"})
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err %v, want %q", err, tt.says)
			}
			if strings.Contains(err.Error(), "BEGIN") {
				t.Errorf("the error quotes a file: %v", err)
			}
		})
	}
	t.Run("neither file is no pair", func(t *testing.T) {
		k, err := LoadOptionalKeyPair(Config{})
		if k != nil || err != nil {
			t.Fatalf("%v, %v", k, err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if k.Listener(l) != l {
			t.Error("a nil pair wrapped the listener")
		}
	})
}

func TestLoadCAs(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	pool, err := LoadCAs(ca.File, "--ca")
	if err != nil {
		t.Fatal(err)
	}
	if !pool.Equal(ca.Pool) {
		t.Error("the pool is not the CA's")
	}
	if _, err := LoadCAs(filepath.Join(t.TempDir(), "none"), "--ca"); err == nil || !strings.HasPrefix(err.Error(), "--ca: open") {
		t.Errorf("a missing file: %v", err)
	}
	garbage := filepath.Join(t.TempDir(), "garbage")
	if err := os.WriteFile(garbage, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCAs(garbage, "--ca"); err == nil || err.Error() != "--ca holds no PEM certificate" {
		t.Errorf("a file without certificates: %v", err)
	}
}
