package storagequeue

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/v2"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
	"github.com/jobscheduler/scheduler/contracts"
)

// messagePrefix starts every history message of this action type, as the
// original service started its HTTP ones with "Http Action - ".
const messagePrefix = "StorageQueue Action - "

// errClosed is the failure of a send after Close.
var errClosed = errors.New("storagequeue: the sender is closed")

// Sender performs StorageQueue actions. It is safe for concurrent use, and
// one Sender serves every execution of a worker.
type Sender struct {
	cfg       Config
	transport *http.Transport
	http      *http.Client
	clients   *clientCache
	closed    atomic.Bool
}

var _ actions.Sender = (*Sender)(nil)

// New returns a Sender configured by cfg, or an error naming the field of
// cfg it rejects.
func New(cfg Config) (*Sender, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dialer := &netpolicy.Dialer{
		Policy:    netpolicy.Policy{AllowLoopback: cfg.AllowLoopback, AllowPrivate: cfg.AllowPrivate},
		Resolver:  cfg.Resolver,
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
	}
	// Every connection is checked by the address policy, and none goes
	// through a proxy, which would dial the service out of its sight.
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
	}
	s := &Sender{
		cfg:       cfg,
		transport: transport,
		// The storage service does not redirect; a redirect would only
		// take the request somewhere the template did not name.
		http: &http.Client{
			Transport:     transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	s.clients = newClientCache(cfg.MaxClients, s.newClient)
	return s, nil
}

// newClient builds the queue client of a queue URL and SAS token, over the
// sender's transport and without retries of its own.
func (s *Sender) newClient(queueURL, sasToken string) (*azqueue.QueueClient, error) {
	return azqueue.NewQueueClientWithNoCredential(queueURL+"?"+sasToken, &azqueue.ClientOptions{
		ClientOptions: azcore.ClientOptions{
			Transport: s.http,
			// A negative MaxRetries means one try: the job's retry policy
			// decides about the next, and history shows each.
			Retry: policy.RetryOptions{MaxRetries: -1},
		},
	})
}

// Send puts the envelope of a's message on its queue and reports the
// service's answer. The attempt's client request id travels in the
// x-ms-client-request-id header as well as in the envelope.
func (s *Sender) Send(ctx context.Context, a *contracts.JobAction, at actions.Attempt) actions.Outcome {
	if a == nil || a.Type != contracts.ActionStorageQueue || a.QueueMessage == nil {
		return actions.Failure(messagePrefix+"The action is not a StorageQueue action with a queueMessage.", nil)
	}
	m := a.QueueMessage
	if s.closed.Load() {
		return actions.Failure(messagePrefix+"The worker is stopping; the message was not sent.", errClosed)
	}
	// Names are checked again here, although the API validated them,
	// because the account name becomes part of a host name.
	if !isAccountName(m.StorageAccount) {
		return actions.Failure(fmt.Sprintf("%sThe storage account name %q is not 3 to 24 lowercase letters and digits.", messagePrefix, m.StorageAccount), nil)
	}
	if !isQueueName(m.QueueName) {
		return actions.Failure(fmt.Sprintf("%sThe queue name %q is not a valid storage queue name.", messagePrefix, m.QueueName), nil)
	}
	target := fmt.Sprintf("queue '%s' of storage account '%s'", m.QueueName, m.StorageAccount)
	token := strings.TrimPrefix(strings.TrimSpace(m.SASToken), "?")
	if token == "" {
		return actions.Failure(messagePrefix+"The action has no SAS token for "+target+".", nil)
	}
	query, err := url.ParseQuery(token)
	if err != nil {
		// The parser's error quotes the token; it is not passed on.
		return actions.Failure(messagePrefix+"The SAS token for "+target+" is not a URL query string.", nil)
	}
	secrets := secretsOf(m.SASToken, token, query)

	client, err := s.clients.get(s.cfg.accountEndpoint(m.StorageAccount)+"/"+m.QueueName, token)
	if err != nil {
		return actions.Failure(messagePrefix+"No client could be made for "+target+".",
			errors.New(actions.Scrub("building the queue client: "+err.Error(), secrets...)))
	}

	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var raw *http.Response
	ctx = policy.WithCaptureResponse(ctx, &raw)
	ctx = policy.WithHTTPHeader(ctx, http.Header{"x-ms-client-request-id": {at.ClientRequestID()}})
	resp, err := client.EnqueueMessage(ctx, envelope(at, s.cfg.Region, m.Message), nil)
	if err != nil {
		return failure(target, err, secrets)
	}
	o := actions.Outcome{
		Succeeded:  true,
		StatusCode: http.StatusCreated,
		Message:    messagePrefix + "The message was sent to " + target,
	}
	if raw != nil {
		o.StatusCode = raw.StatusCode
	}
	if len(resp.Messages) > 0 {
		o.Response = describeEnqueued(resp.Messages[0])
	}
	return o
}

// Close drops the cached clients and the idle connections. Sends after
// Close fail. It may be called more than once.
func (s *Sender) Close() error {
	s.closed.Store(true)
	s.clients.clear()
	s.transport.CloseIdleConnections()
	return nil
}

// failure returns the outcome of a send that err ended: an answer from the
// service other than 201, or no answer at all. Its texts are built from the
// status, the storage error code and the error's first message line, never
// from the error's own text, which quotes the request URL; whatever came
// from outside is scrubbed of the secrets all the same.
func failure(target string, err error, secrets []string) actions.Outcome {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse == nil {
		reason := transportReason(err)
		return actions.Outcome{
			Message: actions.Scrub(messagePrefix+"The message could not be sent to "+target+": "+reason+".", secrets...),
			Error:   actions.Scrub("enqueueing the message: "+reason, secrets...),
		}
	}
	body, _ := runtime.Payload(re.RawResponse)
	code, detail := storageError(body)
	if re.ErrorCode != "" {
		code = re.ErrorCode
	}
	answer := fmt.Sprintf("%d %s", re.StatusCode, http.StatusText(re.StatusCode))
	if code != "" {
		answer += " (" + code + ")"
	}
	if detail != "" {
		answer += ": " + detail
	} else {
		answer += "."
	}
	response, _ := actions.Truncate(actions.Scrub(string(body), secrets...), actions.MaxResponseBytes)
	return actions.Outcome{
		StatusCode: re.StatusCode,
		Message:    actions.Scrub(messagePrefix+"The message could not be sent to "+target+". The service answered "+answer, secrets...),
		Response:   response,
		Error:      actions.Scrub("enqueueing the message: the service answered "+answer, secrets...),
	}
}

// transportReason says why a request got no answer, without the request
// URL that net/http's errors quote.
func transportReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the request timed out"
	case errors.Is(err, context.Canceled):
		return "the request was canceled"
	}
	if reason, ok := netpolicy.Reason(err); ok {
		return reason
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return "the request failed: " + err.Error()
}

// storageError reads the code and the first line of the message of a
// storage service error body: <Error><Code>…</Code><Message>…</Message>.
func storageError(body []byte) (code, message string) {
	var e struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if len(bytes.TrimSpace(body)) == 0 || xml.Unmarshal(body, &e) != nil {
		return "", ""
	}
	message, _, _ = strings.Cut(strings.TrimSpace(e.Message), "\n")
	return strings.TrimSpace(e.Code), strings.TrimSpace(message)
}

// describeEnqueued returns the Response text of a successful send: the
// message's id and times. The pop receipt the service also returns is left
// out, since with a SAS it lets the message be deleted or changed.
func describeEnqueued(m *azqueue.EnqueuedMessage) string {
	var parts []string
	if m.MessageID != nil {
		parts = append(parts, "MessageId: "+*m.MessageID)
	}
	if m.InsertionTime != nil {
		parts = append(parts, "InsertionTime: "+m.InsertionTime.UTC().Format(time.RFC3339))
	}
	if m.ExpirationTime != nil {
		parts = append(parts, "ExpirationTime: "+m.ExpirationTime.UTC().Format(time.RFC3339))
	}
	return strings.Join(parts, "\r\n")
}

// secretsOf returns every form in which a SAS token or its signature may
// show up in a text: the token as given and as the client re-encodes it,
// and each signature raw, decoded and re-encoded.
func secretsOf(given, token string, query url.Values) []string {
	secrets := []string{strings.TrimSpace(given), token, query.Encode()}
	for _, pair := range strings.Split(token, "&") {
		if k, v, ok := strings.Cut(pair, "="); ok && strings.EqualFold(k, "sig") {
			secrets = append(secrets, v)
		}
	}
	for k, vs := range query {
		if strings.EqualFold(k, "sig") {
			for _, v := range vs {
				secrets = append(secrets, v, url.QueryEscape(v), url.PathEscape(v))
			}
		}
	}
	return secrets
}

// isAccountName reports whether s is a storage account name: 3 to 24
// lowercase letters and digits.
func isAccountName(s string) bool {
	if len(s) < 3 || len(s) > 24 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// isQueueName reports whether s is a storage queue name: 3 to 63 lowercase
// letters, digits and hyphens, starting and ending with a letter or digit,
// without two hyphens in a row.
func isQueueName(s string) bool {
	if len(s) < 3 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
