package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Signing in through the OpenID Connect provider is the authorization-code
// flow with PKCE (S256): GET /login/oidc sends the viewer to the
// provider's authorization endpoint, the provider sends them back to
// /login/oidc/callback with a code, and the console exchanges the code for
// tokens. The access token, once the API accepts it, becomes the
// session's token, as a pasted one would. What the flow must remember
// between the two requests (state, nonce, PKCE verifier, the page to come
// back to) is in a sealed cookie of its own that lasts 10 minutes.

// OIDCClient is the console's client of the OpenID Connect provider.
type OIDCClient struct {
	// ID is the client id the provider knows the console by. Defaults to
	// none: viewers sign in by pasting a token only.
	ID string
	// Secret is the client's secret, sent to the token endpoint. Defaults
	// to none: a public client, proved by PKCE alone.
	Secret string
	// Scopes are the scopes the authorization request asks for. Defaults
	// to "openid" and "profile".
	Scopes []string
	// Params are added to the authorization request, such as an
	// "audience" or "resource" that makes the provider issue access
	// tokens for the API. Defaults to none.
	Params url.Values
}

// reservedParams are the authorization request's parameters the flow sets
// itself.
var reservedParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge", "code_challenge_method"}

// Validate names the first parameter that may not be set.
func (c OIDCClient) Validate() error {
	for key := range c.Params {
		if slices.Contains(reservedParams, key) {
			return fmt.Errorf("the parameter %q is set by the sign-in itself and may not be given", key)
		}
		if key == "" {
			return errors.New("a parameter has no name")
		}
	}
	return nil
}

// OIDCLogin configures signing in through an OpenID Connect provider.
type OIDCLogin struct {
	// Issuer is the provider's issuer URL, the API's (see
	// api.OIDCConfig.Issuer). Required with Client.ID.
	Issuer string
	// Client is the console's client of the provider. Signing in through
	// the provider is offered when its ID is set.
	Client OIDCClient
	// PublicURL is the base of the URL the provider sends viewers back to,
	// <PublicURL>/login/oidc/callback. Defaults to the scheme and Host of
	// the viewer's request.
	PublicURL *url.URL
	// HTTPClient reaches the provider. Defaults to a client that gives up
	// after 10 s.
	HTTPClient *http.Client
}

const (
	// flowCookie names the cookie of a sign-in under way.
	flowCookie       = "scheduler_oidc"
	secureFlowCookie = "__Host-scheduler_oidc"
	// flowAAD binds sealed flows to their use.
	flowAAD = "console-oidc-flow"
	// flowLifetime is how long a sign-in at the provider may take.
	flowLifetime = 10 * time.Minute
	// callbackPath is where the provider sends viewers back to.
	callbackPath = "/login/oidc/callback"
	// discoveryRetry is how long after a failed discovery the next
	// sign-in tries again.
	discoveryRetry = 10 * time.Second
)

// oidcFlow is what the flow's cookie holds.
type oidcFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	// Redirect is the redirect_uri of the authorization request, which
	// the token request must repeat.
	Redirect string `json:"r"`
	// Next is the console's page to show once signed in.
	Next    string `json:"x"`
	Expires int64  `json:"e"`
}

// oidcLogin signs viewers in through the provider. The provider is
// discovered at the first sign-in, and again after a failure, so that a
// planner starts while its provider does not answer.
type oidcLogin struct {
	cfg OIDCLogin
	// label names the provider on the sign-in page: the issuer's host.
	label string
	now   func() time.Time

	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
	retryAt  time.Time
	err      error
}

// newOIDCLogin returns the sign-in of cfg; nil when cfg has no client id.
func newOIDCLogin(cfg OIDCLogin, now func() time.Time) (*oidcLogin, error) {
	if cfg.Client.ID == "" {
		return nil, nil
	}
	u, err := url.Parse(cfg.Issuer)
	if cfg.Issuer == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("console: signing in through OpenID Connect needs the issuer's http(s) URL")
	}
	if err := cfg.Client.Validate(); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if len(cfg.Client.Scopes) == 0 {
		cfg.Client.Scopes = []string{oidc.ScopeOpenID, "profile"}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &oidcLogin{cfg: cfg, label: u.Host, now: now}, nil
}

// discovered returns the OAuth client and the ID token verifier,
// discovering the provider when it was not yet.
func (l *oidcLogin) discovered() (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.oauth != nil {
		return l.oauth, l.verifier, nil
	}
	if time.Now().Before(l.retryAt) {
		return nil, nil, l.err
	}
	// The provider keeps this context to fetch keys later: it must not be
	// a request's, which ends with the request.
	ctx, cancel := context.WithTimeout(oidc.ClientContext(context.Background(), l.cfg.HTTPClient), 15*time.Second)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, l.cfg.Issuer)
	if err != nil {
		l.retryAt, l.err = time.Now().Add(discoveryRetry), fmt.Errorf("discovering the OpenID Connect issuer: %w", err)
		return nil, nil, l.err
	}
	endpoint := provider.Endpoint()
	if endpoint.AuthURL == "" || endpoint.TokenURL == "" {
		l.retryAt, l.err = time.Now().Add(discoveryRetry), errors.New("the OpenID Connect issuer names no authorization or token endpoint")
		return nil, nil, l.err
	}
	if l.cfg.Client.Secret == "" {
		endpoint.AuthStyle = oauth2.AuthStyleInParams // a public client: its id in the form, no secret
	}
	l.oauth = &oauth2.Config{ClientID: l.cfg.Client.ID, ClientSecret: l.cfg.Client.Secret, Endpoint: endpoint, Scopes: l.cfg.Client.Scopes}
	l.verifier = provider.Verifier(&oidc.Config{ClientID: l.cfg.Client.ID, Now: l.now})
	return l.oauth, l.verifier, nil
}

// callbackURL is the redirect_uri of a sign-in that r starts: under the
// public URL, or the scheme and Host r came with (ServeHTTP has checked
// the Host is one the API is served as).
func (l *oidcLogin) callbackURL(r *http.Request) string {
	if u := l.cfg.PublicURL; u != nil {
		return u.Scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/") + callbackPath
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + callbackPath
}

// signInWith is the name of the provider the sign-in page offers; empty
// when none is.
func (c *Console) signInWith() string {
	if c.provider == nil {
		return ""
	}
	return c.provider.label
}

// startOIDC sends the viewer to the provider's authorization endpoint.
func (c *Console) startOIDC(w http.ResponseWriter, r *http.Request) {
	if c.provider == nil {
		c.render(w, r, http.StatusNotFound, "error", &view{Title: "Not found",
			Error: "Signing in through an identity provider is not configured: sign in with a token."})
		return
	}
	oauth, _, err := c.provider.discovered()
	if err != nil {
		c.cfg.Logger.Warn("console: signing in through OpenID Connect", slog.String("issuer", c.provider.cfg.Issuer), slog.String("error", err.Error()))
		c.oidcFault(w, r, http.StatusServiceUnavailable, "The identity provider cannot be reached now; try again in a moment, or sign in with a token.")
		return
	}
	flow := oidcFlow{
		State: randomValue(), Nonce: randomValue(), Verifier: oauth2.GenerateVerifier(),
		Redirect: c.provider.callbackURL(r), Next: safeNext(r.URL.Query().Get("next")),
		Expires: c.cfg.Now().Add(flowLifetime).Unix(),
	}
	c.writeFlow(w, r, flow)
	opts := []oauth2.AuthCodeOption{
		oauth2.S256ChallengeOption(flow.Verifier), oidc.Nonce(flow.Nonce), oauth2.SetAuthURLParam("redirect_uri", flow.Redirect),
	}
	for key, values := range c.provider.cfg.Client.Params {
		for _, v := range values {
			opts = append(opts, oauth2.SetAuthURLParam(key, v))
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, oauth.AuthCodeURL(flow.State, opts...), http.StatusFound)
}

// finishOIDC takes the provider's answer: it checks it belongs to the
// sign-in this browser started, exchanges the code, and starts the session
// with the access token when the API accepts it.
func (c *Console) finishOIDC(w http.ResponseWriter, r *http.Request) {
	if c.provider == nil {
		c.render(w, r, http.StatusNotFound, "error", &view{Title: "Not found", Error: "There is no page at " + r.URL.Path + "."})
		return
	}
	flow, ok := c.readFlow(r)
	clearFlow(w, r)
	if !ok {
		c.oidcFault(w, r, http.StatusBadRequest, "This sign-in was not started in this browser, or was started more than 10 minutes ago. Sign in again.")
		return
	}
	query := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(query.Get("state")), []byte(flow.State)) != 1 {
		c.oidcFault(w, r, http.StatusBadRequest, "The identity provider's answer does not belong to the sign-in this browser started. Sign in again.")
		return
	}
	if code := query.Get("error"); code != "" {
		msg := "The identity provider did not sign you in: " + abbreviate(code, 64) + "."
		if desc := query.Get("error_description"); desc != "" {
			msg += " It says: " + abbreviate(desc, 300)
		}
		c.oidcFault(w, r, http.StatusForbidden, msg)
		return
	}
	if query.Get("code") == "" {
		c.oidcFault(w, r, http.StatusBadRequest, "The identity provider's answer holds no authorization code. Sign in again.")
		return
	}
	oauth, verifier, err := c.provider.discovered()
	if err != nil {
		c.cfg.Logger.Warn("console: signing in through OpenID Connect", slog.String("issuer", c.provider.cfg.Issuer), slog.String("error", err.Error()))
		c.oidcFault(w, r, http.StatusServiceUnavailable, "The identity provider cannot be reached now; try again in a moment.")
		return
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), c.provider.cfg.HTTPClient), 30*time.Second)
	defer cancel()
	token, err := oauth.Exchange(ctx, query.Get("code"), oauth2.VerifierOption(flow.Verifier), oauth2.SetAuthURLParam("redirect_uri", flow.Redirect))
	if err != nil {
		c.exchangeFailed(w, r, err)
		return
	}
	if raw, _ := token.Extra("id_token").(string); raw != "" {
		idt, err := verifier.Verify(ctx, raw)
		if err != nil {
			c.cfg.Logger.Warn("console: the identity provider's ID token was refused", slog.String("error", err.Error()))
			c.oidcFault(w, r, http.StatusBadGateway, "The identity provider's ID token could not be verified. Sign in again; the planner's log says why.")
			return
		}
		if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(flow.Nonce)) != 1 {
			c.oidcFault(w, r, http.StatusBadRequest, "The identity provider's ID token does not belong to the sign-in this browser started. Sign in again.")
			return
		}
	}
	if token.AccessToken == "" {
		c.oidcFault(w, r, http.StatusBadGateway, "The identity provider issued no access token. Sign in again.")
		return
	}
	probe := &client{api: c.cfg.API, host: r.Host, token: token.AccessToken}
	if err := probe.get(r.Context(), "/providers/Microsoft.Scheduler/jobCollections", nil, nil); err != nil {
		var f *apiFault
		if errors.As(err, &f) && f.Status == http.StatusUnauthorized {
			sess := c.session(w, r)
			c.render(w, r, http.StatusForbidden, "login", &view{Title: "Sign in", CSRF: sess.CSRF, TokenRequired: true,
				Error: "The identity provider's token is not accepted by this scheduler: check --oidc-audience.",
				Data:  loginData{Next: flow.Next, SignInWith: c.signInWith()}})
			return
		}
		c.cfg.Logger.Error("console: checking the identity provider's token", slog.String("error", err.Error()))
		c.oidcFault(w, r, http.StatusBadGateway, "The token could not be checked; the planner's log says why.")
		return
	}
	c.sessions.write(w, r, c.sessions.fresh(token.AccessToken))
	c.signedIn(w, flow.Next)
}

// exchangeFailed answers a token request the provider refused or did not
// answer. The provider's error code is shown; what else it said is logged.
func (c *Console) exchangeFailed(w http.ResponseWriter, r *http.Request, err error) {
	msg := "The identity provider did not exchange the sign-in's code for a token"
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		c.cfg.Logger.Warn("console: the identity provider refused the code", slog.Int("status", re.Response.StatusCode),
			slog.String("error", re.ErrorCode), slog.String("description", abbreviate(re.ErrorDescription, 300)))
		if re.ErrorCode != "" {
			msg += " (" + abbreviate(re.ErrorCode, 64) + ")"
		}
	} else {
		c.cfg.Logger.Warn("console: exchanging the sign-in's code", slog.String("error", err.Error()))
	}
	c.oidcFault(w, r, http.StatusBadGateway, msg+". Sign in again; the planner's log says more.")
}

// oidcFault answers a sign-in that went wrong with a page saying why.
func (c *Console) oidcFault(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, status, "error", &view{Title: "Sign-in failed", Error: msg})
}

// signedInPage navigates to the page to come back to from a page of the
// console's own: the session cookie (SameSite=Strict) is not sent on a
// redirect that follows the provider's, which browsers take as coming
// from the provider's site.
var signedInPage = template.Must(template.New("signed-in").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0; url={{.}}">
<title>Signed in · Scheduler</title>
<link rel="stylesheet" href="/static/console.css">
</head>
<body>
<main id="main"><p>Signed in. <a href="{{.}}">Continue</a></p></main>
</body>
</html>
`))

func (c *Console) signedIn(w http.ResponseWriter, next string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := signedInPage.Execute(w, next); err != nil {
		c.cfg.Logger.Error("console: rendering a page", slog.String("template", "signed-in"), slog.String("error", err.Error()))
	}
}

// safeNext returns next when it is a path of this console that parses as
// a URL, "/" otherwise.
func safeNext(next string) string {
	next = localPath(next)
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return "/"
	}
	return (&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}).String()
}

// flowCookieSpec is the cookie of a sign-in under way. It is
// SameSite=Lax, unlike the session's: the provider's redirect back is a
// navigation from its site, which a Strict cookie would not be sent with.
var flowCookieSpec = sealedCookie{plain: flowCookie, secure: secureFlowCookie, aad: flowAAD, sameSite: http.SameSiteLaxMode}

// writeFlow sets the flow's cookie.
func (c *Console) writeFlow(w http.ResponseWriter, r *http.Request, flow oidcFlow) {
	flowCookieSpec.set(w, r, c.sessions.sealer, flow, http.Cookie{MaxAge: int(flowLifetime / time.Second)})
}

// readFlow returns the sign-in under way in r's browser; false when there
// is none, or one that does not open or has expired.
func (c *Console) readFlow(r *http.Request) (oidcFlow, bool) {
	var flow oidcFlow
	if !flowCookieSpec.open(r, c.sessions.sealer, &flow) || flow.State == "" || flow.Verifier == "" || c.cfg.Now().Unix() >= flow.Expires {
		return oidcFlow{}, false
	}
	return flow, true
}

// clearFlow removes the flow's cookie: a sign-in's answer is taken once.
func clearFlow(w http.ResponseWriter, r *http.Request) { flowCookieSpec.clear(w, r) }

// randomValue returns 32 random bytes, base64url.
func randomValue() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// abbreviate cuts s to at most n bytes (on a rune boundary), marking the
// cut.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
