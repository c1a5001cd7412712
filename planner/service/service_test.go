package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// secretToken is a flat token of the tests, long enough to be accepted.
var secretToken = "secret-token-" + strings.Repeat("s", 32)

// The planner role against separately running servers: NATS, and Redis
// (the machine's in CI), as `scheduler serve planner` runs it.
func TestPlannerServesAgainstRealServers(t *testing.T) {
	t.Parallel()
	svc, rdb, prefix := startAgainstRealServers(t)
	api := "http://" + svc.Addr()
	do := func(method, path, body string) (int, string) {
		return testkit.Call(t, method, api+path, body, "Authorization", "Bearer "+secretToken)
	}
	base := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c"
	if code, body := do("PUT", base, `{"properties": {}}`); code != http.StatusCreated {
		t.Fatalf("collection: %d %s", code, body)
	}
	if code, body := do("PUT", base+"/jobs/j", `{"startTime": "2030-01-01T00:00:00Z", "action": {"type": "Http", "request": {"uri": "https://example.com", "method": "GET"}}, "recurrence": {"frequency": "Day"}}`); code != http.StatusCreated {
		t.Fatalf("job: %d %s", code, body)
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		n, _ := rdb.Keys(context.Background(), prefix+":*").Result()
		return len(n) > 0
	}, "nothing scheduled under the prefix %s", prefix)

	// /metrics beside the API asks for the API's token.
	if code, _ := testkit.Call(t, "GET", api+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d, want 401", code)
	}
	if code, body := do("GET", "/metrics", ""); code != http.StatusOK || !strings.Contains(body, "scheduler_") {
		t.Errorf("/metrics with the token: %d", code)
	}
	// On loopback the API is served as localhost, 127.0.0.1 and ::1 only.
	req, _ := http.NewRequest("GET", api+base, nil)
	req.Host = "rebind.attacker.example"
	req.Header.Set("Authorization", "Bearer "+secretToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host: %d, want 421", res.StatusCode)
	}
}

// startAgainstRealServers starts the planner against its own NATS and
// Redis (the machine's in CI, under a prefix of its own) with the token
// secretToken, each of configure changing its Config, and returns it once
// ready, with its Redis and prefix.
func startAgainstRealServers(t *testing.T, configure ...func(*Config)) (*Service, redis.UniversalClient, string) {
	t.Helper()
	ns := testkit.NATS(t)
	rdb, prefix, mr := testkit.Redis(t)
	redisURL := testkit.RedisURL()
	if mr != nil {
		redisURL = "redis://" + mr.Addr()
	}
	cfg := Config{
		NATSURL: ns.ClientURL(), RedisURL: redisURL, RedisPrefix: prefix, Listen: "127.0.0.1:0",
		Tokens: []string{secretToken}, EncryptionKey: make([]byte, 32),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, c := range configure {
		c(&cfg)
	}
	svc, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	testkit.Eventually(t, 10*time.Second, func() bool {
		code, _ := testkit.Call(t, "GET", "http://"+svc.Addr()+"/readyz", "", "Authorization", "Bearer "+secretToken)
		return code == http.StatusOK
	}, "never ready")
	return svc, rdb, prefix
}

// With MetricsListen, /metrics moves to its own listener, without a token.
func TestMetricsOnTheirOwnListener(t *testing.T) {
	t.Parallel()
	svc, _, _ := startAgainstRealServers(t, func(c *Config) { c.MetricsListen = "127.0.0.1:0" })
	if code, body := testkit.Call(t, "GET", "http://"+svc.metrics.Addr()+"/metrics", ""); code != http.StatusOK || !strings.Contains(body, "scheduler_") {
		t.Errorf("/metrics on its listener: %d", code)
	}
	if code, _ := testkit.Call(t, "GET", "http://"+svc.Addr()+"/metrics", "", "Authorization", "Bearer "+secretToken); code == http.StatusOK {
		t.Errorf("/metrics is still served beside the API")
	}
}

// A planner started before NATS and Redis are up waits for each, logging
// why, and comes up and serves once they answer; its /healthz then
// follows the NATS connection, failing at once when it is closed for good.
func TestPlannerStartedBeforeItsServersWaitsForThem(t *testing.T) {
	t.Parallel()
	natsPort, redisPort := testkit.FreePort(t), testkit.FreePort(t)
	var logs testkit.Logs
	wait := testkit.InBackground(t, func() (*Service, error) {
		return Start(context.Background(), Config{
			NATSURL: fmt.Sprintf("nats://127.0.0.1:%d", natsPort), RedisURL: fmt.Sprintf("redis://127.0.0.1:%d", redisPort),
			Listen: "127.0.0.1:0", EncryptionKey: make([]byte, 32), Logger: logs.Logger(),
		})
	})
	testkit.Eventually(t, 10*time.Second, func() bool { return logs.Contains("level=WARN", "not available yet", "NATS at") },
		"the wait for NATS was not logged:\n%s", logs.String())
	testkit.NATSOn(t, t.TempDir(), natsPort, true)
	testkit.Eventually(t, 10*time.Second, func() bool { return logs.Contains("level=WARN", "not available yet", "what=Redis") },
		"the wait for Redis was not logged:\n%s", logs.String())
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr(fmt.Sprintf("127.0.0.1:%d", redisPort)); err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	svc := wait()
	defer svc.Stop(context.Background())
	api := "http://" + svc.Addr()
	testkit.Eventually(t, 10*time.Second, func() bool { code, _ := testkit.Call(t, "GET", api+"/readyz", ""); return code == http.StatusOK }, "never ready")
	base := api + "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Scheduler/jobCollections/c"
	if code, body := testkit.Call(t, "PUT", base, `{"properties": {}}`); code != http.StatusCreated {
		t.Fatalf("collection: %d %s", code, body)
	}
	testkit.HealthFollowsNATS(t, api, svc.nc.Close)
}

// replyError is an error reply of a Redis server.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// The planner waits out a Redis that does not answer yet, or is loading
// its data, but not one that refuses its credentials.
func TestRedisTransient(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{context.DeadlineExceeded, true},
		{io.EOF, true},
		{replyError("LOADING Redis is loading the dataset in memory"), true},
		{replyError("CLUSTERDOWN The cluster is down"), true},
		{replyError("ERR max number of clients reached"), true},
		{replyError("WRONGPASS invalid username-password pair or user is disabled."), false},
		{replyError("NOAUTH Authentication required."), false},
		{errors.New("redis: client is closed"), false},
	} {
		if got := redisTransient(tt.err); got != tt.want {
			t.Errorf("redisTransient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
