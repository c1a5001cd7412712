package httpaction

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
	"github.com/jobscheduler/scheduler/contracts"
)

// Headers the scheduler adds to every request. A user header of the same
// name is replaced, so that a job cannot pass off its own values as the
// scheduler's.
const (
	HeaderJobID                 = "x-ms-scheduler-jobid"
	HeaderJobCollectionID       = "x-ms-scheduler-jobcollectionid"
	HeaderExpectedExecutionTime = "x-ms-scheduler-expected-execution-time"
	HeaderExecutionTag          = "x-ms-scheduler-execution-tag"
	HeaderClientRequestID       = "x-ms-client-request-id"
	// HeaderIdempotencyKey carries the attempt id, the same on every
	// delivery of an attempt, so that a target can drop a duplicate.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderTraceParent carries the W3C trace context, when there is one.
	HeaderTraceParent = "traceparent"
)

// DefaultOAuthAuthority is the Azure AD authority ActiveDirectoryOAuth
// actions get their tokens from unless configured otherwise.
const DefaultOAuthAuthority = "https://login.microsoftonline.com"

// Config configures a Sender.
type Config struct {
	// AllowLoopback lets actions, and the token request to the OAuth
	// authority, reach loopback addresses (127.0.0.0/8 and ::1),
	// "localhost" among them. Defaults to false.
	AllowLoopback bool
	// AllowPrivate lets actions, and the token request to the OAuth
	// authority, reach private addresses (10.0.0.0/8, 172.16.0.0/12,
	// 192.168.0.0/16, 100.64.0.0/10, fc00::/7), for targets inside the
	// operator's network. Defaults to false.
	AllowPrivate bool
	// Resolver looks up the host names of targets and of the OAuth
	// authority. Defaults to net.DefaultResolver.
	Resolver netpolicy.Resolver
	// RootCAs are the authorities trusted for the certificates of targets
	// and of the OAuth authority. Defaults to the system roots.
	RootCAs *x509.CertPool
	// OAuthAuthority is the Azure AD authority that issues the tokens of
	// ActiveDirectoryOAuth actions, an absolute http or https URL.
	// Defaults to https://login.microsoftonline.com.
	OAuthAuthority string
	// Timeout bounds an attempt whose context has no deadline, and each
	// token request. Defaults to 60s, the original service's fixed
	// timeout.
	Timeout time.Duration
	// MaxIdleConnsPerHost is how many idle connections to one target each
	// transport keeps for reuse; a busy target may get thousands of calls a
	// second. Defaults to 256.
	MaxIdleConnsPerHost int
	// MaxClientCertificates is how many client certificates keep their own
	// transport (and its connections) for reuse; past it, the least
	// recently used is dropped. Defaults to 256.
	MaxClientCertificates int
	// Now returns the current time, for the token cache. Defaults to
	// time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.OAuthAuthority = cmp.Or(c.OAuthAuthority, DefaultOAuthAuthority)
	c.Timeout = cmp.Or(c.Timeout, 60*time.Second)
	c.MaxIdleConnsPerHost = cmp.Or(c.MaxIdleConnsPerHost, 256)
	c.MaxClientCertificates = cmp.Or(c.MaxClientCertificates, 256)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	u, err := url.Parse(c.OAuthAuthority)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("httpaction: Config.OAuthAuthority %q is not an absolute http or https URL such as %s", c.OAuthAuthority, DefaultOAuthAuthority)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("httpaction: Config.Timeout %s is negative", c.Timeout)
	}
	if c.MaxIdleConnsPerHost < 0 {
		return fmt.Errorf("httpaction: Config.MaxIdleConnsPerHost %d is negative", c.MaxIdleConnsPerHost)
	}
	if c.MaxClientCertificates < 0 {
		return fmt.Errorf("httpaction: Config.MaxClientCertificates %d is negative", c.MaxClientCertificates)
	}
	return nil
}

// Sender performs Http and Https actions. It is safe for concurrent use,
// and meant to be shared by every execution of a worker.
type Sender struct {
	cfg    Config
	dialer *netpolicy.Dialer
	// shared carries requests without a client certificate: without
	// authentication, Basic and OAuth.
	shared *http.Transport
	client *http.Client
	certs  *certCache
	tokens *tokenSource
}

var _ actions.Sender = (*Sender)(nil)

// New returns a Sender.
func New(cfg Config) (*Sender, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Sender{
		cfg: cfg,
		dialer: &netpolicy.Dialer{
			Policy:    netpolicy.Policy{AllowLoopback: cfg.AllowLoopback, AllowPrivate: cfg.AllowPrivate},
			Resolver:  cfg.Resolver,
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		},
	}
	base := &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	s.shared = s.newTransport(base.Clone())
	s.client = newClient(s.shared)
	s.certs = newCertCache(cfg.MaxClientCertificates, base, s.newTransport)
	s.tokens = newTokenSource(cfg.OAuthAuthority, newTokenClient(s.dialer, cfg.RootCAs), cfg.Timeout, cfg.Now)
	return s, nil
}

// newTransport returns a transport to targets: every connection it dials
// is checked by the address policy, and it never uses a proxy (a proxy
// would dial the target itself, out of the policy's sight).
func (s *Sender) newTransport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            s.dialer.DialContext,
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    10 * time.Second,
		ForceAttemptHTTP2:      true,
		MaxIdleConnsPerHost:    s.cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// newClient returns a client over t that does not follow redirects: a 3xx
// is the answer, so that neither the body nor credentials go to another
// host and the outcome says what the target said.
func newClient(t *http.Transport) *http.Client {
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// standardMethods are written in upper case whatever case a job gives.
var standardMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace,
}

// Send performs one attempt of an Http or Https action: the request with
// the user's headers, the scheduler's headers and the action's
// authentication. A 2xx answer is success; any other status, a timeout or
// a connection error is failure. An attempt whose context has no deadline
// gets Config.Timeout.
func (s *Sender) Send(ctx context.Context, a *contracts.JobAction, at actions.Attempt) actions.Outcome {
	if a == nil || a.Request == nil {
		return requestFailed("", "the action carries no request", "no request")
	}
	actionType, ok := contracts.ParseEnum(string(a.Type), []contracts.ActionType{contracts.ActionHTTP, contracts.ActionHTTPS})
	if !ok {
		return requestFailed("", fmt.Sprintf("action type %q is not Http or Https", a.Type), "not an Http action")
	}
	r := a.Request
	u, err := url.Parse(r.URI)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		// The URI itself is left out: its query may hold a key.
		return requestFailed("", "the URI is not an absolute http or https URI", "invalid URI")
	}
	host := u.Hostname()
	if actionType == contracts.ActionHTTPS && u.Scheme != "https" {
		return requestFailed(host, "an Https action needs an https URI", "not an https URI")
	}

	budget := s.cfg.Timeout
	if deadline, ok := ctx.Deadline(); ok {
		budget = max(time.Until(deadline), 0)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}

	method := r.Method
	if upper := strings.ToUpper(method); slices.Contains(standardMethods, upper) {
		method = upper
	}
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URI, body)
	if err != nil {
		return requestFailed(host, fmt.Sprintf("%q is not a valid HTTP method", method), "invalid method")
	}
	for _, name := range slices.Sorted(maps.Keys(r.Headers)) {
		if strings.EqualFold(name, "Host") {
			req.Host = r.Headers[name]
			continue
		}
		req.Header.Set(name, r.Headers[name])
	}
	setSchedulerHeaders(req.Header, at)

	var secrets []string
	if password, ok := u.User.Password(); ok {
		// The client sends credentials in the URI as Basic authentication.
		secrets = append(secrets, password, basicCredentials(u.User.Username(), password))
	}
	client := s.client
	authType := contracts.HTTPAuthNotSpecified
	if auth := r.Authentication; auth != nil && auth.Type != "" {
		if authType, ok = contracts.ParseEnum(string(auth.Type), contracts.HTTPAuthTypes); !ok {
			return requestFailed(host, fmt.Sprintf("authentication type %q is not supported", auth.Type), "unsupported authentication")
		}
	}
	switch auth := r.Authentication; authType {
	case contracts.HTTPAuthBasic:
		credentials := basicCredentials(auth.Username, auth.Password)
		secrets = append(secrets, auth.Password, credentials)
		req.Header.Set("Authorization", "Basic "+credentials)
	case contracts.HTTPAuthClientCertificate:
		secrets = append(secrets, auth.Password, auth.Pfx)
		if u.Scheme != "https" {
			return requestFailed(host, "a client certificate needs an https URI", "not an https URI")
		}
		if client, err = s.certs.client(ctx, auth.Pfx, auth.Password); err != nil {
			reason, short := describe(ctx, err, budget, secrets)
			return requestFailed(host, reason, short)
		}
	case contracts.HTTPAuthActiveDirectoryOAuth:
		secrets = append(secrets, auth.Secret)
		token, err := s.tokens.token(ctx, credentialOf(auth))
		if err != nil {
			reason, short := describe(ctx, err, budget, secrets)
			return requestFailed(host, reason, short)
		}
		secrets = append(secrets, token)
		req.Header.Set("Authorization", "Bearer "+token)
	}

	resp, err := client.Do(req)
	if err != nil {
		reason, short := describe(ctx, err, budget, secrets)
		return requestFailed(host, reason, short)
	}
	if authType == contracts.HTTPAuthActiveDirectoryOAuth && resp.StatusCode == http.StatusUnauthorized {
		// The token may have been revoked or the target's configuration
		// changed: the next attempt asks for a new one.
		s.tokens.forget(credentialOf(r.Authentication))
	}
	return answered(host, resp, secrets)
}

// setSchedulerHeaders sets the headers that tell the target which job,
// occurrence and attempt a request belongs to.
func setSchedulerHeaders(h http.Header, at actions.Attempt) {
	h.Set(HeaderJobID, at.Job.Job)
	h.Set(HeaderJobCollectionID, at.Job.Collection)
	h.Set(HeaderExpectedExecutionTime, at.ExpectedText())
	h.Set(HeaderExecutionTag, at.ID)
	h.Set(HeaderClientRequestID, at.ClientRequestID())
	h.Set(HeaderIdempotencyKey, at.ID)
	if at.TraceParent != "" {
		h.Set(HeaderTraceParent, at.TraceParent)
	}
}

// Close closes the idle connections of every transport the sender keeps.
// Connections still in use are closed when their request ends. A Sender
// may still be used after Close; it dials anew.
func (s *Sender) Close() error {
	s.shared.CloseIdleConnections()
	s.certs.closeIdle()
	s.tokens.closeIdle()
	return nil
}
