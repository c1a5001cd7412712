package api

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// testIssuer is an OpenID Connect provider of the tests' own: it serves
// its discovery document and its signing keys (JWKS), and signs tokens
// (RS256) with any key, published or not.
type testIssuer struct {
	srv *httptest.Server
	mu  sync.Mutex
	// published are the keys the JWKS holds; down makes discovery fail.
	published []*signingKey
	down      bool
}

type signingKey struct {
	kid string
	key *rsa.PrivateKey
}

func newSigningKey(t *testing.T, kid string) *signingKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &signingKey{kid: kid, key: key}
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	iss := &testIssuer{published: []*signingKey{newSigningKey(t, "key-1")}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		iss.mu.Lock()
		down := iss.down
		iss.mu.Unlock()
		if down {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported":              []string{"id_token"}, "subject_types_supported": []string{"public"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, _ *http.Request) {
		iss.mu.Lock()
		defer iss.mu.Unlock()
		var keys []map[string]string
		for _, k := range iss.published {
			keys = append(keys, map[string]string{
				"kty": "RSA", "use": "sig", "alg": "RS256", "kid": k.kid,
				"n": b64(k.key.N.Bytes()), "e": b64(big.NewInt(int64(k.key.E)).Bytes()),
			})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	})
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// key returns the first published key.
func (iss *testIssuer) key() *signingKey {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	return iss.published[0]
}

// rotate publishes a new key in place of the old ones and returns it.
func (iss *testIssuer) rotate(t *testing.T, kid string) *signingKey {
	k := newSigningKey(t, kid)
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.published = []*signingKey{k}
	return k
}

// claims are a token's standard claims for the tests' audience, valid for
// an hour, with the scopes claim; changes adds or replaces claims.
func (iss *testIssuer) claims(sub string, scopes any, changes ...map[string]any) map[string]any {
	c := map[string]any{
		"iss": iss.srv.URL, "aud": "scheduler-api", "sub": sub,
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(), "scheduler_scopes": scopes,
	}
	for _, ch := range changes {
		for k, v := range ch {
			c[k] = v
		}
	}
	return c
}

// sign returns the JWT of the claims signed with k.
func sign(t *testing.T, k *signingKey, claims map[string]any) string {
	t.Helper()
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": k.kid})
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	input := b64(header) + "." + b64(payload)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k.key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

// setupOIDC serves the API verifying the issuer's tokens, and the flat
// token token1.
func setupOIDC(t *testing.T, iss *testIssuer, claim string) (*bundle, *testkit.Logs) {
	t.Helper()
	logs := &testkit.Logs{}
	o, err := NewOIDC(OIDCConfig{Issuer: iss.srv.URL, Audience: "scheduler-api", ScopesClaim: claim, Logger: logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	return setupWith(t, testkit.NATS(t), Config{Tokens: []string{token1}, Authenticators: []Authenticator{o}, Logger: logs.Logger()}), logs
}

// changeClaims replaces the claims of a signed token, keeping its
// signature.
func changeClaims(t *testing.T, token string, claims map[string]any) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return parts[0] + "." + b64(payload) + "." + parts[2]
}

func (b *bundle) bearer(t *testing.T, token, method, path, body string) response {
	t.Helper()
	return b.do(t, method, path, body, "Authorization", "Bearer "+token)
}

func TestOpenIDConnectTokens(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	b, logs := setupOIDC(t, iss, "")
	alice := sign(t, iss.key(), iss.claims("alice", []string{"openid", "writer:/subscriptions/subA", "reader:/subscriptions/subB/resourceGroups/rg"}))
	collA, collB := collections("subA", "rg")+"/c1", collections("subB", "rg")+"/c1"
	if r := b.bearer(t, token1, "PUT", collB, `{"properties": {}}`); r.status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.status, r.body)
	}

	t.Run("a valid token acts with the grants of its claim", func(t *testing.T) {
		for _, tt := range []struct {
			method, path string
			status       int
		}{
			{"PUT", collA, http.StatusCreated}, {"GET", collB, http.StatusOK}, {"PUT", collB + "/jobs/j", http.StatusForbidden},
			{"GET", collections("subB", "other"), http.StatusForbidden}, {"GET", collections("subC", "rg") + "/c", http.StatusForbidden},
		} {
			body := `{"properties": {}}`
			if strings.Contains(tt.path, "/jobs/") {
				body = dailyJob
			}
			if r := b.bearer(t, alice, tt.method, tt.path, body); r.status != tt.status {
				t.Fatalf("%s %s: status %d, want %d: %s", tt.method, tt.path, r.status, tt.status, r.body)
			}
		}
		if !logs.Contains(`msg="job collection created"`, "principal=oidc:alice") {
			t.Fatalf("the subject is not logged:\n%s", logs.String())
		}
	})
	t.Run("tokens that fail verification are 401", func(t *testing.T) {
		hour := time.Hour
		for name, token := range map[string]string{
			"another audience": sign(t, iss.key(), iss.claims("alice", []string{"operator:*"}, map[string]any{"aud": "someone-else"})),
			"another issuer":   sign(t, iss.key(), iss.claims("alice", []string{"operator:*"}, map[string]any{"iss": "https://issuer.example"})),
			"expired":          sign(t, iss.key(), iss.claims("alice", []string{"operator:*"}, map[string]any{"exp": time.Now().Add(-hour).Unix()})),
			"an unknown key":   sign(t, newSigningKey(t, "key-1"), iss.claims("alice", []string{"operator:*"})),
			"a key never seen": sign(t, newSigningKey(t, "stranger"), iss.claims("alice", []string{"operator:*"})),
			"no subject":       sign(t, iss.key(), iss.claims("", []string{"operator:*"})),
			"a changed claim":  changeClaims(t, alice, iss.claims("alice", []string{"operator:*"})),
			"not a JWT":        strings.Repeat("z", 40),
		} {
			r := b.bearer(t, token, "GET", collA, "")
			if r.status != http.StatusUnauthorized || r.errorCode(t) != codeAuthFailed {
				t.Errorf("%s: status %d: %s", name, r.status, r.body)
			}
		}
	})
	t.Run("after the issuer rotates its key, tokens of the new key are accepted", func(t *testing.T) {
		old := iss.key()
		k2 := iss.rotate(t, "key-2")
		if r := b.bearer(t, sign(t, k2, iss.claims("bob", []string{"reader:*"})), "GET", collA, ""); r.status != http.StatusOK {
			t.Fatalf("new key: status %d: %s", r.status, r.body)
		}
		if r := b.bearer(t, sign(t, old, iss.claims("bob", []string{"reader:*"})), "GET", collA, ""); r.status != http.StatusUnauthorized {
			t.Fatalf("retired key: status %d: %s", r.status, r.body)
		}
	})
	t.Run("the flat tokens still work beside it", func(t *testing.T) {
		if r := b.bearer(t, token1, "GET", collA, ""); r.status != http.StatusOK {
			t.Fatalf("status %d", r.status)
		}
	})
}

func TestOpenIDConnectScopesInOneString(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	b, _ := setupOIDC(t, iss, "scp")
	token := sign(t, iss.key(), iss.claims("svc", nil, map[string]any{"scp": "openid writer:/subscriptions/subA/resourceGroups/rg/jobCollections/c1"}))
	if r := b.bearer(t, token, "PUT", collections("subA", "rg")+"/c1", `{"properties": {}}`); r.status != http.StatusCreated {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if r := b.bearer(t, token, "PUT", collections("subA", "rg")+"/c2", `{"properties": {}}`); r.status != http.StatusForbidden {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

func TestAnIssuerThatCannotBeDiscoveredIs503(t *testing.T) {
	t.Parallel()
	iss := newTestIssuer(t)
	iss.mu.Lock()
	iss.down = true
	iss.mu.Unlock()
	b, logs := setupOIDC(t, iss, "")
	r := b.bearer(t, sign(t, iss.key(), iss.claims("alice", []string{"operator:*"})), "GET", collections("subA", "rg"), "")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), iss.srv.URL) || strings.Contains(string(r.body), "127.0.0.1") {
		t.Fatalf("the answer names the issuer's address: %s", r.body)
	}
	if !logs.Contains("level=WARN", "discovering the OpenID Connect issuer failed") {
		t.Fatalf("not logged:\n%s", logs.String())
	}
	if r := b.bearer(t, token1, "GET", collections("subA", "rg"), ""); r.status != http.StatusOK {
		t.Fatalf("a flat token while the issuer is down: status %d", r.status)
	}
}

func TestOIDCConfigNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		cfg  OIDCConfig
		says string
	}{
		{OIDCConfig{}, "issuer is required"},
		{OIDCConfig{Issuer: "issuer.example", Audience: "a"}, "is not an http(s) URL"},
		{OIDCConfig{Issuer: "https://issuer.example"}, "audience is required"},
	} {
		if _, err := NewOIDC(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.says)
		}
	}
}
