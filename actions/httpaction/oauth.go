package httpaction

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
	"github.com/jobscheduler/scheduler/contracts"
)

const (
	// refreshEarly is how long before it expires a cached token is
	// replaced; a token that lives less than twice as long is replaced
	// halfway through its life.
	refreshEarly = 5 * time.Minute
	// unknownLifetime is the life assumed of a token whose answer gives
	// neither expires_in nor expires_on.
	unknownLifetime = 10 * time.Minute
	// maxLifetime caps the life taken from an answer, so that a wild
	// expires_in cannot keep a token forever.
	maxLifetime = 24 * time.Hour
	// maxTokens bounds the token cache. Past it, expired tokens are
	// dropped first, then any.
	maxTokens = 4096
	// maxTokenAnswer bounds how much of the token endpoint's answer is
	// read.
	maxTokenAnswer = 64 << 10
	// maxErrorDetail bounds the token endpoint's error description quoted
	// in an outcome.
	maxErrorDetail = 256
)

// credential is what an ActiveDirectoryOAuth action authenticates with,
// copied out of the action so that a token request running on after the
// attempt that started it does not read the action.
type credential struct {
	tenant, clientID, secret, audience string
}

func credentialOf(a *contracts.HTTPAuthentication) credential {
	return credential{tenant: a.Tenant, clientID: a.ClientID, secret: a.Secret, audience: a.Audience}
}

// tokenSource gets Azure AD access tokens with the client credentials
// grant, in the v1 form the original service used, and caches each until
// shortly before it expires. Concurrent requests for the same credential
// share one token request.
type tokenSource struct {
	authority string // without a trailing slash
	host      string // the authority's host, for messages
	client    *http.Client
	timeout   time.Duration
	now       func() time.Time

	mu     sync.Mutex
	tokens map[[sha256.Size]byte]cachedToken
	flight flight[[sha256.Size]byte, string]
}

type cachedToken struct {
	value     string
	refreshAt time.Time
}

func newTokenSource(authority string, client *http.Client, timeout time.Duration, now func() time.Time) *tokenSource {
	authority = strings.TrimRight(authority, "/")
	u, _ := url.Parse(authority) // validated by Config.validate
	return &tokenSource{
		authority: authority,
		host:      u.Host,
		client:    client,
		timeout:   timeout,
		now:       now,
		tokens:    make(map[[sha256.Size]byte]cachedToken),
	}
}

// newTokenClient returns the client for the token endpoint. Its
// connections go through dialer, and so the address policy, like those to
// targets: a job chooses the tenant, and the token request runs on the
// worker's network. It uses no proxy (a proxy would dial the authority
// out of the policy's sight) and never follows a redirect: the form
// carries the client secret.
func newTokenClient(dialer *netpolicy.Dialer, rootCAs *x509.CertPool) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dialer.DialContext,
			TLSClientConfig:     &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: 10 * time.Second,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// key identifies a credential's token in the cache without keeping the
// secret.
func (ts *tokenSource) key(c credential) [sha256.Size]byte {
	return secretKey("oauth", ts.authority, c.tenant, c.clientID, c.secret, c.audience)
}

// token returns an access token for c, from the cache when it holds one
// that is not due for refresh.
func (ts *tokenSource) token(ctx context.Context, c credential) (string, error) {
	key := ts.key(c)
	if tok, ok := ts.cached(key); ok {
		return tok, nil
	}
	return ts.flight.do(ctx, key, func(ctx context.Context) (string, error) {
		if tok, ok := ts.cached(key); ok {
			return tok, nil
		}
		tok, err := ts.fetch(ctx, c)
		if err != nil {
			return "", err
		}
		ts.store(key, tok)
		return tok.value, nil
	})
}

// forget drops c's cached token, so that the next attempt gets a new one.
func (ts *tokenSource) forget(c credential) {
	key := ts.key(c)
	ts.mu.Lock()
	delete(ts.tokens, key)
	ts.mu.Unlock()
}

func (ts *tokenSource) cached(key [sha256.Size]byte) (string, bool) {
	now := ts.now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	tok, ok := ts.tokens[key]
	if !ok {
		return "", false
	}
	if !now.Before(tok.refreshAt) {
		delete(ts.tokens, key)
		return "", false
	}
	return tok.value, true
}

func (ts *tokenSource) store(key [sha256.Size]byte, tok cachedToken) {
	now := ts.now()
	if !now.Before(tok.refreshAt) {
		return // too short-lived to be worth keeping
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.tokens) >= maxTokens {
		for k, t := range ts.tokens {
			if !now.Before(t.refreshAt) {
				delete(ts.tokens, k)
			}
		}
		for k := range ts.tokens {
			if len(ts.tokens) < maxTokens {
				break
			}
			delete(ts.tokens, k)
		}
	}
	ts.tokens[key] = tok
}

// fetch asks the authority for a token:
// POST {authority}/{tenant}/oauth2/token with the client credentials grant
// and the audience as the resource.
func (ts *tokenSource) fetch(ctx context.Context, c credential) (cachedToken, error) {
	ctx, cancel := context.WithTimeout(ctx, ts.timeout)
	defer cancel()
	form := url.Values{
		"grant_type":    {"client_credentials"},
		"client_id":     {c.clientID},
		"client_secret": {c.secret},
		"resource":      {c.audience},
	}
	// The tenant becomes a path segment: only a tenant id or a domain
	// name, which hold no '/', '%' or "..", may go there.
	if !contracts.IsTenant(c.tenant) {
		return cachedToken{}, ts.fail("the tenant is not a tenant id (GUID) or a domain name")
	}
	endpoint := ts.authority + "/" + url.PathEscape(c.tenant) + "/oauth2/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return cachedToken{}, ts.fail("the request could not be built")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")

	start := ts.now()
	resp, err := ts.client.Do(req)
	if err != nil {
		reason, _ := describe(ctx, err, ts.timeout, []string{c.secret})
		return cachedToken{}, ts.fail(reason)
	}
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
	_ = resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		return cachedToken{}, ts.fail(strconv.Itoa(resp.StatusCode) + " " + statusText(resp) + errorDetail(body, c.secret))
	}
	if readErr != nil {
		return cachedToken{}, ts.fail("the answer could not be read")
	}
	var answer tokenAnswer
	if err := json.Unmarshal(body, &answer); err != nil || answer.AccessToken == "" {
		return cachedToken{}, ts.fail("the answer holds no access token")
	}
	return cachedToken{value: answer.AccessToken, refreshAt: answer.refreshAt(start)}, nil
}

func (ts *tokenSource) fail(reason string) error {
	return &tokenError{host: ts.host, reason: reason}
}

func (ts *tokenSource) closeIdle() { ts.client.CloseIdleConnections() }

// tokenAnswer is the token endpoint's JSON answer. Azure AD v1 writes the
// numbers as strings; other issuers write numbers.
type tokenAnswer struct {
	AccessToken string      `json:"access_token"`
	TokenType   string      `json:"token_type"`
	ExpiresIn   jsonSeconds `json:"expires_in"`
	ExpiresOn   jsonSeconds `json:"expires_on"`
}

// refreshAt returns when a token received at start should be replaced:
// refreshEarly before it expires, or halfway through its life when that
// is shorter. expires_in is preferred to expires_on, as it does not depend
// on the clocks agreeing.
func (a tokenAnswer) refreshAt(start time.Time) time.Time {
	var lifetime time.Duration
	switch {
	case a.ExpiresIn > 0:
		lifetime = time.Duration(min(int64(a.ExpiresIn), int64(maxLifetime/time.Second))) * time.Second
	case a.ExpiresOn > 0:
		lifetime = min(time.Unix(int64(a.ExpiresOn), 0).Sub(start), maxLifetime)
	default:
		lifetime = unknownLifetime
	}
	return start.Add(lifetime - min(refreshEarly, lifetime/2))
}

// jsonSeconds is a count of seconds written as a JSON number or string. A
// value that is neither reads as 0, unknown, rather than failing the whole
// answer.
type jsonSeconds int64

func (s *jsonSeconds) UnmarshalJSON(b []byte) error {
	text := string(b)
	if strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(b, &text); err != nil {
			text = ""
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || f < 0 || f > 1<<53 {
		f = 0
	}
	*s = jsonSeconds(f)
	return nil
}

// errorDetail returns " (code: description)" from an OAuth error answer,
// the description's first line only, scrubbed of the secret and bounded;
// "" when the answer is not one.
func errorDetail(body []byte, secret string) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &e) != nil || (e.Error == "" && e.Description == "") {
		return ""
	}
	desc, _, _ := strings.Cut(e.Description, "\n")
	detail := strings.TrimSpace(e.Error + ": " + strings.TrimSpace(desc))
	detail = strings.TrimSuffix(strings.TrimPrefix(detail, ": "), ":")
	detail, _ = actions.Truncate(actions.Scrub(detail, secret), maxErrorDetail)
	return " (" + detail + ")"
}
