package httpaction_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/contracts"
)

func TestSendBasic(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		if !ok || user != "scheduler" || password != "s3cret-pass:word" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	s := setup(t, httpaction.Config{AllowLoopback: true})

	t.Run("sends the user name and password", func(t *testing.T) {
		t.Parallel()
		a := httpAction(tg.URL)
		a.Request.Authentication = &contracts.HTTPAuthentication{Type: contracts.HTTPAuthBasic, Username: "scheduler", Password: "s3cret-pass:word"}
		o := send(t, s, context.Background(), a, attempt())
		if !o.Succeeded {
			t.Errorf("Send = %+v", o)
		}
		assertNoSecrets(t, o, "s3cret-pass:word")
	})

	t.Run("replaces a user Authorization header", func(t *testing.T) {
		t.Parallel()
		a := httpAction(tg.URL)
		a.Request.Headers = map[string]string{"Authorization": "Bearer something-else"}
		a.Request.Authentication = &contracts.HTTPAuthentication{Type: "basic", Username: "scheduler", Password: "s3cret-pass:word"}
		if o := send(t, s, context.Background(), a, attempt()); !o.Succeeded {
			t.Errorf("Send = %+v", o)
		}
	})

	t.Run("fails with a wrong password without reporting it", func(t *testing.T) {
		t.Parallel()
		a := httpAction(tg.URL)
		a.Request.Authentication = &contracts.HTTPAuthentication{Type: contracts.HTTPAuthBasic, Username: "scheduler", Password: "wrong-password"}
		o := send(t, s, context.Background(), a, attempt())
		if o.Succeeded || o.StatusCode != http.StatusUnauthorized || o.Error != "401 Unauthorized" {
			t.Errorf("Send = %+v, want 401", o)
		}
		assertNoSecrets(t, o, "wrong-password")
	})

	t.Run("sends nothing for NotSpecified", func(t *testing.T) {
		t.Parallel()
		open := newTarget(t, nil)
		a := httpAction(open.URL)
		a.Request.Authentication = &contracts.HTTPAuthentication{Type: contracts.HTTPAuthNotSpecified}
		if o := send(t, s, context.Background(), a, attempt()); !o.Succeeded {
			t.Fatalf("Send = %+v", o)
		}
		if got := open.last(t).Header.Get("Authorization"); got != "" {
			t.Errorf("Authorization %q, want none", got)
		}
	})
}

func TestSendClientCertificate(t *testing.T) {
	t.Parallel()
	p := testPKI(t)
	const password = "pfx-password-42"
	pfx := p.pfx(t, password)
	certAction := func(uri, pfx, password string) *contracts.JobAction {
		a := httpAction(uri)
		a.Request.Authentication = &contracts.HTTPAuthentication{Type: contracts.HTTPAuthClientCertificate, Pfx: pfx, Password: password}
		return a
	}

	t.Run("presents the certificate to a target that requires one", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, true, nil)
		s := setup(t, httpaction.Config{AllowLoopback: true, RootCAs: p.pool})
		o := send(t, s, context.Background(), certAction(tg.URL, pfx, password), attempt())
		if !o.Succeeded || o.StatusCode != 200 {
			t.Fatalf("Send = %+v", o)
		}
		if cn := tg.last(t).ClientCN; cn != "scheduler-client" {
			t.Errorf("the target saw client certificate %q, want scheduler-client", cn)
		}
		assertNoSecrets(t, o, password, pfx)
	})

	t.Run("is refused by that target without a certificate", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, true, nil)
		s := setup(t, httpaction.Config{AllowLoopback: true, RootCAs: p.pool})
		o := send(t, s, context.Background(), httpAction(tg.URL), attempt())
		// The reason is usually the target's alert ("tls: certificate
		// required"), but a target that closes first gives a reset.
		if o.Succeeded || o.StatusCode != 0 || !strings.HasPrefix(o.Message, "Http Action - Request to host '127.0.0.1' failed: ") {
			t.Errorf("Send = %+v, want a failed handshake", o)
		}
	})

	t.Run("reuses the certificate's connection", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, true, nil)
		s := setup(t, httpaction.Config{AllowLoopback: true, RootCAs: p.pool})
		for i := range 4 {
			if o := send(t, s, context.Background(), certAction(tg.URL, pfx, password), attempt()); !o.Succeeded {
				t.Fatalf("send %d: %+v", i, o)
			}
		}
		if n := tg.newConns.Load(); n != 1 {
			t.Errorf("4 sends opened %d connections, want 1", n)
		}
	})

	t.Run("drops the least recently used certificate past the limit", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, true, nil)
		s := setup(t, httpaction.Config{AllowLoopback: true, RootCAs: p.pool, MaxClientCertificates: 1})
		// The same certificate under another password is another entry.
		other := p.pfx(t, "another-password")
		for i, a := range []*contracts.JobAction{
			certAction(tg.URL, pfx, password),
			certAction(tg.URL, other, "another-password"),
			certAction(tg.URL, pfx, password),
		} {
			if o := send(t, s, context.Background(), a, attempt()); !o.Succeeded {
				t.Fatalf("send %d: %+v", i, o)
			}
		}
		if n := tg.newConns.Load(); n != 3 {
			t.Errorf("3 alternating sends opened %d connections, want 3", n)
		}
		// Each eviction closed the dropped certificate's idle connection.
		waitFor(t, "the evicted connections to close", func() bool { return tg.closed.Load() == 2 })
	})

	t.Run("fails with a wrong password without reporting a secret", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, true, nil)
		s := setup(t, httpaction.Config{AllowLoopback: true, RootCAs: p.pool})
		o := send(t, s, context.Background(), certAction(tg.URL, pfx, "wrong-pfx-password"), attempt())
		want := "Http Action - Request to host '127.0.0.1' failed: the client certificate could not be read (wrong password or not a PFX file)"
		if o.Succeeded || o.Message != want || o.Error != "the client certificate could not be read (wrong password or not a PFX file)" {
			t.Errorf("Send = %+v, want message %q", o, want)
		}
		assertNoSecrets(t, o, "wrong-pfx-password", password, pfx)
		if n := tg.newConns.Load(); n != 0 {
			t.Errorf("the target saw %d connections, want 0", n)
		}
	})

	t.Run("fails with a file that is not a PFX", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, true, nil)
		s := setup(t, httpaction.Config{AllowLoopback: true, RootCAs: p.pool})
		for _, bad := range []string{"bm90IGEgcGZ4IGZpbGU=", "%%% not base64 %%%"} {
			o := send(t, s, context.Background(), certAction(tg.URL, bad, password), attempt())
			if o.Succeeded || !strings.HasSuffix(o.Message, "the client certificate could not be read (wrong password or not a PFX file)") {
				t.Errorf("Send = %+v, want an unreadable certificate", o)
			}
			assertNoSecrets(t, o, password, bad)
		}
	})

	t.Run("accepts a PFX broken over lines", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, true, nil)
		s := setup(t, httpaction.Config{AllowLoopback: true, RootCAs: p.pool})
		var wrapped strings.Builder
		for rest := pfx; rest != ""; {
			n := min(64, len(rest))
			wrapped.WriteString(rest[:n] + "\r\n")
			rest = rest[n:]
		}
		if o := send(t, s, context.Background(), certAction(tg.URL, wrapped.String(), password), attempt()); !o.Succeeded {
			t.Errorf("Send = %+v", o)
		}
	})

	t.Run("needs an https URI", func(t *testing.T) {
		t.Parallel()
		tg := newTarget(t, nil)
		s := setup(t, httpaction.Config{AllowLoopback: true})
		o := send(t, s, context.Background(), certAction(tg.URL, pfx, password), attempt())
		want := "Http Action - Request to host '127.0.0.1' failed: a client certificate needs an https URI"
		if o.Succeeded || o.Message != want || len(tg.received()) != 0 {
			t.Errorf("Send = %+v, want message %q", o, want)
		}
	})

	t.Run("obeys the address policy", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, true, nil)
		s := setup(t, httpaction.Config{RootCAs: p.pool})
		o := send(t, s, context.Background(), certAction(tg.URL, pfx, password), attempt())
		if o.Succeeded || !strings.HasSuffix(o.Message, "refused by the address policy: 127.0.0.1 is a loopback address") {
			t.Errorf("Send = %+v, want a loopback refusal", o)
		}
	})
}
