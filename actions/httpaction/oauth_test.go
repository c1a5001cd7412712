package httpaction_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/contracts"
)

const (
	tenant   = "contoso.onmicrosoft.com"
	audience = "https://management.core.windows.net/"
	clientID = "11111111-2222-3333-4444-555555555555"
	secret   = "oauth-client-secret-XYZ"
)

// clients are the client ids the token endpoint knows, with their secrets.
var clients = map[string]string{clientID: secret, "other-client": "other-client-secret"}

// tokenFor returns the access token the endpoint issues on its nth request.
func tokenFor(n int) string {
	return fmt.Sprintf("eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.access-token-%d", n)
}

// answerWith returns a successful answer whose lifetime fields are fields
// (a JSON fragment such as `"expires_in":3600`).
func answerWith(fields string) func(n int) (int, string) {
	return func(n int) (int, string) {
		return http.StatusOK, fmt.Sprintf(`{"token_type":"Bearer",%s,"resource":%q,"access_token":%q}`, fields, audience, tokenFor(n))
	}
}

// tokenEndpoint is an Azure AD v1 token endpoint on loopback. It checks
// the form of each request and counts them.
type tokenEndpoint struct {
	*httptest.Server
	requests atomic.Int32
	// release, when not nil, holds every request until it is closed.
	release chan struct{}
}

func newTokenEndpoint(t *testing.T, answer func(n int) (int, string)) *tokenEndpoint {
	t.Helper()
	te := &tokenEndpoint{}
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(te.requests.Add(1))
		if err := r.ParseForm(); err != nil {
			t.Errorf("token request: %v", err)
		}
		id := r.PostForm.Get("client_id")
		for _, problem := range []struct {
			bad  bool
			what string
		}{
			{r.Method != http.MethodPost, "method " + r.Method},
			{r.URL.Path != "/"+tenant+"/oauth2/token", "path " + r.URL.Path},
			{r.Header.Get("Content-Type") != "application/x-www-form-urlencoded", "content type " + r.Header.Get("Content-Type")},
			{r.PostForm.Get("grant_type") != "client_credentials", "grant_type " + r.PostForm.Get("grant_type")},
			{clients[id] == "", "client_id " + id},
			{r.PostForm.Get("client_secret") != clients[id], "client_secret"},
			{r.PostForm.Get("resource") != audience, "resource " + r.PostForm.Get("resource")},
			{r.URL.RawQuery != "", "a query string"},
		} {
			if problem.bad {
				t.Errorf("token request with the wrong %s", problem.what)
				http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
				return
			}
		}
		if te.release != nil {
			<-te.release
		}
		status, body := answer(n)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(te.Close)
	return te
}

// oauthTarget accepts any bearer token and echoes it back, to show that
// history does not keep it.
func oauthTarget(t *testing.T) *target {
	return newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
		}
		w.Header().Set("X-Echo", auth)
		fmt.Fprintf(w, "you sent %s", auth)
	})
}

func oauthAction(uri, id, clientSecret string) *contracts.JobAction {
	a := httpAction(uri)
	a.Request.Authentication = &contracts.HTTPAuthentication{
		Type: contracts.HTTPAuthActiveDirectoryOAuth, Tenant: tenant, Audience: audience, ClientID: id, Secret: clientSecret,
	}
	return a
}

// bearers returns the Authorization headers the target received, in order.
func bearers(tg *target) []string {
	var out []string
	for _, r := range tg.received() {
		out = append(out, r.Header.Get("Authorization"))
	}
	return out
}

func TestSendOAuth(t *testing.T) {
	t.Parallel()

	t.Run("fetches one token and reuses it", func(t *testing.T) {
		t.Parallel()
		te := newTokenEndpoint(t, answerWith(`"expires_in":"3599","expires_on":"0"`))
		tg := oauthTarget(t)
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL, Now: newFakeClock().Now})
		for i := range 5 {
			o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt())
			if !o.Succeeded {
				t.Fatalf("send %d: %+v", i, o)
			}
			assertNoSecrets(t, o, secret, tokenFor(1))
		}
		if n := te.requests.Load(); n != 1 {
			t.Errorf("5 sends made %d token requests, want 1", n)
		}
		for i, got := range bearers(tg) {
			if got != "Bearer "+tokenFor(1) {
				t.Errorf("request %d had Authorization %q", i, got)
			}
		}
	})

	t.Run("keeps a token per credential", func(t *testing.T) {
		t.Parallel()
		te := newTokenEndpoint(t, answerWith(`"expires_in":3600`))
		tg := oauthTarget(t)
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL + "/", Now: newFakeClock().Now})
		for range 2 {
			send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt())
			send(t, s, context.Background(), oauthAction(tg.URL, "other-client", "other-client-secret"), attempt())
		}
		if n := te.requests.Load(); n != 2 {
			t.Errorf("two credentials made %d token requests, want 2", n)
		}
	})

	for _, tc := range []struct {
		name   string
		fields func(now time.Time) string
		// fresh is how long the token is used; stale is when it is
		// replaced.
		fresh, stale time.Duration
	}{
		{"replaces a token five minutes before it expires",
			func(time.Time) string { return `"expires_in":3600` }, 54 * time.Minute, 56 * time.Minute},
		{"reads expires_in written as a string",
			func(time.Time) string { return `"expires_in":"3600"` }, 54 * time.Minute, 56 * time.Minute},
		{"replaces a short-lived token halfway through its life",
			func(time.Time) string { return `"expires_in":"120"` }, 59 * time.Second, 61 * time.Second},
		{"reads expires_on when there is no expires_in",
			func(now time.Time) string { return fmt.Sprintf(`"expires_on":"%d"`, now.Add(time.Hour).Unix()) }, 54 * time.Minute, 56 * time.Minute},
		{"reads expires_on written as a number",
			func(now time.Time) string { return fmt.Sprintf(`"expires_on":%d`, now.Add(time.Hour).Unix()) }, 54 * time.Minute, 56 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			start := clock.Now()
			te := newTokenEndpoint(t, func(n int) (int, string) { return answerWith(tc.fields(start))(n) })
			tg := oauthTarget(t)
			s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL, Now: clock.Now})
			send := func() {
				t.Helper()
				if o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt()); !o.Succeeded {
					t.Fatalf("Send = %+v", o)
				}
			}
			send()
			clock.Advance(tc.fresh)
			send()
			if n := te.requests.Load(); n != 1 {
				t.Fatalf("after %s: %d token requests, want 1", tc.fresh, n)
			}
			clock.Advance(tc.stale - tc.fresh)
			send()
			if n := te.requests.Load(); n != 2 {
				t.Fatalf("after %s: %d token requests, want 2", tc.stale, n)
			}
			got := bearers(tg)
			if want := "Bearer " + tokenFor(2); got[len(got)-1] != want {
				t.Errorf("the last request had Authorization %q, want %q", got[len(got)-1], want)
			}
		})
	}

	t.Run("makes one token request for concurrent sends", func(t *testing.T) {
		t.Parallel()
		te := newTokenEndpoint(t, answerWith(`"expires_in":3600`))
		te.release = make(chan struct{})
		tg := oauthTarget(t)
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL, Now: newFakeClock().Now})
		const senders = 20
		var wg sync.WaitGroup
		var failed atomic.Int32
		for range senders {
			wg.Go(func() {
				if o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt()); !o.Succeeded {
					failed.Add(1)
				}
			})
		}
		waitFor(t, "the token request", func() bool { return te.requests.Load() == 1 })
		close(te.release)
		wg.Wait()
		if n := failed.Load(); n != 0 {
			t.Errorf("%d sends failed", n)
		}
		if n := te.requests.Load(); n != 1 {
			t.Errorf("%d concurrent sends made %d token requests, want 1", senders, n)
		}
	})

	t.Run("asks for a new token after the target refuses one", func(t *testing.T) {
		t.Parallel()
		te := newTokenEndpoint(t, answerWith(`"expires_in":3600`))
		var calls atomic.Int32
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.WriteHeader(http.StatusUnauthorized)
			}
		})
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL, Now: newFakeClock().Now})
		if o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt()); o.Succeeded || o.StatusCode != 401 {
			t.Fatalf("first send = %+v, want 401", o)
		}
		if o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt()); !o.Succeeded {
			t.Fatalf("second send = %+v", o)
		}
		if got := bearers(tg); got[1] != "Bearer "+tokenFor(2) {
			t.Errorf("the second request had Authorization %q, want a new token", got[1])
		}
	})
}

func TestSendOAuthFailures(t *testing.T) {
	t.Parallel()

	t.Run("reports the token endpoint's refusal without the secret", func(t *testing.T) {
		t.Parallel()
		te := newTokenEndpoint(t, func(int) (int, string) {
			// The description quotes the secret, to show it is scrubbed.
			return http.StatusUnauthorized, `{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided: ` +
				secret + `.\r\nTrace ID: 0000\r\nCorrelation ID: 1111","error_codes":[7000215]}`
		})
		tg := oauthTarget(t)
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL, Now: newFakeClock().Now})
		o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt())
		host := mustURL(t, te.URL).Host
		reason := "the token request to '" + host + "' failed: 401 Unauthorized (invalid_client: AADSTS7000215: Invalid client secret provided: [REDACTED].)"
		if o.Succeeded || o.Message != "Http Action - Request to host '127.0.0.1' failed: "+reason || o.Error != reason {
			t.Errorf("Send = %+v, want reason %q", o, reason)
		}
		assertNoSecrets(t, o, secret)
		if n := len(tg.received()); n != 0 {
			t.Errorf("the target got %d requests, want 0", n)
		}
	})

	t.Run("does not keep a failure", func(t *testing.T) {
		t.Parallel()
		te := newTokenEndpoint(t, func(n int) (int, string) {
			if n == 1 {
				return http.StatusServiceUnavailable, `{}`
			}
			return answerWith(`"expires_in":3600`)(n)
		})
		tg := oauthTarget(t)
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL, Now: newFakeClock().Now})
		if o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt()); o.Succeeded || !strings.HasSuffix(o.Error, "failed: 503 Service Unavailable") {
			t.Errorf("first send = %+v, want a 503 from the token endpoint", o)
		}
		if o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt()); !o.Succeeded {
			t.Errorf("second send = %+v", o)
		}
	})

	t.Run("reports an answer without a token", func(t *testing.T) {
		t.Parallel()
		te := newTokenEndpoint(t, func(int) (int, string) { return http.StatusOK, `{"token_type":"Bearer","expires_in":"3600"}` })
		tg := oauthTarget(t)
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL})
		o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt())
		if o.Succeeded || !strings.HasSuffix(o.Message, "failed: the answer holds no access token") {
			t.Errorf("Send = %+v", o)
		}
	})

	t.Run("reports an authority that cannot be reached", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		tg := oauthTarget(t)
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: "http://" + addr})
		o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt())
		want := "Http Action - Request to host '127.0.0.1' failed: the token request to '" + addr + "' failed: connection refused"
		if o.Succeeded || o.Message != want {
			t.Errorf("Send = %+v, want message %q", o, want)
		}
		assertNoSecrets(t, o, secret)
	})

	t.Run("times out waiting for a token", func(t *testing.T) {
		t.Parallel()
		te := newTokenEndpoint(t, answerWith(`"expires_in":3600`))
		te.release = make(chan struct{})
		t.Cleanup(func() { close(te.release) }) // runs before the endpoint closes
		tg := oauthTarget(t)
		s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL, Timeout: 100 * time.Millisecond})
		o := send(t, s, context.Background(), oauthAction(tg.URL, clientID, secret), attempt())
		// The attempt's deadline and the token request's own timeout are
		// both 100ms; either may be reported.
		if o.Succeeded || !strings.HasPrefix(o.Message, "Http Action - Request to host '127.0.0.1' failed: ") ||
			!strings.HasSuffix(o.Message, "timed out after 100ms") {
			t.Errorf("Send = %+v, want a timeout", o)
		}
	})
}

// Regression: a tenant of ".." sent the token request to
// <authority>/../oauth2/token. It is refused before any request.
func TestSendOAuthRefusesATenantThatIsNoTenant(t *testing.T) {
	t.Parallel()
	te := newTokenEndpoint(t, answerWith(`"expires_in":3600`))
	tg := oauthTarget(t)
	s := setup(t, httpaction.Config{AllowLoopback: true, OAuthAuthority: te.URL + "/base"})
	for _, bad := range []string{"..", "../common", "a/b", "%2e%2e", "."} {
		a := oauthAction(tg.URL, clientID, secret)
		a.Request.Authentication.Tenant = bad
		o := send(t, s, context.Background(), a, attempt())
		if o.Succeeded || !strings.Contains(o.Message, "the tenant is not a tenant id (GUID) or a domain name") {
			t.Errorf("tenant %q: %+v, want a failure naming the tenant rule", bad, o)
		}
	}
	if n := te.requests.Load(); n != 0 {
		t.Errorf("the token endpoint got %d requests, want 0", n)
	}
	if n := len(tg.received()); n != 0 {
		t.Errorf("the target got %d requests, want 0", n)
	}
}

// The token request goes through the address policy: an authority on
// loopback is reached only when loopback is allowed.
func TestSendOAuthTokenRequestFollowsTheAddressPolicy(t *testing.T) {
	t.Parallel()
	te := newTokenEndpoint(t, answerWith(`"expires_in":3600`))
	s := setup(t, httpaction.Config{OAuthAuthority: te.URL})
	o := send(t, s, context.Background(), oauthAction("https://example.com/", clientID, secret), attempt())
	want := "the token request to '" + strings.TrimPrefix(te.URL, "http://") + "' failed: refused by the address policy: 127.0.0.1 is a loopback address"
	if o.Succeeded || !strings.HasSuffix(o.Message, want) {
		t.Errorf("outcome %+v, want a message ending %q", o, want)
	}
	if n := te.requests.Load(); n != 0 {
		t.Errorf("the token endpoint got %d requests, want 0", n)
	}
}
