package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// OIDCConfig configures the verification of OpenID Connect bearer tokens.
type OIDCConfig struct {
	// Issuer is the identity provider's issuer URL: its
	// /.well-known/openid-configuration names its signing keys (JWKS),
	// and tokens must carry it in "iss". Required.
	Issuer string
	// Audience is what tokens must carry in "aud": the client id or
	// application id URI the planner is registered as. Required.
	Audience string
	// ScopesClaim is the claim that holds the principal's grants, each
	// "<role>:<scope>" (see ParseGrant), as a list of strings or one
	// string of values separated by spaces; other values are ignored.
	// Defaults to "scheduler_scopes".
	ScopesClaim string
	// Client fetches the discovery document and the keys. Defaults to a
	// client that gives up after 10 s.
	Client *http.Client
	// Now is the clock expiry is checked against. Defaults to time.Now.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Validate names the first field that is missing or not valid.
func (c OIDCConfig) Validate() error {
	u, err := url.Parse(c.Issuer)
	switch {
	case c.Issuer == "":
		return errors.New("the OpenID Connect issuer is required")
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Errorf("the OpenID Connect issuer %q is not an http(s) URL", c.Issuer)
	case c.Audience == "":
		return errors.New("the OpenID Connect audience is required with an issuer")
	}
	return nil
}

// discoveryRetry is how long after a failed discovery the next token
// tries again; tokens in between are answered 503.
const discoveryRetry = 10 * time.Second

// OIDC authenticates OpenID Connect bearer tokens: JWTs whose signature,
// issuer, audience and expiry go-oidc checks against the issuer's keys.
// Keys are fetched again when a token names one not seen yet, so a key
// the provider rotates in is taken at once. The issuer is discovered at
// the first token, and again after a failure, so that a planner starts
// while its identity provider does not answer.
type OIDC struct {
	cfg OIDCConfig
	mu  sync.Mutex
	// verifier is nil until discovery succeeded; until then retryAt is
	// when to try again and discoveryErr why it failed.
	verifier     *oidc.IDTokenVerifier
	retryAt      time.Time
	discoveryErr error
}

// NewOIDC returns the verifier of cfg's tokens.
func NewOIDC(cfg OIDCConfig) (*OIDC, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.ScopesClaim = cmp.Or(cfg.ScopesClaim, "scheduler_scopes")
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &OIDC{cfg: cfg}, nil
}

// verifierNow returns the verifier, discovering the issuer when it was not
// yet.
func (o *OIDC) verifierNow() (*oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.verifier != nil {
		return o.verifier, nil
	}
	if time.Now().Before(o.retryAt) {
		return nil, o.discoveryErr
	}
	// The provider keeps this context to fetch keys later: it must not be
	// a request's, which ends with the request.
	ctx, cancel := context.WithTimeout(oidc.ClientContext(context.Background(), o.cfg.Client), 15*time.Second)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, o.cfg.Issuer)
	if err != nil {
		o.retryAt, o.discoveryErr = time.Now().Add(discoveryRetry), fmt.Errorf("discovering the OpenID Connect issuer: %w", err)
		o.cfg.Logger.Warn("discovering the OpenID Connect issuer failed; trying again at the next token",
			slog.String("issuer", o.cfg.Issuer), slog.Duration("not_before", discoveryRetry), slog.String("error", err.Error()))
		return nil, o.discoveryErr
	}
	o.verifier = provider.Verifier(&oidc.Config{ClientID: o.cfg.Audience, Now: o.cfg.Now})
	o.cfg.Logger.Info("OpenID Connect issuer discovered", slog.String("issuer", o.cfg.Issuer))
	return o.verifier, nil
}

// Authenticate verifies a JWT and returns its subject, "oidc:<sub>", with
// the grants of its scopes claim. A token that is no JWT, or that fails
// verification, is unknown; an issuer that cannot be discovered is an
// error of its own (503).
func (o *OIDC) Authenticate(ctx context.Context, token string) (Principal, error) {
	if strings.Count(token, ".") != 2 {
		return Principal{}, ErrUnknownToken
	}
	v, err := o.verifierNow()
	if err != nil {
		return Principal{}, err
	}
	idt, err := v.Verify(ctx, token)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: OpenID Connect: %v", ErrUnknownToken, err)
	}
	if idt.Subject == "" {
		return Principal{}, fmt.Errorf("%w: OpenID Connect: the token has no subject (sub)", ErrUnknownToken)
	}
	var claims map[string]json.RawMessage
	if err := idt.Claims(&claims); err != nil {
		return Principal{}, fmt.Errorf("%w: OpenID Connect: reading the claims: %v", ErrUnknownToken, err)
	}
	p := Principal{Name: "oidc:" + idt.Subject}
	for _, value := range claimValues(claims[o.cfg.ScopesClaim]) {
		if g, err := ParseGrant(value); err == nil {
			p.Grants = append(p.Grants, g)
		}
	}
	return p, nil
}

// claimValues reads a claim that is a list of strings, or one string of
// values separated by spaces (as OAuth's "scope").
func claimValues(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return strings.Fields(one)
	}
	return nil
}
