package console_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
	"github.com/jobscheduler/scheduler/planner/api"
	"github.com/jobscheduler/scheduler/planner/console"
	"github.com/jobscheduler/scheduler/planner/service"
)

const (
	// apiAudience is the audience the tests' planner asks tokens for.
	apiAudience = "scheduler-api"
	// clientID is the console's client id at the tests' provider.
	clientID = "scheduler-console"
)

// provider is an OpenID Connect provider of the tests' own, whose viewer
// is already signed in: its authorization endpoint answers at once with a
// code (or with the error it is told to), and its token endpoint exchanges
// the code, checking the PKCE verifier, for an access token (for the API)
// and an ID token (for the console).
type provider struct {
	srv *httptest.Server
	key *rsa.PrivateKey

	mu sync.Mutex
	// deny, when set, is the error the authorization endpoint answers.
	deny string
	// audience is the "aud" of the access tokens it issues.
	audience string
	// codes are the codes issued and not yet exchanged.
	codes map[string]grant
	// authorized is the last authorization request.
	authorized url.Values
}

// grant is what a code was issued for.
type grant struct {
	challenge, nonce, redirect string
}

func newProvider(t *testing.T) *provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &provider{key: key, audience: apiAudience, codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": p.srv.URL, "jwks_uri": p.srv.URL + "/keys",
			"authorization_endpoint": p.srv.URL + "/authorize", "token_endpoint": p.srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"}, "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": "k1",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func (p *provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.authorized = q
	back, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("client_id") != clientID || q.Get("response_type") != "code" ||
		q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "a bad authorization request", http.StatusBadRequest)
		return
	}
	answer := url.Values{"state": {q.Get("state")}}
	if p.deny != "" {
		answer.Set("error", p.deny)
		answer.Set("error_description", "The user said <b>no</b>.")
	} else {
		code := b64([]byte(time.Now().String() + q.Get("state")))
		p.codes[code] = grant{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirect: q.Get("redirect_uri")}
		answer.Set("code", code)
	}
	back.RawQuery = answer.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (p *provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f := r.PostForm
	p.mu.Lock()
	g, ok := p.codes[f.Get("code")]
	delete(p.codes, f.Get("code"))
	audience := p.audience
	p.mu.Unlock()
	verified := sha256.Sum256([]byte(f.Get("code_verifier")))
	if !ok || f.Get("grant_type") != "authorization_code" || f.Get("client_id") != clientID ||
		f.Get("redirect_uri") != g.redirect || b64(verified[:]) != g.challenge {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error": "invalid_grant"}`))
		return
	}
	now := time.Now()
	access := p.sign(map[string]any{"iss": p.srv.URL, "aud": audience, "sub": "alice", "iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(), "scheduler_scopes": []string{"operator:*"}})
	id := p.sign(map[string]any{"iss": p.srv.URL, "aud": clientID, "sub": "alice", "iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(), "nonce": g.nonce})
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": access, "id_token": id, "token_type": "Bearer", "expires_in": 3600})
}

// sign returns the JWT of claims, signed with the provider's key.
func (p *provider) sign(claims map[string]any) string {
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "k1"})
	payload, _ := json.Marshal(claims)
	input := b64(header) + "." + b64(payload)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, p.key, crypto.SHA256, digest[:])
	if err != nil {
		panic(err)
	}
	return input + "." + b64(sig)
}

// set changes how the provider answers.
func (p *provider) set(deny, audience string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny, p.audience = deny, audience
}

// startOIDCPlanner runs a planner that accepts the provider's tokens and
// signs viewers in to its console through it, with a collection c holding
// a job ping, and returns its URL.
func startOIDCPlanner(t *testing.T, p *provider) string {
	t.Helper()
	ns := testkit.NATS(t)
	_, prefix, mr := testkit.Redis(t)
	redisURL := testkit.RedisURL()
	if mr != nil {
		redisURL = "redis://" + mr.Addr()
	}
	svc, err := service.Start(context.Background(), service.Config{
		NATSURL: ns.ClientURL(), RedisURL: redisURL, RedisPrefix: prefix, Listen: "127.0.0.1:0", EncryptionKey: make([]byte, 32),
		OIDC:       api.OIDCConfig{Issuer: p.srv.URL, Audience: apiAudience},
		OIDCClient: console.OIDCClient{ID: clientID, Params: url.Values{"audience": {apiAudience}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	base := svc.URL()
	operator := p.sign(map[string]any{"iss": p.srv.URL, "aud": apiAudience, "sub": "setup",
		"exp": time.Now().Add(time.Hour).Unix(), "scheduler_scopes": []string{"operator:*"}})
	auth := []string{"Authorization", "Bearer " + operator, "Content-Type", "application/json"}
	if code, body := testkit.Call(t, "PUT", base+collection+"?api-version=2016-03-01", `{"properties": {"sku": {"name": "Standard"}}}`, auth...); code != http.StatusCreated {
		t.Fatalf("creating the collection: %d %s", code, body)
	}
	job := `{"properties": {"action": {"type": "Http", "request": {"uri": "https://example.com/ping", "method": "GET"}},
		"recurrence": {"frequency": "Day", "schedule": {"hours": [9], "minutes": [0]}}}}`
	if code, body := testkit.Call(t, "PUT", base+collection+"/jobs/ping?api-version=2016-03-01", job, auth...); code != http.StatusCreated {
		t.Fatalf("creating the job: %d %s", code, body)
	}
	return base
}

// follow sends a GET to an absolute URL, as a browser follows a redirect.
func (b *browser) follow(location string) (*http.Response, string) {
	b.t.Helper()
	if !strings.HasPrefix(location, b.base) {
		res, err := b.c.Get(location)
		if err != nil {
			b.t.Fatal(err)
		}
		res.Body.Close()
		return res, ""
	}
	return b.do("GET", strings.TrimPrefix(location, b.base), nil)
}

// toProvider starts signing in, to come back to next, and returns the
// provider's answer: the console's callback URL with its query.
func (b *browser) toProvider(next string) string {
	b.t.Helper()
	res, _ := b.do("GET", "/login/oidc?next="+url.QueryEscape(next), nil)
	if res.StatusCode != http.StatusFound {
		b.t.Fatalf("GET /login/oidc: %d", res.StatusCode)
	}
	var flow *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "scheduler_oidc" {
			flow = c
		}
	}
	if flow == nil || !flow.HttpOnly || flow.SameSite != http.SameSiteLaxMode || flow.MaxAge != 600 {
		b.t.Fatalf("the sign-in's cookie %+v: want HttpOnly, SameSite=Lax, 10 minutes", flow)
	}
	res, _ = b.follow(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), b.base+"/login/oidc/callback?") {
		b.t.Fatalf("the provider's authorization endpoint: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	return res.Header.Get("Location")
}

var refreshTo = regexp.MustCompile(`<meta http-equiv="refresh" content="0; url=([^"]+)">`)

// signedOut reports whether the browser is sent to sign in for the job
// page.
func (b *browser) signedOut() bool {
	b.t.Helper()
	res, _ := b.do("GET", consoleJob, nil)
	return res.StatusCode == http.StatusSeeOther && strings.HasPrefix(res.Header.Get("Location"), "/login")
}

func TestSigningInThroughTheIdentityProvider(t *testing.T) {
	t.Parallel()
	p := newProvider(t)
	base := startOIDCPlanner(t, p)
	host := strings.TrimPrefix(p.srv.URL, "http://")

	t.Run("the sign-in page offers the provider beside the token", func(t *testing.T) {
		b := newBrowser(t, base)
		_, page := b.do("GET", "/login?next="+url.QueryEscape(consoleJob), nil)
		want := strings.ToLower(`href="/login/oidc?next=` + url.QueryEscape(consoleJob) + `">Sign in with ` + host + `</a>`)
		if !strings.Contains(strings.ToLower(page), want) || !strings.Contains(page, `name="token"`) {
			t.Fatalf("no %s and token field in the page:\n%s", want, page)
		}
	})
	t.Run("the code flow with PKCE ends signed in, on the page asked for", func(t *testing.T) {
		b := newBrowser(t, base)
		callback := b.toProvider(consoleJob)
		p.mu.Lock()
		asked := p.authorized
		p.mu.Unlock()
		if asked.Get("audience") != apiAudience || asked.Get("scope") != "openid profile" || asked.Get("nonce") == "" ||
			asked.Get("redirect_uri") != base+"/login/oidc/callback" {
			t.Fatalf("the authorization request: %v", asked)
		}
		res, page := b.follow(callback)
		m := refreshTo.FindStringSubmatch(page)
		if res.StatusCode != http.StatusOK || m == nil || m[1] != consoleJob {
			t.Fatalf("the callback: %d\n%s", res.StatusCode, page)
		}
		res, page = b.do("GET", consoleJob, nil)
		if res.StatusCode != http.StatusOK || !strings.Contains(page, "<h1>ping</h1>") || !strings.Contains(page, "Sign out") {
			t.Fatalf("the job page after signing in: %d\n%s", res.StatusCode, page)
		}
		if res, _ = b.follow(callback); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("the provider's answer taken a second time: %d, want 400", res.StatusCode)
		}
	})
	t.Run("an answer with another state is refused", func(t *testing.T) {
		b := newBrowser(t, base)
		callback, _ := url.Parse(b.toProvider("/"))
		q := callback.Query()
		q.Set("state", another(q.Get("state")))
		callback.RawQuery = q.Encode()
		res, page := b.follow(callback.String())
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "does not belong to the sign-in this browser started") {
			t.Fatalf("another state: %d\n%s", res.StatusCode, page)
		}
		if !b.signedOut() {
			t.Fatal("signed in with another state")
		}
	})
	t.Run("an answer without the sign-in's cookie is refused", func(t *testing.T) {
		callback := newBrowser(t, base).toProvider("/")
		b := newBrowser(t, base)
		res, page := b.follow(callback)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "was not started in this browser") {
			t.Fatalf("no cookie: %d\n%s", res.StatusCode, page)
		}
		if !b.signedOut() {
			t.Fatal("signed in without the sign-in's cookie")
		}
	})
	t.Run("the provider's refusal is shown", func(t *testing.T) {
		p.set("access_denied", apiAudience)
		defer p.set("", apiAudience)
		b := newBrowser(t, base)
		res, page := b.follow(b.toProvider("/"))
		if res.StatusCode != http.StatusForbidden || !strings.Contains(page, "The identity provider did not sign you in: access_denied.") {
			t.Fatalf("access_denied: %d\n%s", res.StatusCode, page)
		}
		if strings.Contains(page, "<b>no</b>") || !strings.Contains(page, "&lt;b&gt;no&lt;/b&gt;") {
			t.Fatalf("the provider's description is not escaped:\n%s", page)
		}
	})
	t.Run("a token for another audience ends on the sign-in page, saying why", func(t *testing.T) {
		p.set("", "someone-else")
		defer p.set("", apiAudience)
		b := newBrowser(t, base)
		res, page := b.follow(b.toProvider(consoleJob))
		if res.StatusCode != http.StatusForbidden || !strings.Contains(page, "<h1>Sign in</h1>") ||
			!strings.Contains(page, "The identity provider&#39;s token is not accepted by this scheduler: check --oidc-audience") {
			t.Fatalf("another audience: %d\n%s", res.StatusCode, page)
		}
		if strings.Contains(page, "eyJ") {
			t.Fatalf("the page shows the token:\n%s", page)
		}
		if !b.signedOut() {
			t.Fatal("signed in with a token the API refuses")
		}
	})
}
