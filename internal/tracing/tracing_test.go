package tracing

import (
	"context"
	"strings"
	"testing"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
)

func TestStart(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")

	t.Run("without an endpoint nothing is traced", func(t *testing.T) {
		tr, err := Start(context.Background(), Config{Service: "s"})
		if err != nil || tr != nil {
			t.Fatalf("Start = %v, %v; want nil, nil", tr, err)
		}
		tr.Dispatched(events.Dispatched{TraceParent: contracts.TraceParent("0123456789abcdef0123456789abcdef")})
		tr.Shutdown(context.Background())
	})

	t.Run("an endpoint that is not an http URL is refused, naming the flag", func(t *testing.T) {
		for _, endpoint := range []string{"collector:4318", "ftp://collector", "http://"} {
			_, err := Start(context.Background(), Config{Endpoint: endpoint, Service: "s"})
			if err == nil || !strings.Contains(err.Error(), "--otlp-endpoint") {
				t.Errorf("Start(%q) = %v, want an error naming --otlp-endpoint", endpoint, err)
			}
		}
	})
}
