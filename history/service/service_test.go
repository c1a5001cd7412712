package service

import (
	"context"
	"fmt"
	"net/http"
	"strings"
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
	type started struct {
		svc *Service
		err error
	}
	done := make(chan started, 1)
	go func() {
		svc, err := Start(context.Background(), Config{
			NATSURL: fmt.Sprintf("nats://127.0.0.1:%d", port),
			Listen:  "127.0.0.1:0", Logger: logs.Logger(),
		})
		done <- started{svc, err}
	}()
	testkit.Eventually(t, 10*time.Second, func() bool { return logs.Contains("level=WARN", "not available yet", "NATS at") },
		"the wait for NATS was not logged:\n%s", logs.String())
	ns := testkit.NATSOn(t, t.TempDir(), port, true)
	var svc *Service
	select {
	case s := <-done:
		if s.err != nil {
			t.Fatal(s.err)
		}
		svc = s.svc
	case <-time.After(30 * time.Second):
		t.Fatalf("Start did not return once NATS was up:\n%s", logs.String())
	}
	defer svc.Stop(context.Background())
	_, js := testkit.JetStream(t, ns)
	if _, err := js.Consumer(context.Background(), contracts.ResultsStream, contracts.HistoryConsumer); err != nil {
		t.Fatalf("the history consumer: %v", err)
	}
	base := "http://" + svc.Addr()
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := testkit.Call(t, "GET", base+path, ""); code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
	svc.nc.Close()
	if code, body := testkit.Call(t, "GET", base+"/healthz", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "NATS: CLOSED") {
		t.Fatalf("/healthz with the connection closed: %d %s", code, body)
	}
}
