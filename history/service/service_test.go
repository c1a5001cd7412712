package service

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/testkit"
)

// The history consumer started before its NATS server waits for it, logging
// why, then creates its consumer and serves its endpoints; /healthz follows
// the connection, failing at once when it is closed for good.
func TestHistoryStartedBeforeNATSWaitsForIt(t *testing.T) {
	t.Parallel()
	port := testkit.FreePort(t)
	var logs testkit.Logs
	wait := testkit.InBackground(t, func() (*Service, error) {
		return Start(context.Background(), Config{
			NATSURL: fmt.Sprintf("nats://127.0.0.1:%d", port),
			Listen:  "127.0.0.1:0", Logger: logs.Logger(),
		})
	})
	testkit.Eventually(t, 10*time.Second, func() bool { return logs.Contains("level=WARN", "not available yet", "NATS at") },
		"the wait for NATS was not logged:\n%s", logs.String())
	ns := testkit.NATSOn(t, t.TempDir(), port, true)
	svc := wait()
	defer svc.Stop(context.Background())
	_, js := testkit.JetStream(t, ns)
	if _, err := js.Consumer(context.Background(), contracts.ResultsStream, contracts.HistoryConsumer); err != nil {
		t.Fatalf("the history consumer: %v", err)
	}
	base := "http://" + svc.Addr()
	if code, body := testkit.Call(t, "GET", base+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	testkit.HealthFollowsNATS(t, base, svc.nc.Close)
}
