package httpaction

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jobscheduler/scheduler/actions"
	"github.com/jobscheduler/scheduler/actions/netpolicy"
)

const (
	// maxHeaderText bounds the response headers a history message
	// repeats: whole lines are kept while they fit. It is the limit the
	// original service put on a request's headers.
	maxHeaderText = 4096
	// maxLocationText bounds the redirect target quoted in an error.
	maxLocationText = 512
	// maxReasonText bounds the reason phrase a target sent, which the
	// message and the error repeat.
	maxReasonText = 512
	// drainBytes is how much of a response body past what is kept is read
	// and discarded, so that the connection can carry the next request.
	// A longer body closes the connection instead.
	drainBytes = 64 << 10
)

// requestFailed is the outcome of an attempt that got no answer from the
// target. reason is a sentence fragment for the history message, short the
// outcome's error.
func requestFailed(host, reason, short string) actions.Outcome {
	msg := "Http Action - Request failed: " + reason
	if host != "" {
		msg = "Http Action - Request to host '" + host + "' failed: " + reason
	}
	return actions.Outcome{Message: msg, Error: short}
}

// answered is the outcome of an attempt the target answered: success for a
// 2xx status, failure otherwise. It reads at most what it keeps of the
// body (plus enough to scrub a secret cut at the limit), drains a little
// more so that the connection can be reused, and closes the body. If the
// body cannot be read to the end, the status still decides the outcome and
// what was read is kept.
func answered(host string, resp *http.Response, secrets []string) actions.Outcome {
	longest := 0
	for _, s := range secrets {
		longest = max(longest, len(s))
	}
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, int64(actions.MaxResponseBytes+longest+1)))
	_, _ = io.CopyN(io.Discard, resp.Body, drainBytes)
	_ = resp.Body.Close()

	body, _ := actions.Truncate(actions.Scrub(string(buf), secrets...), actions.MaxResponseBytes)
	text := statusText(resp)
	headers := actions.Scrub(headerText(resp.Header), secrets...)
	o := actions.Outcome{
		Succeeded:  resp.StatusCode >= 200 && resp.StatusCode <= 299,
		StatusCode: resp.StatusCode,
		Message:    "Http Action - Response from host '" + host + "': '" + text + "' Response Headers: " + headers + " Body: " + body,
		Response:   body,
	}
	if o.Succeeded {
		return o
	}
	o.Error = strconv.Itoa(resp.StatusCode) + " " + text
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		if loc := resp.Header.Get("Location"); loc != "" {
			loc, _ = actions.Truncate(actions.Scrub(loc, secrets...), maxLocationText)
			o.Error += ": redirect to " + loc + " not followed"
		} else {
			o.Error += ": redirects are not followed"
		}
	}
	return o
}

// statusText returns the reason phrase of resp's status: the standard one,
// else the one the target sent (its first maxReasonText bytes, then "…"),
// else the number.
func statusText(resp *http.Response) string {
	if text := http.StatusText(resp.StatusCode); text != "" {
		return text
	}
	code := strconv.Itoa(resp.StatusCode)
	if text := strings.TrimSpace(strings.TrimPrefix(resp.Status, code)); text != "" {
		if text, cut := actions.Truncate(text, maxReasonText); cut {
			return text + "…"
		}
		return text
	}
	return code
}

// headerText renders headers as the original service did, one
// "Name: value\r\n" line per header, sorted by name, several values joined
// with ", ". Lines past maxHeaderText are left out.
func headerText(h http.Header) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(h)) {
		line := name + ": " + strings.Join(h[name], ", ") + "\r\n"
		if b.Len()+len(line) > maxHeaderText {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// describe turns the error of a request that got no answer into a reason
// for the history message and a short one for the outcome's error. budget
// is the time the attempt had. Text taken from an error is scrubbed of
// secrets, and never includes the URI (which may carry a key in its query).
func describe(ctx context.Context, err error, budget time.Duration, secrets []string) (reason, short string) {
	var (
		policy     *PolicyError
		tokenErr   *tokenError
		unresolved *netpolicy.ResolveError
		dnsErr     *net.DNSError
		opErr      *net.OpError
		netErr     net.Error
		unknown    x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &policy):
		return policy.Error(), policy.Error()
	case errors.As(err, &unresolved):
		return unresolved.Error(), "host not found"
	case errors.As(err, &tokenErr):
		return tokenErr.Error(), tokenErr.Error()
	case errors.Is(err, errUnreadableCertificate):
		return err.Error(), err.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &netErr) && netErr.Timeout()):
		d := formatDuration(budget)
		return "timed out after " + d, "timeout after " + d
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return "the attempt was canceled before the target answered", "canceled"
	case errors.As(err, &dnsErr):
		// The resolver's own text may name its address: it is left out.
		return (&netpolicy.ResolveError{Host: dnsErr.Name}).Error(), "host not found"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset by the target", "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "the host is unreachable", "host unreachable"
	case errors.As(err, &unknown):
		return "the target's certificate is not trusted: it is signed by an unknown authority", "untrusted certificate"
	case errors.As(err, &hostname):
		return "the target's certificate is not valid for " + hostname.Host, "certificate name mismatch"
	case errors.As(err, &invalid):
		return "the target's certificate is not valid: " + strings.TrimPrefix(invalid.Error(), "x509: "), "invalid certificate"
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		// A TLS alert from the target, such as "tls: certificate required"
		// when it wants a client certificate.
		return "the target refused the TLS handshake: " + opErr.Err.Error(), "TLS handshake refused"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "the target closed the connection without answering", "connection closed"
	}
	text := err.Error()
	if urlErr := (*url.Error)(nil); errors.As(err, &urlErr) {
		text = urlErr.Err.Error()
	}
	text = actions.Scrub(text, secrets...)
	return text, text
}

// formatDuration writes d as a person reads a timeout: whole seconds from a
// second up ("60s", not "1m0s"), milliseconds below.
func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + "s"
	case d > 0:
		return strconv.FormatInt(int64(d.Round(time.Millisecond)/time.Millisecond), 10) + "ms"
	}
	return "0s"
}

// tokenError reports a failed token request of an ActiveDirectoryOAuth
// action. Its text names the authority's host, never a secret.
type tokenError struct {
	host   string
	reason string
}

func (e *tokenError) Error() string {
	return fmt.Sprintf("the token request to '%s' failed: %s", e.host, e.reason)
}
