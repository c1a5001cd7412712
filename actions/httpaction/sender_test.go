package httpaction_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/httpaction"
	"github.com/jobscheduler/scheduler/contracts"
)

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("fills in the defaults", func(t *testing.T) {
		t.Parallel()
		if _, err := httpaction.New(httpaction.Config{}); err != nil {
			t.Fatalf("New with a zero Config: %v", err)
		}
	})

	for _, tc := range []struct {
		name  string
		cfg   httpaction.Config
		field string
	}{
		{"rejects an authority that is not a URL", httpaction.Config{OAuthAuthority: "login.example.com"}, "Config.OAuthAuthority"},
		{"rejects an authority with a query", httpaction.Config{OAuthAuthority: "https://login.example.com/?x=1"}, "Config.OAuthAuthority"},
		{"rejects a negative timeout", httpaction.Config{Timeout: -time.Second}, "Config.Timeout"},
		{"rejects a negative idle connection count", httpaction.Config{MaxIdleConnsPerHost: -1}, "Config.MaxIdleConnsPerHost"},
		{"rejects a negative certificate count", httpaction.Config{MaxClientCertificates: -1}, "Config.MaxClientCertificates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := httpaction.New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New(%+v) = %v, want an error naming %s", tc.cfg, err, tc.field)
			}
		})
	}
}

func TestSendHeaders(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	s := setup(t, httpaction.Config{AllowLoopback: true})
	at := attempt()

	t.Run("sends every scheduler header", func(t *testing.T) {
		if o := send(t, s, context.Background(), httpAction(tg.URL), at); !o.Succeeded {
			t.Fatalf("Send: %+v", o)
		}
		h := tg.last(t).Header
		want := map[string]string{
			"x-ms-scheduler-jobid":                   "job1",
			"x-ms-scheduler-jobcollectionid":         "jc1",
			"x-ms-scheduler-expected-execution-time": "2024-05-06T07:08:09",
			"x-ms-scheduler-execution-tag":           "0123456789abcdef0123456789abcdef",
			"x-ms-client-request-id":                 "01234567-89ab-cdef-0123-456789abcdef",
			"Idempotency-Key":                        "0123456789abcdef0123456789abcdef",
			"traceparent":                            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		}
		for name, value := range want {
			if got := h.Values(name); len(got) != 1 || got[0] != value {
				t.Errorf("header %s = %q, want [%q]", name, got, value)
			}
		}
		if got := h.Get("Idempotency-Key"); got != at.ID {
			t.Errorf("Idempotency-Key = %q, want the attempt id %q", got, at.ID)
		}
	})

	t.Run("sends the same idempotency key when an attempt is sent again", func(t *testing.T) {
		send(t, s, context.Background(), httpAction(tg.URL), at)
		send(t, s, context.Background(), httpAction(tg.URL), at)
		reqs := tg.received()
		first, second := reqs[len(reqs)-2].Header, reqs[len(reqs)-1].Header
		for _, name := range []string{"Idempotency-Key", "x-ms-scheduler-execution-tag", "x-ms-client-request-id"} {
			if first.Get(name) == "" || first.Get(name) != second.Get(name) {
				t.Errorf("%s: first %q, second %q; want the same", name, first.Get(name), second.Get(name))
			}
		}
	})

	t.Run("leaves traceparent out when the attempt has no trace", func(t *testing.T) {
		noTrace := at
		noTrace.TraceParent = ""
		send(t, s, context.Background(), httpAction(tg.URL), noTrace)
		if got := tg.last(t).Header.Values("traceparent"); len(got) != 0 {
			t.Errorf("traceparent = %q, want none", got)
		}
	})

	t.Run("replaces a user header that claims to be a scheduler header", func(t *testing.T) {
		a := httpAction(tg.URL)
		a.Request.Headers = map[string]string{"X-MS-Scheduler-JobId": "spoofed", "idempotency-key": "spoofed"}
		send(t, s, context.Background(), a, at)
		h := tg.last(t).Header
		if got := h.Values("x-ms-scheduler-jobid"); len(got) != 1 || got[0] != "job1" {
			t.Errorf("x-ms-scheduler-jobid = %q, want [job1]", got)
		}
		if got := h.Values("Idempotency-Key"); len(got) != 1 || got[0] != at.ID {
			t.Errorf("Idempotency-Key = %q, want [%s]", got, at.ID)
		}
	})
}

func TestSendRequest(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	s := setup(t, httpaction.Config{AllowLoopback: true})

	t.Run("sends the method, body and user headers", func(t *testing.T) {
		a := httpAction(tg.URL + "/some-method?x=1")
		a.Request.Method = "PUT"
		a.Request.Body = `{"posting":"from a timer"}`
		a.Request.Headers = map[string]string{"Content-Type": "application/json", "X-Custom": "custom value"}
		if o := send(t, s, context.Background(), a, attempt()); !o.Succeeded {
			t.Fatalf("Send: %+v", o)
		}
		got := tg.last(t)
		if got.Method != "PUT" || got.Path != "/some-method" || got.Body != `{"posting":"from a timer"}` {
			t.Errorf("target got %s %s with body %q", got.Method, got.Path, got.Body)
		}
		if ct, custom := got.Header.Get("Content-Type"), got.Header.Get("X-Custom"); ct != "application/json" || custom != "custom value" {
			t.Errorf("Content-Type %q, X-Custom %q", ct, custom)
		}
	})

	t.Run("writes a standard method in upper case", func(t *testing.T) {
		a := httpAction(tg.URL)
		a.Request.Method = "post"
		a.Request.Body = "x"
		send(t, s, context.Background(), a, attempt())
		if got := tg.last(t).Method; got != "POST" {
			t.Errorf("method %q, want POST", got)
		}
	})

	t.Run("sends the user's Host header as the request's host", func(t *testing.T) {
		a := httpAction(tg.URL)
		a.Request.Headers = map[string]string{"host": "api.example.test"}
		send(t, s, context.Background(), a, attempt())
		if got := tg.last(t).Host; got != "api.example.test" {
			t.Errorf("Host %q, want api.example.test", got)
		}
	})

	t.Run("sends a HEAD request", func(t *testing.T) {
		a := httpAction(tg.URL)
		a.Request.Method = "HEAD"
		if o := send(t, s, context.Background(), a, attempt()); !o.Succeeded || o.StatusCode != 200 {
			t.Errorf("Send: %+v", o)
		}
	})

	t.Run("accepts the action type in any case", func(t *testing.T) {
		a := httpAction(tg.URL)
		a.Type = "http"
		if o := send(t, s, context.Background(), a, attempt()); !o.Succeeded {
			t.Errorf("Send: %+v", o)
		}
	})
}

func TestSendInvalidActions(t *testing.T) {
	t.Parallel()
	s := setup(t, httpaction.Config{AllowLoopback: true})
	for _, tc := range []struct {
		name    string
		action  *contracts.JobAction
		message string
	}{
		{"fails an action without a request", &contracts.JobAction{Type: contracts.ActionHTTP},
			"Http Action - Request failed: the action carries no request"},
		{"fails an action of another type", &contracts.JobAction{Type: contracts.ActionStorageQueue, Request: &contracts.HTTPRequest{URI: "http://127.0.0.1/"}},
			`Http Action - Request failed: action type "StorageQueue" is not Http or Https`},
		{"fails a relative URI without quoting it", &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{URI: "/path?code=key1234"}},
			"Http Action - Request failed: the URI is not an absolute http or https URI"},
		{"fails an Https action to an http URI", &contracts.JobAction{Type: contracts.ActionHTTPS, Request: &contracts.HTTPRequest{URI: "http://127.0.0.1/"}},
			"Http Action - Request to host '127.0.0.1' failed: an Https action needs an https URI"},
		{"fails an invalid method", &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{URI: "http://127.0.0.1/", Method: "GE T"}},
			`Http Action - Request to host '127.0.0.1' failed: "GE T" is not a valid HTTP method`},
		{"fails an unknown authentication type", &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{
			URI: "http://127.0.0.1/", Authentication: &contracts.HTTPAuthentication{Type: "Kerberos"}}},
			`Http Action - Request to host '127.0.0.1' failed: authentication type "Kerberos" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := send(t, s, context.Background(), tc.action, attempt())
			if o.Succeeded || o.Message != tc.message || o.Error == "" {
				t.Errorf("Send = %+v, want a failure with message %q", o, tc.message)
			}
			assertNoSecrets(t, o, "key1234")
		})
	}
}

func TestSendStatus(t *testing.T) {
	t.Parallel()
	elsewhereHits := 0
	var mu sync.Mutex
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/accepted":
			w.WriteHeader(http.StatusAccepted)
		case "/no-content":
			w.WriteHeader(http.StatusNoContent)
		case "/fail":
			http.Error(w, "something broke", http.StatusInternalServerError)
		case "/not-found":
			http.NotFound(w, r)
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/elsewhere":
			mu.Lock()
			elsewhereHits++
			mu.Unlock()
		case "/custom":
			w.WriteHeader(599)
		}
	})
	s := setup(t, httpaction.Config{AllowLoopback: true})

	for _, tc := range []struct {
		name      string
		path      string
		succeeded bool
		status    int
		err       string
	}{
		{"counts 200 as success", "/ok", true, 200, ""},
		{"counts 202 as success", "/accepted", true, 202, ""},
		{"counts 204 as success", "/no-content", true, 204, ""},
		{"counts 500 as failure", "/fail", false, 500, "500 Internal Server Error"},
		{"counts 404 as failure", "/not-found", false, 404, "404 Not Found"},
		{"counts a redirect as failure without following it", "/redirect", false, 302, "302 Found: redirect to /elsewhere not followed"},
		{"counts a non-standard status as failure", "/custom", false, 599, "599 status code 599"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := send(t, s, context.Background(), httpAction(tg.URL+tc.path), attempt())
			if o.Succeeded != tc.succeeded || o.StatusCode != tc.status || o.Error != tc.err {
				t.Errorf("Send = %+v, want succeeded %v, status %d, error %q", o, tc.succeeded, tc.status, tc.err)
			}
		})
	}

	t.Run("reports the redirect's location in the message", func(t *testing.T) {
		t.Parallel()
		o := send(t, s, context.Background(), httpAction(tg.URL+"/redirect"), attempt())
		if !strings.Contains(o.Message, "Location: /elsewhere\r\n") || !strings.HasPrefix(o.Message, "Http Action - Response from host '127.0.0.1': 'Found'") {
			t.Errorf("message %q", o.Message)
		}
	})

	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if elsewhereHits != 0 {
			t.Errorf("the redirect was followed %d times", elsewhereHits)
		}
	})
}

func TestSendMessage(t *testing.T) {
	t.Parallel()
	longBody := strings.Repeat("a", actions.MaxResponseBytes-1) + "é and more"
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Date"] = nil // keep the message predictable
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Zeta", "last")
		h["X-Alpha"] = []string{"one", "two"}
		switch r.URL.Path {
		case "/long":
			fmt.Fprint(w, longBody)
		case "/error":
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "it broke")
		default:
			fmt.Fprint(w, "hello")
		}
	})
	s := setup(t, httpaction.Config{AllowLoopback: true})

	t.Run("records the response as the original service did", func(t *testing.T) {
		t.Parallel()
		o := send(t, s, context.Background(), httpAction(tg.URL+"/"), attempt())
		want := "Http Action - Response from host '127.0.0.1': 'OK' Response Headers: " +
			"Content-Length: 5\r\nContent-Type: text/plain; charset=utf-8\r\nX-Alpha: one, two\r\nX-Zeta: last\r\n" +
			" Body: hello"
		if o.Message != want {
			t.Errorf("message\n got %q\nwant %q", o.Message, want)
		}
		if o.Response != "hello" || o.StatusCode != 200 || !o.Succeeded || o.Error != "" {
			t.Errorf("outcome %+v", o)
		}
	})

	t.Run("records a failed response the same way", func(t *testing.T) {
		t.Parallel()
		o := send(t, s, context.Background(), httpAction(tg.URL+"/error"), attempt())
		want := "Http Action - Response from host '127.0.0.1': 'Internal Server Error' Response Headers: " +
			"Content-Length: 8\r\nContent-Type: text/plain; charset=utf-8\r\nX-Alpha: one, two\r\nX-Zeta: last\r\n" +
			" Body: it broke"
		if o.Message != want || o.Error != "500 Internal Server Error" || o.Response != "it broke" {
			t.Errorf("outcome %+v, want message %q", o, want)
		}
	})

	t.Run("cuts the body at 2,048 bytes on a character boundary", func(t *testing.T) {
		t.Parallel()
		o := send(t, s, context.Background(), httpAction(tg.URL+"/long"), attempt())
		// "é" takes bytes 2047 and 2048: it does not fit, and is not split.
		if len(o.Response) != actions.MaxResponseBytes-1 || !utf8.ValidString(o.Response) {
			t.Errorf("response has %d bytes (valid UTF-8: %v), want %d", len(o.Response), utf8.ValidString(o.Response), actions.MaxResponseBytes-1)
		}
		if !strings.HasSuffix(o.Message, " Body: "+o.Response) {
			t.Errorf("the message does not end with the cut body")
		}
	})
}

func TestSendTimeout(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	t.Cleanup(func() { close(stop) }) // runs before the target closes

	t.Run("fails after the configured timeout when the context has no deadline", func(t *testing.T) {
		t.Parallel()
		s := setup(t, httpaction.Config{AllowLoopback: true, Timeout: 100 * time.Millisecond})
		o := send(t, s, context.Background(), httpAction(tg.URL), attempt())
		want := "Http Action - Request to host '127.0.0.1' failed: timed out after 100ms"
		if o.Succeeded || o.StatusCode != 0 || o.Message != want || o.Error != "timeout after 100ms" {
			t.Errorf("Send = %+v, want message %q", o, want)
		}
	})

	t.Run("fails at the context's deadline", func(t *testing.T) {
		t.Parallel()
		s := setup(t, httpaction.Config{AllowLoopback: true})
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		o := send(t, s, ctx, httpAction(tg.URL), attempt())
		if o.Succeeded || !strings.HasPrefix(o.Message, "Http Action - Request to host '127.0.0.1' failed: timed out after 1") ||
			!strings.HasPrefix(o.Error, "timeout after ") {
			t.Errorf("Send = %+v, want a timeout", o)
		}
	})

	t.Run("reports a cancelled attempt", func(t *testing.T) {
		t.Parallel()
		s := setup(t, httpaction.Config{AllowLoopback: true})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		o := send(t, s, ctx, httpAction(tg.URL), attempt())
		if o.Succeeded || o.Error != "canceled" {
			t.Errorf("Send = %+v, want canceled", o)
		}
	})
}

func TestSendConnectionErrors(t *testing.T) {
	t.Parallel()
	s := setup(t, httpaction.Config{AllowLoopback: true})

	t.Run("reports a refused connection", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		o := send(t, s, context.Background(), httpAction("http://"+addr+"/"), attempt())
		want := "Http Action - Request to host '127.0.0.1' failed: connection refused"
		if o.Succeeded || o.Message != want || o.Error != "connection refused" {
			t.Errorf("Send = %+v, want message %q", o, want)
		}
	})

	t.Run("reports a target that closes the connection without answering", func(t *testing.T) {
		t.Parallel()
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		})
		o := send(t, s, context.Background(), httpAction(tg.URL), attempt())
		want := "Http Action - Request to host '127.0.0.1' failed: the target closed the connection without answering"
		if o.Succeeded || o.Message != want {
			t.Errorf("Send = %+v, want message %q", o, want)
		}
	})

	t.Run("reports a target whose certificate is not trusted", func(t *testing.T) {
		t.Parallel()
		tg := newTLSTarget(t, false, nil)
		// The sender trusts the system roots only.
		o := send(t, s, context.Background(), httpAction(tg.URL), attempt())
		want := "Http Action - Request to host '127.0.0.1' failed: the target's certificate is not trusted: it is signed by an unknown authority"
		if o.Succeeded || o.Message != want || len(tg.received()) != 0 {
			t.Errorf("Send = %+v, want message %q", o, want)
		}
	})
}

func TestSendHTTPS(t *testing.T) {
	t.Parallel()
	tg := newTLSTarget(t, false, nil)
	s := setup(t, httpaction.Config{AllowLoopback: true, RootCAs: testPKI(t).pool})
	o := send(t, s, context.Background(), httpAction(tg.URL), attempt())
	if !o.Succeeded || o.StatusCode != 200 {
		t.Fatalf("Send = %+v", o)
	}
}

func TestSendReusesConnections(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 10*actions.MaxResponseBytes)
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			fmt.Fprint(w, big)
		}
	})
	s := setup(t, httpaction.Config{AllowLoopback: true})
	for i := range 5 {
		for _, path := range []string{"/", "/big"} {
			if o := send(t, s, context.Background(), httpAction(tg.URL+path), attempt()); !o.Succeeded {
				t.Fatalf("send %d to %s: %+v", i, path, o)
			}
		}
	}
	if n := tg.newConns.Load(); n != 1 {
		t.Errorf("10 sequential sends opened %d connections, want 1", n)
	}
}

func TestSendScrubsEchoedSecrets(t *testing.T) {
	t.Parallel()
	// A target that echoes the request's credentials back, as some debug
	// endpoints do, must not get them into history.
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo-Authorization", r.Header.Get("Authorization"))
		user, password, _ := r.BasicAuth()
		fmt.Fprintf(w, "auth=%s user=%s password=%s", r.Header.Get("Authorization"), user, password)
	})
	s := setup(t, httpaction.Config{AllowLoopback: true})

	t.Run("from Basic authentication", func(t *testing.T) {
		t.Parallel()
		a := httpAction(tg.URL)
		a.Request.Authentication = &contracts.HTTPAuthentication{Type: contracts.HTTPAuthBasic, Username: "scheduler", Password: "basic-password-123"}
		o := send(t, s, context.Background(), a, attempt())
		if !o.Succeeded {
			t.Fatalf("Send = %+v", o)
		}
		assertNoSecrets(t, o, "basic-password-123", "c2NoZWR1bGVyOmJhc2ljLXBhc3N3b3JkLTEyMw==")
		if !strings.Contains(o.Response, "user=scheduler") || !strings.Contains(o.Response, "[REDACTED]") {
			t.Errorf("response %q, want the user name kept and the secrets redacted", o.Response)
		}
	})

	t.Run("from credentials in the URI", func(t *testing.T) {
		t.Parallel()
		uri := strings.Replace(tg.URL, "http://", "http://scheduler:uri-password-456@", 1)
		o := send(t, s, context.Background(), httpAction(uri), attempt())
		if !o.Succeeded || !strings.Contains(o.Response, "user=scheduler") {
			t.Fatalf("Send = %+v", o)
		}
		assertNoSecrets(t, o, "uri-password-456", "c2NoZWR1bGVyOnVyaS1wYXNzd29yZC00NTY=")
	})
}
