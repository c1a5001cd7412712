//go:build unix

package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisProcess is a redis-server of the test's own, on a free loopback
// port, keeping nothing on disk (--save "" --appendonly no): killed and
// started again, it comes back empty, as a Redis without persistence does.
// Kill, Pause, Resume and Start come from its Process.
type RedisProcess struct {
	*Process
	// Port is its loopback port.
	Port int

	client *redis.Client
}

// RedisServer starts a redis-server process for the test and waits until
// it answers. Without redis-server on the PATH the test is skipped, unless
// CI is "true", where it fails. The test's cleanup kills it.
func RedisServer(t testing.TB) *RedisProcess {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI needs redis-server on the PATH for this test")
		}
		t.Skip("redis-server is not installed")
	}
	dir := t.TempDir()
	r := &RedisProcess{Port: FreePort(t)}
	r.Process = StartProcess(t, "redis-server", filepath.Join(dir, "redis.log"), nil, bin,
		"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no")
	r.client = redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { r.client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// Addr returns host:port.
func (r *RedisProcess) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// URL returns its redis:// URL.
func (r *RedisProcess) URL() string { return "redis://" + r.Addr() }

// WaitUp waits until the server answers PING, or ctx ends.
func (r *RedisProcess) WaitUp(ctx context.Context) error {
	for {
		err := r.client.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis-server on %s does not answer: %w", r.Addr(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// FlushAll empties the server.
func (r *RedisProcess) FlushAll(ctx context.Context) error { return r.client.FlushAll(ctx).Err() }

// DBSize returns how many keys the server holds.
func (r *RedisProcess) DBSize(ctx context.Context) (int64, error) {
	return r.client.DBSize(ctx).Result()
}
