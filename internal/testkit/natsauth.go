package testkit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// NATSWith starts an embedded NATS server with JetStream and the options
// given (TLS, users, an operator), on a free loopback port with its store
// in a temporary directory unless opts says otherwise, and shuts it down
// when the test ends.
func NATSWith(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port == 0 {
		opts.Port = -1
	}
	if opts.StoreDir == "" {
		opts.StoreDir = t.TempDir()
	}
	opts.JetStream, opts.NoLog, opts.NoSigs = true, true, true
	ns, err := server.NewServer(&opts)
	if err != nil {
		t.Fatalf("starting NATS: %v", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not become ready")
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// NkeyUser makes a user nkey: its public key, for the server's
// Options.Nkeys, and a file holding its seed.
func NkeyUser(t testing.TB) (public, seedFile string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	if public, err = kp.PublicKey(); err != nil {
		t.Fatal(err)
	}
	seed, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	seedFile = filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return public, seedFile
}

// NATSOperator returns the options of a server in operator mode with one
// account (JetStream allowed) in a memory resolver, and the credentials
// file of a user of that account; add them to NATSWith's options.
func NATSOperator(t testing.TB) (opts server.Options, credsFile string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("operator mode: %v", err)
		}
	}
	operator, err := nkeys.CreateOperator()
	must(err)
	operatorPub, err := operator.PublicKey()
	must(err)
	resolver := &server.MemAccResolver{}
	newAccount := func(jetStream bool) (nkeys.KeyPair, string) {
		t.Helper()
		kp, err := nkeys.CreateAccount()
		must(err)
		pub, err := kp.PublicKey()
		must(err)
		ac := jwt.NewAccountClaims(pub)
		if jetStream {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		token, err := ac.Encode(operator)
		must(err)
		must(resolver.Store(pub, token))
		return kp, pub
	}
	// JetStream needs the system account.
	_, system := newAccount(false)
	oc := jwt.NewOperatorClaims(operatorPub)
	oc.SystemAccount = system
	_, err = oc.Encode(operator)
	must(err)
	account, _ := newAccount(true)

	user, err := nkeys.CreateUser()
	must(err)
	userPub, err := user.PublicKey()
	must(err)
	userSeed, err := user.Seed()
	must(err)
	userJWT, err := jwt.NewUserClaims(userPub).Encode(account)
	must(err)
	creds, err := jwt.FormatUserConfig(userJWT, userSeed)
	must(err)
	credsFile = filepath.Join(t.TempDir(), "user.creds")
	must(os.WriteFile(credsFile, creds, 0o600))
	return server.Options{TrustedOperators: []*jwt.OperatorClaims{oc}, AccountResolver: resolver, SystemAccount: system}, credsFile
}
