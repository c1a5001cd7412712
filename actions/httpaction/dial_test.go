package httpaction_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/actions/netpolicy/netpolicytest"
)

func TestSendAddressPolicy(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	port := mustURL(t, tg.URL).Port()

	// Refused addresses are refused before a connection is attempted, so
	// nothing needs to listen at them; the deadline only keeps a broken
	// policy from hanging the test.
	send := func(t *testing.T, cfg httpaction.Config, uri string) (ok bool, message, short string) {
		t.Helper()
		s := setup(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o := send(t, s, ctx, httpAction(uri), attempt())
		return o.Succeeded, o.Message, o.Error
	}

	t.Run("refuses loopback by default", func(t *testing.T) {
		t.Parallel()
		ok, msg, short := send(t, httpaction.Config{}, tg.URL)
		want := "Http Action - Request to host '127.0.0.1' failed: refused by the address policy: 127.0.0.1 is a loopback address"
		if ok || msg != want || short != "refused by the address policy: 127.0.0.1 is a loopback address" {
			t.Errorf("got %v %q %q, want message %q", ok, msg, short, want)
		}
	})

	t.Run("allows loopback when configured", func(t *testing.T) {
		t.Parallel()
		if ok, msg, _ := send(t, httpaction.Config{AllowLoopback: true}, tg.URL); !ok {
			t.Errorf("refused: %s", msg)
		}
	})

	t.Run("refuses localhost by default", func(t *testing.T) {
		t.Parallel()
		ok, msg, _ := send(t, httpaction.Config{}, "http://localhost:"+port+"/")
		if ok || !strings.HasPrefix(msg, "Http Action - Request to host 'localhost' failed: refused by the address policy: ") ||
			!strings.HasSuffix(msg, " is a loopback address") {
			t.Errorf("got %v %q, want a loopback refusal", ok, msg)
		}
	})

	t.Run("refuses an IPv4-mapped loopback address", func(t *testing.T) {
		t.Parallel()
		ok, msg, _ := send(t, httpaction.Config{}, "http://[::ffff:127.0.0.1]:"+port+"/")
		if ok || !strings.HasSuffix(msg, "refused by the address policy: 127.0.0.1 is a loopback address") {
			t.Errorf("got %v %q, want a loopback refusal", ok, msg)
		}
	})

	t.Run("refuses the metadata address even when everything else is allowed", func(t *testing.T) {
		t.Parallel()
		ok, msg, _ := send(t, httpaction.Config{AllowLoopback: true, AllowPrivate: true}, "http://169.254.169.254/metadata/instance")
		want := "Http Action - Request to host '169.254.169.254' failed: refused by the address policy: 169.254.169.254 is a cloud metadata address"
		if ok || msg != want {
			t.Errorf("got %v %q, want %q", ok, msg, want)
		}
	})

	t.Run("refuses a private address by default", func(t *testing.T) {
		t.Parallel()
		ok, msg, _ := send(t, httpaction.Config{AllowLoopback: true}, "https://10.1.2.3:8443/")
		want := "Http Action - Request to host '10.1.2.3' failed: refused by the address policy: 10.1.2.3 is a private address"
		if ok || msg != want {
			t.Errorf("got %v %q, want %q", ok, msg, want)
		}
	})

	t.Run("refuses the unspecified address, which reaches the host itself", func(t *testing.T) {
		t.Parallel()
		ok, msg, _ := send(t, httpaction.Config{AllowLoopback: true, AllowPrivate: true}, "http://0.0.0.0:"+port+"/")
		if ok || !strings.HasSuffix(msg, "refused by the address policy: 0.0.0.0 is an unspecified address") {
			t.Errorf("got %v %q, want an unspecified-address refusal", ok, msg)
		}
	})

	t.Run("opens no connection to a refused address", func(t *testing.T) {
		t.Parallel()
		refused := newTarget(t, nil)
		send(t, httpaction.Config{}, refused.URL)
		if n := refused.newConns.Load(); n != 0 {
			t.Errorf("the target saw %d connections, want 0", n)
		}
	})
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Regression: an unresolvable name put the resolver's address in history.
func TestSendUnresolvableNameNamesNoResolver(t *testing.T) {
	t.Parallel()
	s := setup(t, httpaction.Config{Resolver: netpolicytest.FailingResolver{}})
	o := send(t, s, context.Background(), httpAction("https://no-such-host.example/run"), attempt())
	want := "Http Action - Request to host 'no-such-host.example' failed: the name no-such-host.example could not be resolved"
	if o.Succeeded || o.Message != want {
		t.Errorf("message %q, want %q", o.Message, want)
	}
	for _, text := range []string{o.Message, o.Error, o.Response} {
		if strings.Contains(text, netpolicytest.ResolverAddress) {
			t.Errorf("the outcome names the resolver: %q", text)
		}
	}
}
