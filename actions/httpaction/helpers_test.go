package httpaction_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/contracts"
)

// setup returns a Sender built from cfg, closed when the test ends.
func setup(t *testing.T, cfg httpaction.Config) *httpaction.Sender {
	t.Helper()
	s, err := httpaction.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// attempt returns the attempt the tests send, with every field set.
func attempt() actions.Attempt {
	return actions.Attempt{
		ID:          "0123456789abcdef0123456789abcdef",
		Job:         contracts.JobRef{Subscription: "sub1", ResourceGroup: "rg1", Collection: "jc1", Job: "job1"},
		ActionName:  contracts.MainAction,
		Expected:    time.Date(2024, 5, 6, 7, 8, 9, 500_000_000, time.UTC),
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	}
}

// httpAction returns a GET action of type Http or Https (by the URI's
// scheme) to uri.
func httpAction(uri string) *contracts.JobAction {
	t := contracts.ActionHTTP
	if strings.HasPrefix(uri, "https:") {
		t = contracts.ActionHTTPS
	}
	return &contracts.JobAction{Type: t, Request: &contracts.HTTPRequest{URI: uri, Method: http.MethodGet}}
}

// send performs a with s and asserts that no secret of the action (nor any
// access token the test token endpoint issues) appears in the outcome.
func send(t *testing.T, s *httpaction.Sender, ctx context.Context, a *contracts.JobAction, at actions.Attempt) actions.Outcome {
	t.Helper()
	o := s.Send(ctx, a, at)
	assertNoSecrets(t, o, actionSecrets(a)...)
	return o
}

// actionSecrets returns every secret a carries, and the forms in which it
// goes on the wire.
func actionSecrets(a *contracts.JobAction) []string {
	var secrets []string
	for n := 1; n <= 10; n++ {
		secrets = append(secrets, tokenFor(n))
	}
	if a == nil || a.Request == nil {
		return secrets
	}
	if u, err := url.Parse(a.Request.URI); err == nil {
		if password, ok := u.User.Password(); ok {
			secrets = append(secrets, password, base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+password)))
		}
	}
	if auth := a.Request.Authentication; auth != nil {
		secrets = append(secrets, auth.Password, auth.Pfx, auth.Secret)
		if auth.Password != "" {
			secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte(auth.Username+":"+auth.Password)))
		}
	}
	return secrets
}

// assertNoSecrets fails the test if any of the secrets appears in any
// field of o.
func assertNoSecrets(t *testing.T, o actions.Outcome, secrets ...string) {
	t.Helper()
	fields := map[string]string{"Message": o.Message, "Response": o.Response, "Error": o.Error}
	for name, value := range fields {
		for _, secret := range secrets {
			if secret != "" && strings.Contains(value, secret) {
				t.Errorf("Outcome.%s holds the secret %q: %q", name, secret, value)
			}
		}
	}
}

// recorded is a request a target received.
type recorded struct {
	Method string
	Host   string
	Path   string
	Header http.Header
	Body   string
	// ClientCN is the common name of the client certificate, if any.
	ClientCN string
}

// target is a test server that records the requests it gets and counts
// the connections opened to it.
type target struct {
	*httptest.Server
	newConns atomic.Int32
	closed   atomic.Int32

	mu       sync.Mutex
	requests []recorded
}

// newTarget starts a plain HTTP target on loopback that records each
// request and then runs handler.
func newTarget(t *testing.T, handler http.HandlerFunc) *target {
	t.Helper()
	tg := &target{}
	tg.Server = httptest.NewUnstartedServer(tg.record(handler))
	tg.countConns()
	tg.Start()
	t.Cleanup(tg.Close)
	return tg
}

// newTLSTarget starts an HTTPS target on loopback with a certificate from
// the test authority. With requireClientCert, it refuses a client without
// a certificate from the test authority.
func newTLSTarget(t *testing.T, requireClientCert bool, handler http.HandlerFunc) *target {
	t.Helper()
	p := testPKI(t)
	tg := &target{}
	tg.Server = httptest.NewUnstartedServer(tg.record(handler))
	tg.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	if requireClientCert {
		tg.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		tg.TLS.ClientCAs = p.pool
	}
	// Refused handshakes are expected; keep them out of the test output.
	tg.Config.ErrorLog = log.New(io.Discard, "", 0)
	tg.countConns()
	tg.StartTLS()
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) countConns() {
	tg.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		switch state {
		case http.StateNew:
			tg.newConns.Add(1)
		case http.StateClosed:
			tg.closed.Add(1)
		}
	}
}

func (tg *target) record(handler http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := recorded{Method: r.Method, Host: r.Host, Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body)}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			rec.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		tg.mu.Lock()
		tg.requests = append(tg.requests, rec)
		tg.mu.Unlock()
		if handler != nil {
			handler(w, r)
		}
	}
}

// received returns the requests the target got so far.
func (tg *target) received() []recorded {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]recorded(nil), tg.requests...)
}

// last returns the last request the target got, failing the test if
// there is none.
func (tg *target) last(t *testing.T) recorded {
	t.Helper()
	reqs := tg.received()
	if len(reqs) == 0 {
		t.Fatal("the target received no request")
	}
	return reqs[len(reqs)-1]
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, not a wait for time to pass
	}
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// pki is a test certificate authority with a server certificate for
// loopback and a client certificate.
type pki struct {
	pool       *x509.CertPool
	ca         *x509.Certificate
	server     tls.Certificate
	clientCert *x509.Certificate
	clientKey  *ecdsa.PrivateKey
}

var testPKIOnce = sync.OnceValues(newPKI)

func testPKI(t *testing.T) *pki {
	t.Helper()
	p, err := testPKIOnce()
	if err != nil {
		t.Fatalf("making test certificates: %v", err)
	}
	return p
}

func newPKI() (*pki, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Test Authority"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}, ca, &serverKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}

	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	clientDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "scheduler-client"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, &clientKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	clientCert, err := x509.ParseCertificate(clientDER)
	if err != nil {
		return nil, err
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &pki{
		pool:       pool,
		ca:         ca,
		server:     tls.Certificate{Certificate: [][]byte{serverDER, caDER}, PrivateKey: serverKey},
		clientCert: clientCert,
		clientKey:  clientKey,
	}, nil
}

// pfx returns the client certificate, its key and the authority as a
// base64 PFX file protected by password.
func (p *pki) pfx(t *testing.T, password string) string {
	t.Helper()
	der, err := pkcs12.Modern.Encode(p.clientKey, p.clientCert, []*x509.Certificate{p.ca}, password)
	if err != nil {
		t.Fatalf("encoding the PFX: %v", err)
	}
	return base64.StdEncoding.EncodeToString(der)
}
