package testkit

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority of the test's own: it issues server
// certificates for 127.0.0.1, ::1 and localhost, and client certificates,
// all written as PEM files under the test's temporary directory.
type CA struct {
	// File holds the CA's certificate (PEM), for a --*-ca-file flag.
	File string
	// Pool trusts the CA.
	Pool *x509.CertPool

	cert   *x509.Certificate
	key    crypto.Signer
	dir    string
	serial atomic.Int64
}

// Issued is a certificate the CA issued and its files.
type Issued struct {
	// CertFile and KeyFile hold the certificate and its private key (PEM).
	CertFile, KeyFile string
	// Leaf is the certificate.
	Leaf *x509.Certificate
}

// NewCA makes a CA and writes its certificate to a file.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	ca := &CA{key: key, dir: t.TempDir()}
	tmpl := ca.template("test CA " + randomHex(4))
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("making the CA: %v", err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	ca.File = filepath.Join(ca.dir, "ca.pem")
	writePEM(t, ca.File, "CERTIFICATE", der)
	ca.Pool = x509.NewCertPool()
	ca.Pool.AddCert(ca.cert)
	return ca
}

// Server issues a server certificate for 127.0.0.1, ::1 and localhost,
// in new files.
func (ca *CA) Server(t testing.TB) Issued {
	t.Helper()
	n := randomHex(4)
	return ca.WriteServer(t, filepath.Join(ca.dir, "server-"+n+".pem"), filepath.Join(ca.dir, "server-"+n+".key"))
}

// WriteServer issues a new server certificate into the files named,
// replacing what they held.
func (ca *CA) WriteServer(t testing.TB, certFile, keyFile string) Issued {
	t.Helper()
	tmpl := ca.template("localhost")
	tmpl.DNSNames = []string{"localhost"}
	tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.issue(t, tmpl, certFile, keyFile)
}

// Client issues a client certificate for name, in new files.
func (ca *CA) Client(t testing.TB, name string) Issued {
	t.Helper()
	n := randomHex(4)
	tmpl := ca.template(name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(t, tmpl, filepath.Join(ca.dir, "client-"+n+".pem"), filepath.Join(ca.dir, "client-"+n+".key"))
}

// ServerTLS returns a server configuration presenting a new server
// certificate; with verifyClients it demands a client certificate the CA
// issued.
func (ca *CA) ServerTLS(t testing.TB, verifyClients bool) *tls.Config {
	t.Helper()
	issued := ca.Server(t)
	pair, err := tls.LoadX509KeyPair(issued.CertFile, issued.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if verifyClients {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool
	}
	return cfg
}

func (ca *CA) template(cn string) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial.Add(1)),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

func (ca *CA) issue(t testing.TB, tmpl *x509.Certificate, certFile, keyFile string) Issued {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatalf("issuing a certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// The key first: a reader that sees the new certificate finds its key.
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	writePEM(t, certFile, "CERTIFICATE", der)
	return Issued{CertFile: certFile, KeyFile: keyFile, Leaf: leaf}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// writePEM replaces file with one PEM block at once (a new file renamed
// over it), so that a reader never sees it half written.
func writePEM(t testing.TB, file, kind string, der []byte) {
	t.Helper()
	tmp := file + ".new"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}
