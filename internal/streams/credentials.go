package streams

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/jobscheduler/scheduler/internal/tlsfiles"
)

// ConnectOptions say how a role proves itself to NATS and checks the
// server, beyond what its URL says. Errors name each field by its flag of
// `scheduler serve`. The zero value connects as the URL says.
type ConnectOptions struct {
	// CredsFile (--nats-creds) holds a user JWT and its nkey seed, as nsc
	// writes them, for a server in operator mode. It is read at each
	// connection, so a renewed file is used from the next reconnection.
	// Defaults to none.
	CredsFile string
	// NkeyFile (--nats-nkey) holds the seed of a user nkey the server
	// lists. Defaults to none.
	NkeyFile string
	// CAFile (--nats-ca-file) holds the PEM certificate authorities that
	// verify the server's certificate; setting it requires TLS. Defaults to
	// the system's authorities, for a tls:// URL.
	CAFile string
	// CertFile (--nats-cert-file) and KeyFile (--nats-key-file) are a
	// client certificate and its key, for a server that verifies its
	// clients; they are read again when they change, and setting them
	// requires TLS. Defaults to none.
	CertFile, KeyFile string
}

// natsOptions loads the files and returns the connection options they
// make. A file that does not load fails here, naming its flag.
func (o ConnectOptions) natsOptions(log *slog.Logger) ([]nats.Option, error) {
	var opts []nats.Option
	if o.CredsFile != "" && o.NkeyFile != "" {
		return nil, errors.New("--nats-creds and --nats-nkey both name a user: give one")
	}
	if o.CredsFile != "" {
		if err := checkCreds(o.CredsFile); err != nil {
			return nil, err
		}
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.NkeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey: %w", err)
		}
		opts = append(opts, opt)
	}
	pair, err := tlsfiles.LoadOptionalKeyPair(tlsfiles.Config{
		CertFile: o.CertFile, KeyFile: o.KeyFile, CertFlag: "--nats-cert-file", KeyFlag: "--nats-key-file", Logger: log,
	})
	if err != nil {
		return nil, err
	}
	if o.CAFile == "" && pair == nil {
		return opts, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		if cfg.RootCAs, err = tlsfiles.LoadCAs(o.CAFile, "--nats-ca-file"); err != nil {
			return nil, err
		}
	}
	if pair != nil {
		cfg.GetClientCertificate = pair.GetClientCertificate
	}
	return append(opts, nats.Secure(cfg)), nil
}

// checkCreds reads a credentials file once, so that one missing or
// without a user's JWT and seed fails at start rather than at each
// connection attempt.
func checkCreds(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--nats-creds: %w", err)
	}
	defer clear(data)
	if jwt, _ := nkeys.ParseDecoratedJWT(data); strings.Count(jwt, ".") != 2 {
		return errors.New("--nats-creds holds no user JWT: give the file nsc writes (nsc generate creds)")
	}
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return fmt.Errorf("--nats-creds holds no user nkey seed: %w", err)
	}
	kp.Wipe()
	return nil
}
