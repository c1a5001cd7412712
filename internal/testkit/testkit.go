// Package testkit starts the real servers the tests talk to: an embedded NATS
// server with JetStream, and Redis: the server named by
// SCHEDULER_TEST_REDIS_URL when it is set (CI points it at the machine's
// Redis), else an in-process miniredis. Tests never share state: each gets
// its own NATS server and its own Redis key prefix.
package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// RedisURLEnv names the Redis server the tests use instead of miniredis.
const RedisURLEnv = "SCHEDULER_TEST_REDIS_URL"

// NATS starts an embedded NATS server with JetStream and a file store in a
// temporary directory, and shuts it down when the test ends.
func NATS(t testing.TB) *server.Server {
	t.Helper()
	return NATSIn(t, t.TempDir())
}

// NATSIn is NATS with the store in dir, so a test can restart a server on
// the same data.
func NATSIn(t testing.TB, dir string) *server.Server {
	t.Helper()
	return NATSWith(t, server.Options{StoreDir: dir})
}

// JetStream connects to ns and returns the connection and its JetStream
// context, closed when the test ends.
func JetStream(t testing.TB, ns *server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return JetStreamAt(t, ns.ClientURL())
}

// JetStreamAt is JetStream for the NATS server at url.
func JetStreamAt(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connecting to NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("JetStream: %v", err)
	}
	return nc, js
}

// Redis returns a client and a key prefix unique to this test. With
// SCHEDULER_TEST_REDIS_URL set it is that server (the URL should name a
// dedicated database, which CI flushes before the run); otherwise a fresh
// miniredis, which is returned too (nil for a real server) so the test can
// fast-forward its clock or flush it.
func Redis(t testing.TB) (redis.UniversalClient, string, *miniredis.Miniredis) {
	t.Helper()
	prefix := "test-" + randomHex(6)
	if url := os.Getenv(RedisURLEnv); url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Fatalf("%s: %v", RedisURLEnv, err)
		}
		rdb := redis.NewClient(opts)
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Fatalf("%s: %v", RedisURLEnv, err)
		}
		t.Cleanup(func() {
			FlushPrefix(rdb, prefix)
			rdb.Close()
		})
		return rdb, prefix, nil
	}
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb, prefix, mr
}

// RedisURL returns SCHEDULER_TEST_REDIS_URL ("" when the tests use
// miniredis).
func RedisURL() string { return os.Getenv(RedisURLEnv) }

// RealRedis reports whether the tests run against a real Redis server.
func RealRedis() bool { return os.Getenv(RedisURLEnv) != "" }

// FlushPrefix deletes every key under prefix: what FLUSHDB does to one
// test's keys, without touching the other tests sharing the server.
func FlushPrefix(rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			rdb.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		rdb.Unlink(ctx, keys...)
	}
}

var randMu sync.Mutex

func randomHex(n int) string {
	randMu.Lock()
	defer randMu.Unlock()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Call makes an HTTP request with the given header pairs (name, value, …)
// and returns the status and body, failing the test if there is no answer
// within 10 s.
func Call(t testing.TB, method, url, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

// Eventually polls cond every few milliseconds until it holds or the
// deadline passes, and fails the test with msg then.
func Eventually(t testing.TB, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: "+msg, append([]any{within}, args...)...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Clock is a settable clock for the services under test: its Now is what
// they are given instead of time.Now. It is safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock set to t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's time, in UTC.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
