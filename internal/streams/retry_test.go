package streams

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

func TestRetry(t *testing.T) {
	t.Parallel()
	t.Run("a transient failure is logged and retried until the call succeeds", func(t *testing.T) {
		t.Parallel()
		var logs testkit.Logs
		ctx := WithLogger(context.Background(), logs.Logger())
		calls := 0
		err := Retry(ctx, "the EXEC stream", func(context.Context) error {
			calls++
			if calls < 3 {
				return fmt.Errorf("creating the EXEC stream: %w", nats.ErrNoResponders)
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("err %v after %d calls, want success after 3", err, calls)
		}
		if !logs.Contains("level=WARN", "not available yet", "what=\"the EXEC stream\"", "no responders", "attempt=2") {
			t.Errorf("the second failure was not logged with its error:\n%s", logs.String())
		}
		if !logs.Contains("level=INFO", "opened after waiting", "attempts=3") {
			t.Errorf("the success was not logged:\n%s", logs.String())
		}
	})
	t.Run("a configuration error fails at once", func(t *testing.T) {
		t.Parallel()
		var logs testkit.Logs
		ctx := WithLogger(context.Background(), logs.Logger())
		calls := 0
		conflict := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use with a different configuration"}
		err := Retry(ctx, "the EXEC stream", func(context.Context) error {
			calls++
			return fmt.Errorf("creating the EXEC stream: %w", conflict)
		})
		if !errors.Is(err, conflict) || calls != 1 {
			t.Fatalf("err %v after %d calls, want the conflict after 1", err, calls)
		}
		if logs.String() != "" {
			t.Errorf("logged %s", logs.String())
		}
	})
	t.Run("the end of the context ends the wait with the last error", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := Retry(WithLogger(ctx, (&testkit.Logs{}).Logger()), "the EXEC stream", func(context.Context) error {
			calls++
			cancel() // SIGTERM during start-up
			return nats.ErrNoResponders
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("err %v after %d calls", err, calls)
		}
		for _, want := range []string{"stopped waiting for the EXEC stream", "no responders"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %q", err, want)
			}
		}
	})
	t.Run("each attempt has a deadline of its own, and an attempt that ran out of time is retried", func(t *testing.T) {
		t.Parallel()
		calls := 0
		err := Retry(WithLogger(context.Background(), (&testkit.Logs{}).Logger()), "x", func(ctx context.Context) error {
			calls++
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > AttemptTimeout {
				return fmt.Errorf("the attempt's deadline is %v (%v)", dl, ok)
			}
			if calls == 1 {
				return fmt.Errorf("creating the EXEC stream: %w", context.DeadlineExceeded) // no answer in time
			}
			return nil
		})
		if err != nil || calls != 2 {
			t.Fatalf("err %v after %d calls", err, calls)
		}
	})
}

func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{nats.ErrNoServers, true},
		{nats.ErrConnectionReconnecting, true},
		{jetstream.ErrJetStreamNotEnabled, true},
		{jetstream.ErrJetStreamNotEnabledForAccount, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10005, Description: "no suitable peers for placement"}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10118, Description: "stream is offline"}, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{&net.DNSError{Err: "no such host", Name: "nats", IsNotFound: true}, true},
		{fmt.Errorf("creating the EXEC stream: %w", jetstream.ErrStreamNameAlreadyInUse), false},
		{&jetstream.APIError{Code: 400, ErrorCode: 10065, Description: "subjects overlap with an existing stream"}, false},
		{&jetstream.APIError{Code: 500, ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"}, false},
		{nats.ErrConnectionClosed, false},
		{nats.ErrAuthorization, false},
		{context.Canceled, false},
		{errors.New("something else"), false},
	} {
		if got := Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	if connectTransient(nats.ErrAuthorization) || connectTransient(&url.Error{Op: "parse", URL: "x", Err: errors.New("bad")}) {
		t.Error("refused credentials or a bad URL are retried")
	}
	if !connectTransient(nats.ErrNoServers) {
		t.Error("no server answering is not retried")
	}
	// How nats.go reports a server that closed the connection once the TLS
	// handshake was done: a refused client certificate, seen from a write.
	refused := fmt.Errorf("%w: connection closed by remote after TLS handshake: %w", nats.ErrTLS, syscall.EPIPE)
	if connectTransient(refused) {
		t.Error("a connection closed right after the TLS handshake is retried")
	}
	if !connectTransient(fmt.Errorf("%w: %w", nats.ErrTLS, os.ErrDeadlineExceeded)) {
		t.Error("a TLS handshake that timed out is not retried")
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                        "nats://127.0.0.1:4222",
		"nats://user:secret@nats-1:4222,nats://nats-2": "nats://nats-1:4222,nats://nats-2",
		"tls://s3cr3t-token@nats.example.com:4222":     "tls://nats.example.com:4222",
		"nats-1:4222, user:pw@nats-2:4222":             "nats://nats-1:4222,nats://nats-2:4222",
		"nats://user:pass@host:notaport":               "(a URL that does not parse)",
		"":                                             "",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
