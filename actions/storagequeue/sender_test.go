package storagequeue

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/contracts"
)

// fakeSAS is a SAS token whose signature is easy to look for, URL-encoded
// as a real one is.
const (
	fakeSig        = "c2VjcmV0LXNpZ25hdHVyZS12YWx1ZQ%3D%3D"
	fakeSigDecoded = "c2VjcmV0LXNpZ25hdHVyZS12YWx1ZQ=="
	fakeSAS        = "sv=2020-02-10&se=2099-01-01T00%3A00%3A00Z&sp=a&spr=https%2Chttp&sig=" + fakeSig
)

// fakeSecrets are the forms of fakeSAS no outcome may hold.
var fakeSecrets = []string{fakeSAS, fakeSig, fakeSigDecoded}

// fakeRequest is what the fake storage service received.
type fakeRequest struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	MessageText  string
}

// fakeService is a storage queue service on loopback that answers every
// request with status and body (the body's "{url}" replaced by the
// request's URL) and records what it received.
type fakeService struct {
	*httptest.Server
	mu       sync.Mutex
	requests []fakeRequest
}

func newFakeService(t *testing.T, status int, body string) *fakeService {
	t.Helper()
	f := &fakeService{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m struct {
			MessageText string `xml:"MessageText"`
		}
		_ = xml.Unmarshal(raw, &m)
		f.mu.Lock()
		f.requests = append(f.requests, fakeRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), MessageText: m.MessageText})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		io.WriteString(w, strings.ReplaceAll(body, "{url}", xmlEscape(r.URL.String())))
	}))
	t.Cleanup(f.Close)
	return f
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func (f *fakeService) template() string { return f.URL + "/{account}" }

func (f *fakeService) received() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

const enqueuedBody = `<?xml version="1.0" encoding="utf-8"?><QueueMessagesList><QueueMessage>` +
	`<MessageId>5974b586-0df3-4e2d-ad0c-18e3892bfca2</MessageId>` +
	`<InsertionTime>Fri, 09 Oct 2009 21:04:30 GMT</InsertionTime>` +
	`<ExpirationTime>Fri, 16 Oct 2009 21:04:30 GMT</ExpirationTime>` +
	`<PopReceipt>YzQ4Yzg1MDIGM0MDFiZDAwYzEw</PopReceipt>` +
	`<TimeNextVisible>Fri, 09 Oct 2009 23:29:20 GMT</TimeNextVisible>` +
	`</QueueMessage></QueueMessagesList>`

func storageErrorBody(code, message string) string {
	return `<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code + `</Code><Message>` + message +
		"\nRequestId:8f2c1b1e-0001-0000-0000-000000000000\nTime:2024-01-01T00:00:00.0000000Z</Message></Error>"
}

func TestSend(t *testing.T) {
	t.Parallel()

	t.Run("posts the envelope as the message text, with the attempt's client request id", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusCreated, enqueuedBody)
		s := setup(t, Config{EndpointTemplate: f.template(), Region: "West Europe"})
		at := newAttempt()
		o := s.Send(context.Background(), queueAction("acct1", "orders", "?"+fakeSAS, "a < b & c"), at)
		if !o.Succeeded || o.StatusCode != http.StatusCreated || o.Error != "" {
			t.Fatalf("outcome %+v, want success with 201", o)
		}
		if want := "StorageQueue Action - The message was sent to queue 'orders' of storage account 'acct1'"; o.Message != want {
			t.Errorf("Message = %q, want %q", o.Message, want)
		}
		if want := "MessageId: 5974b586-0df3-4e2d-ad0c-18e3892bfca2\r\nInsertionTime: 2009-10-09T21:04:30Z\r\nExpirationTime: 2009-10-16T21:04:30Z"; o.Response != want {
			t.Errorf("Response = %q, want %q", o.Response, want)
		}
		reqs := f.received()
		if len(reqs) != 1 {
			t.Fatalf("the service got %d requests, want 1", len(reqs))
		}
		r := reqs[0]
		if r.Method != http.MethodPost || r.Path != "/acct1/orders/messages" {
			t.Errorf("request %s %s, want POST /acct1/orders/messages", r.Method, r.Path)
		}
		if r.Query.Get("sig") != fakeSigDecoded || r.Query.Get("sp") != "a" {
			t.Errorf("query %v does not carry the SAS token", r.Query)
		}
		if got := r.Header.Get("x-ms-client-request-id"); got != at.ClientRequestID() {
			t.Errorf("x-ms-client-request-id = %q, want %q", got, at.ClientRequestID())
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the request has an Authorization header: %q", r.Header.Get("Authorization"))
		}
		if want := envelope(at, "West Europe", "a < b & c"); r.MessageText != want {
			t.Errorf("message text =\n%q\nwant the envelope, not base64\n%q", r.MessageText, want)
		}
	})

	t.Run("leaves the pop receipt out of the response", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusCreated, enqueuedBody)
		o := setup(t, Config{EndpointTemplate: f.template()}).Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		if strings.Contains(o.Response, "YzQ4Yzg1MDIGM0MDFiZDAwYzEw") {
			t.Errorf("Response holds the pop receipt: %q", o.Response)
		}
	})

	t.Run("writes the default region when none is configured", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusCreated, enqueuedBody)
		setup(t, Config{EndpointTemplate: f.template()}).Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		if reqs := f.received(); len(reqs) != 1 || !strings.Contains(reqs[0].MessageText, "<Region>Local</Region>") {
			t.Errorf("requests %+v", reqs)
		}
	})

	t.Run("does not retry a server error", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusInternalServerError, storageErrorBody("InternalError", "The server encountered an internal error."))
		o := setup(t, Config{EndpointTemplate: f.template()}).Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		if n := len(f.received()); n != 1 {
			t.Errorf("the service got %d requests, want exactly 1", n)
		}
		if o.Succeeded || o.StatusCode != http.StatusInternalServerError {
			t.Fatalf("outcome %+v, want a failure with 500", o)
		}
		want := "StorageQueue Action - The message could not be sent to queue 'orders' of storage account 'acct1'. " +
			"The service answered 500 Internal Server Error (InternalError): The server encountered an internal error."
		if o.Message != want {
			t.Errorf("Message =\n%q\nwant\n%q", o.Message, want)
		}
		if !strings.Contains(o.Error, "500") || !strings.Contains(o.Error, "InternalError") {
			t.Errorf("Error = %q", o.Error)
		}
		if !strings.Contains(o.Response, "<Code>InternalError</Code>") {
			t.Errorf("Response = %q, want the service's error body", o.Response)
		}
	})

	t.Run("scrubs the SAS token from whatever the service says", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusForbidden, storageErrorBody("AuthenticationFailed", "Server failed to authenticate {url}"))
		o := setup(t, Config{EndpointTemplate: f.template()}).Send(context.Background(), queueAction("acct1", "orders", "?"+fakeSAS, "m"), newAttempt())
		if o.Succeeded || o.StatusCode != http.StatusForbidden || !strings.Contains(o.Message, "403 Forbidden (AuthenticationFailed)") {
			t.Fatalf("outcome %+v, want a 403 naming AuthenticationFailed", o)
		}
		if !strings.Contains(o.Message, "[REDACTED]") || !strings.Contains(o.Response, "[REDACTED]") {
			t.Errorf("the echoed URL was not scrubbed but removed or kept: %+v", o)
		}
		checkNoSecret(t, o, fakeSecrets...)
	})

	t.Run("cuts a long error body to the history's limit", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusBadRequest, storageErrorBody("InvalidXmlDocument", strings.Repeat("é", 3000)))
		o := setup(t, Config{EndpointTemplate: f.template()}).Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		if len(o.Response) > actions.MaxResponseBytes || len(o.Response) < actions.MaxResponseBytes-1 {
			t.Errorf("Response has %d bytes, want about %d", len(o.Response), actions.MaxResponseBytes)
		}
	})

	t.Run("times out a service that does not answer", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		s := setup(t, Config{EndpointTemplate: srv.URL + "/{account}", Timeout: 200 * time.Millisecond})
		start := time.Now()
		o := s.Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		if elapsed := time.Since(start); elapsed > 10*time.Second {
			t.Errorf("Send took %s with a 200ms timeout", elapsed)
		}
		if o.Succeeded || o.StatusCode != 0 || !strings.Contains(o.Message, "timed out") {
			t.Errorf("outcome %+v, want a timeout failure", o)
		}
		checkNoSecret(t, o, fakeSecrets...)
	})

	t.Run("reports a canceled attempt", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusCreated, enqueuedBody)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		o := setup(t, Config{EndpointTemplate: f.template()}).Send(ctx, queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		if o.Succeeded || !strings.Contains(o.Message, "canceled") {
			t.Errorf("outcome %+v, want a cancellation failure", o)
		}
	})

	t.Run("reports a refused connection without the SAS token", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		endpoint := srv.URL + "/{account}"
		srv.Close() // nothing listens there any more
		o := setup(t, Config{EndpointTemplate: endpoint}).Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		if o.Succeeded || o.StatusCode != 0 || !strings.Contains(o.Message, "the request failed") || !strings.Contains(o.Error, "refused") {
			t.Errorf("outcome %+v, want a connection failure", o)
		}
		if strings.Contains(o.Message, "/orders") {
			t.Errorf("Message quotes the request URL: %q", o.Message)
		}
		checkNoSecret(t, o, fakeSecrets...)
	})

	t.Run("refuses actions it cannot send, without a request", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusCreated, enqueuedBody)
		s := setup(t, Config{EndpointTemplate: f.template()})
		httpAction := &contracts.JobAction{Type: contracts.ActionHTTP, Request: &contracts.HTTPRequest{URI: "http://example.com"}}
		noMessage := &contracts.JobAction{Type: contracts.ActionStorageQueue}
		for name, tc := range map[string]struct {
			action *contracts.JobAction
			want   string
		}{
			"no action":                    {nil, "not a StorageQueue action"},
			"another type":                 {httpAction, "not a StorageQueue action"},
			"no queueMessage":              {noMessage, "not a StorageQueue action"},
			"an account that is a host":    {queueAction("evil.example.com#", "orders", fakeSAS, "m"), "storage account name"},
			"an account with capitals":     {queueAction("Acct1", "orders", fakeSAS, "m"), "storage account name"},
			"a queue that climbs the path": {queueAction("acct1", "..", fakeSAS, "m"), "queue name"},
			"a queue with a slash":         {queueAction("acct1", "a/messages", fakeSAS, "m"), "queue name"},
			"a queue with two hyphens":     {queueAction("acct1", "a--b", fakeSAS, "m"), "queue name"},
			"no SAS token":                 {queueAction("acct1", "orders", "", "m"), "no SAS token"},
			"only a question mark":         {queueAction("acct1", "orders", "?", "m"), "no SAS token"},
			"a SAS that is not a query":    {queueAction("acct1", "orders", "sig=%zz"+fakeSig, "m"), "not a URL query string"},
		} {
			o := s.Send(context.Background(), tc.action, newAttempt())
			if o.Succeeded || !strings.HasPrefix(o.Message, "StorageQueue Action - ") || !strings.Contains(o.Message, tc.want) || o.Error == "" {
				t.Errorf("%s: outcome %+v, want a failure saying %q", name, o, tc.want)
			}
			checkNoSecret(t, o, fakeSecrets...)
		}
		if n := len(f.received()); n != 0 {
			t.Errorf("the service got %d requests", n)
		}
	})

	t.Run("fails sends after Close, which may be called twice", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusCreated, enqueuedBody)
		s, err := New(Config{EndpointTemplate: f.template(), AllowLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		if o := s.Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt()); !o.Succeeded {
			t.Fatalf("outcome %+v", o)
		}
		if err := errors.Join(s.Close(), s.Close()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if s.clients.len() != 0 {
			t.Errorf("Close kept %d clients", s.clients.len())
		}
		o := s.Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt())
		if o.Succeeded || o.Error != errClosed.Error() {
			t.Errorf("outcome after Close %+v", o)
		}
		if n := len(f.received()); n != 1 {
			t.Errorf("the service got %d requests, want 1", n)
		}
	})

	t.Run("serves one action type through the Mux", func(t *testing.T) {
		t.Parallel()
		f := newFakeService(t, http.StatusCreated, enqueuedBody)
		s := setup(t, Config{EndpointTemplate: f.template()})
		mux := actions.NewMux(map[contracts.ActionType]actions.Sender{contracts.ActionStorageQueue: s})
		if o := mux.Send(context.Background(), queueAction("acct1", "orders", fakeSAS, "m"), newAttempt()); !o.Succeeded {
			t.Errorf("outcome %+v", o)
		}
	})
}

func TestSecretsOf(t *testing.T) {
	t.Parallel()
	token := "sv=2020-02-10&SIG=" + fakeSig + "&sp=a"
	query, err := url.ParseQuery(token)
	if err != nil {
		t.Fatal(err)
	}
	secrets := secretsOf("?"+token, token, query)
	text := fmt.Sprintf("a %s b %s c %s d %s", "?"+token, fakeSig, fakeSigDecoded, url.PathEscape(fakeSigDecoded))
	if got := actions.Scrub(text, secrets...); strings.Contains(got, "c2VjcmV0") {
		t.Errorf("Scrub left a signature: %q", got)
	}
}
