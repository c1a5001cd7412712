package service

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// The planner role against separately running servers: NATS, and Redis
// (the machine's in CI), as `scheduler serve planner` runs it.
func TestPlannerServesAgainstRealServers(t *testing.T) {
	t.Parallel()
	ns := testkit.NATS(t)
	rdb, prefix, mr := testkit.Redis(t)
	redisURL := testkit.RedisURL()
	if mr != nil {
		redisURL = "redis://" + mr.Addr()
	}
	svc, err := Start(context.Background(), Config{
		NATSURL: ns.ClientURL(), RedisURL: redisURL, RedisPrefix: prefix, Listen: "127.0.0.1:0",
		Tokens: []string{"secret-token"}, EncryptionKey: make([]byte, 32),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(context.Background())
	api := "http://" + svc.Addr()
	do := func(method, path, body string) (int, string) {
		return testkit.Call(t, method, api+path, body, "Authorization", "Bearer secret-token")
	}
	testkit.Eventually(t, 10*time.Second, func() bool { code, _ := do("GET", "/readyz", ""); return code == http.StatusOK }, "never ready")
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
}
