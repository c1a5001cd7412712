package transient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// redisReply stands for a Redis error reply as go-redis returns it.
type redisReply string

func (r redisReply) Error() string { return string(r) }
func (redisReply) RedisError()     {}

func TestIs(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("reading job j.a.b.c.d: %w", err) }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil is not a fault", nil, false},
		{"a deadline that passed is transient", wrap(context.DeadlineExceeded), true},
		{"a caller that gave up is not", wrap(context.Canceled), false},
		{"no responders is transient", wrap(nats.ErrNoResponders), true},
		{"a NATS timeout is transient", wrap(nats.ErrTimeout), true},
		{"a connection reconnecting is transient", wrap(nats.ErrConnectionReconnecting), true},
		{"a closed connection is transient", wrap(nats.ErrConnectionClosed), true},
		{"no response from the stream is transient", wrap(jetstream.ErrNoStreamResponse), true},
		{"JetStream not enabled (yet) is transient", wrap(jetstream.ErrJetStreamNotEnabled), true},
		{"a JetStream API 503 is transient", wrap(&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		{"a cluster that cannot handle the request is transient", wrap(&jetstream.APIError{Code: 500, ErrorCode: 10009}), true},
		{"a JetStream bad request is not", wrap(&jetstream.APIError{Code: 400, ErrorCode: 10003}), false},
		{"a missing key is not", wrap(jetstream.ErrKeyNotFound), false},
		{"an existing key is not", wrap(jetstream.ErrKeyExists), false},
		{"a revision mismatch is not", wrap(jetstream.ErrKeyRevisionMismatch), false},
		{"Redis loading its data is transient", wrap(redisReply("LOADING Redis is loading the dataset in memory")), true},
		{"a Redis cluster down is transient", wrap(redisReply("CLUSTERDOWN The cluster is down")), true},
		{"a write to a Redis replica is transient", wrap(redisReply("READONLY You can't write against a read only replica.")), true},
		{"a Redis script error is not", wrap(redisReply("ERR Error running script")), false},
		{"a cross-slot Redis error is not", wrap(redis.ErrCrossSlot), false},
		{"a Redis pool timeout is transient", wrap(redis.ErrPoolTimeout), true},
		{"a connection closed half way is transient", wrap(io.ErrUnexpectedEOF), true},
		{"a refused connection is transient", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), true},
		{"a decoding error is not", errors.New("decoding job j.a: unexpected end of JSON input"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Is(tt.err); got != tt.want {
				t.Errorf("Is(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"no responders left nothing done", nats.ErrNoResponders, true},
		{"a JetStream API 503 left nothing done", &jetstream.APIError{Code: 503, ErrorCode: 10008}, true},
		{"Redis loading its data left nothing done", redisReply("LOADING Redis is loading the dataset in memory"), true},
		{"a refused dial left nothing done", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{"a timeout may have", context.DeadlineExceeded, false},
		{"a connection lost half way may have", io.ErrUnexpectedEOF, false},
		{"a lasting error is not a fault", jetstream.ErrKeyNotFound, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Refused(fmt.Errorf("scheduling the run: %w", tt.err)); got != tt.want {
				t.Errorf("Refused(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// The errors real clients return for a server that is not there are
// transient.
func TestIsRecognizesRealClientErrors(t *testing.T) {
	t.Parallel()
	t.Run("a Redis server that is down", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close() // nothing listens there now
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
		defer rdb.Close()
		err = rdb.Ping(context.Background()).Err()
		if err == nil || !Is(err) || !Refused(err) {
			t.Fatalf("Is(%v) = false", err)
		}
	})
	t.Run("a request nothing answers, and a NATS server shut down", func(t *testing.T) {
		t.Parallel()
		ns := testkit.NATS(t)
		nc, js := testkit.JetStream(t, ns)
		if _, err := nc.Request("nobody.listens", nil, time.Second); !Is(err) {
			t.Fatalf("Is(%v) = false", err)
		}
		kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "b"})
		if err != nil {
			t.Fatal(err)
		}
		ns.Shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if _, err := kv.Get(ctx, "k"); !Is(err) {
			t.Fatalf("Is(%v) = false", err)
		}
	})
}
