package tlsfiles

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// CheckInterval is how often, at most, a KeyPair looks at its files: a
// handshake looks when this long has passed since the last look, so a
// renewed certificate is served within this long of the first handshake
// after the change.
const CheckInterval = 2 * time.Second

// Config names a certificate and its key.
type Config struct {
	// CertFile holds the PEM certificate, followed by its intermediates.
	// Required.
	CertFile string
	// KeyFile holds the certificate's PEM private key. Required.
	KeyFile string
	// CertFlag and KeyFlag name the settings that gave the files, in
	// errors and logs. Default to "the certificate file" and "the key
	// file".
	CertFlag, KeyFlag string
	// Interval is the least time between two looks at the files. Defaults
	// to CheckInterval.
	Interval time.Duration
	// Now is the clock that times the looks. Defaults to time.Now.
	Now func() time.Time
	// Logger reports a new pair loaded, or one that does not load.
	// Defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.CertFlag = cmp.Or(c.CertFlag, "the certificate file")
	c.KeyFlag = cmp.Or(c.KeyFlag, "the key file")
	c.Interval = cmp.Or(c.Interval, CheckInterval)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// KeyPair is a certificate and its key kept in files, read again when they
// change: a changed pair that loads replaces the one in use for the
// handshakes that follow; one that does not load (half written, a key of
// another certificate) is logged and the one in use is kept. Its methods
// are safe for concurrent use.
type KeyPair struct {
	cfg  Config
	cert atomic.Pointer[tls.Certificate]
	next atomic.Int64 // Unix nanoseconds of the next look at the files
	// looking is held during a look; a handshake that finds it held does
	// not wait, and uses the pair in use.
	looking sync.Mutex
	seen    [sha256.Size]byte // digest of the files as last read
}

// LoadKeyPair reads the pair. An error names the setting of the file that
// is missing or wrong.
func LoadKeyPair(cfg Config) (*KeyPair, error) {
	cfg = cfg.withDefaults()
	k := &KeyPair{cfg: cfg}
	certPEM, keyPEM, err := k.read()
	if err != nil {
		return nil, err
	}
	cert, err := k.parse(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	k.cert.Store(cert)
	k.seen = digest(certPEM, keyPEM)
	k.next.Store(cfg.Now().Add(cfg.Interval).UnixNano())
	return k, nil
}

// LoadOptionalKeyPair is LoadKeyPair for a pair that may be left out: with
// neither file named it returns nil; with only one, an error naming the
// other.
func LoadOptionalKeyPair(cfg Config) (*KeyPair, error) {
	if err := CheckBoth(cfg); err != nil || cfg.CertFile == "" {
		return nil, err
	}
	return LoadKeyPair(cfg)
}

// Serving names the certificate and key a role serves its endpoints
// with, given by its flags --tls-cert-file and --tls-key-file.
func Serving(certFile, keyFile string, log *slog.Logger) Config {
	return Config{CertFile: certFile, KeyFile: keyFile, CertFlag: "--tls-cert-file", KeyFlag: "--tls-key-file", Logger: log}
}

// CheckBoth returns an error when cfg names a certificate without its key,
// or a key without its certificate.
func CheckBoth(cfg Config) error {
	cfg = cfg.withDefaults()
	switch {
	case cfg.CertFile != "" && cfg.KeyFile == "":
		return fmt.Errorf("%s is set without %s: give both, or neither", cfg.CertFlag, cfg.KeyFlag)
	case cfg.CertFile == "" && cfg.KeyFile != "":
		return fmt.Errorf("%s is set without %s: give both, or neither", cfg.KeyFlag, cfg.CertFlag)
	}
	return nil
}

// read returns the files' contents.
func (k *KeyPair) read() (certPEM, keyPEM []byte, err error) {
	if certPEM, err = os.ReadFile(k.cfg.CertFile); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", k.cfg.CertFlag, err)
	}
	if keyPEM, err = os.ReadFile(k.cfg.KeyFile); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", k.cfg.KeyFlag, err)
	}
	return certPEM, keyPEM, nil
}

// parse makes a certificate of the files' contents. Its errors are the
// standard library's, which never quote the key.
func (k *KeyPair) parse(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	if !bytes.Contains(certPEM, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("%s holds no PEM certificate", k.cfg.CertFlag)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s are not a certificate and its key: %w", k.cfg.CertFlag, k.cfg.KeyFlag, err)
	}
	return &cert, nil
}

func digest(certPEM, keyPEM []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write(certPEM)
	h.Write([]byte{0})
	h.Write(keyPEM)
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// Certificate returns the pair in use, after a look at the files when
// Interval has passed since the last.
func (k *KeyPair) Certificate() *tls.Certificate {
	now := k.cfg.Now()
	if now.UnixNano() >= k.next.Load() && k.looking.TryLock() {
		k.next.Store(now.Add(k.cfg.Interval).UnixNano())
		k.look()
		k.looking.Unlock()
	}
	return k.cert.Load()
}

// look reads the files and, when they changed since the last look, loads
// the pair they now hold or logs why it does not load.
func (k *KeyPair) look() {
	certPEM, keyPEM, err := k.read()
	var d [sha256.Size]byte
	if err == nil {
		d = digest(certPEM, keyPEM)
	} else {
		d = sha256.Sum256([]byte(err.Error()))
	}
	if d == k.seen {
		return
	}
	k.seen = d
	var cert *tls.Certificate
	if err == nil {
		cert, err = k.parse(certPEM, keyPEM)
	}
	if err != nil {
		k.cfg.Logger.Warn("the changed certificate does not load; keeping the one in use",
			slog.String("error", err.Error()))
		return
	}
	k.cert.Store(cert)
	attrs := []any{slog.String("certificate", k.cfg.CertFlag)}
	if cert.Leaf != nil {
		attrs = append(attrs, slog.String("subject", cert.Leaf.Subject.String()), slog.Time("not_after", cert.Leaf.NotAfter))
	}
	k.cfg.Logger.Info("loaded a changed certificate", attrs...)
}

// GetCertificate serves the pair, for tls.Config.GetCertificate.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.Certificate(), nil
}

// GetClientCertificate presents the pair, for
// tls.Config.GetClientCertificate.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.Certificate(), nil
}

// ServerConfig returns a server's configuration presenting the pair, with
// TLS 1.2 at least.
func (k *KeyPair) ServerConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: k.GetCertificate}
}

// Listener returns l serving TLS with the pair (see ServerConfig); a nil
// KeyPair returns l itself, so a server that may or may not have a
// certificate wraps its listener the same way.
func (k *KeyPair) Listener(l net.Listener) net.Listener {
	if k == nil {
		return l
	}
	return tls.NewListener(l, k.ServerConfig())
}

// LoadCAs reads a bundle of PEM certificate authorities from file; flag
// names the setting in errors.
func LoadCAs(file, flag string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, errors.New(flag + " holds no PEM certificate")
	}
	return pool, nil
}
