package service

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"strings"

	"github.com/jobscheduler/scheduler/internal/tlsfiles"
)

// RedisTLS names the files of the planner's TLS to Redis, used with a
// rediss:// URL (one server or a Redis Cluster).
type RedisTLS struct {
	// CAFile (--redis-ca-file) holds the PEM certificate authorities that
	// verify the server. Defaults to the system's authorities.
	CAFile string
	// CertFile (--redis-cert-file) and KeyFile (--redis-key-file) are a
	// client certificate and its key, for a server that verifies its
	// clients (tls-auth-clients), read again when they change. Both or
	// neither. Defaults to none.
	CertFile, KeyFile string
}

func (r RedisTLS) pair() tlsfiles.Config {
	return tlsfiles.Config{CertFile: r.CertFile, KeyFile: r.KeyFile, CertFlag: "--redis-cert-file", KeyFlag: "--redis-key-file"}
}

// check rejects a certificate without its key, and files given for a URL
// that asks for no TLS.
func (r RedisTLS) check(url string) error {
	if err := tlsfiles.CheckBoth(r.pair()); err != nil {
		return err
	}
	if r == (RedisTLS{}) || url == "" || strings.HasPrefix(strings.ToLower(url), "rediss://") {
		return nil
	}
	return errors.New("--redis-ca-file, --redis-cert-file and --redis-key-file are for TLS: the Redis URL must start with rediss://")
}

// redisTLSFiles are the loaded files; nil when none were given.
type redisTLSFiles struct {
	roots *x509.CertPool    // nil: the system's
	pair  *tlsfiles.KeyPair // nil: no client certificate
}

// load reads the files.
func (r RedisTLS) load(log *slog.Logger) (*redisTLSFiles, error) {
	if r == (RedisTLS{}) {
		return nil, nil
	}
	f := &redisTLSFiles{}
	var err error
	if r.CAFile != "" {
		if f.roots, err = tlsfiles.LoadCAs(r.CAFile, "--redis-ca-file"); err != nil {
			return nil, err
		}
	}
	pair := r.pair()
	pair.Logger = log
	if f.pair, err = tlsfiles.LoadOptionalKeyPair(pair); err != nil {
		return nil, err
	}
	return f, nil
}

// apply adds the files to the TLS configuration go-redis made of a
// rediss:// URL (nil for redis://, which check ruled out).
func (f *redisTLSFiles) apply(c *tls.Config) {
	if f == nil || c == nil {
		return
	}
	c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	if f.roots != nil {
		c.RootCAs = f.roots
	}
	if f.pair != nil {
		c.GetClientCertificate = f.pair.GetClientCertificate
	}
}
