package e2e

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/jobscheduler/scheduler/internal/testkit"
)

// span is what the test's OTLP receiver keeps of an exported span.
type span struct {
	service, name             string
	traceID, spanID, parentID string
}

// otlpReceiver is an OTLP/HTTP traces endpoint that keeps every span.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var export collector.ExportTraceServiceRequest
		if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &export) != nil {
			http.Error(w, "not an OTLP traces export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rs := range export.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, span{service: service, name: s.Name,
						traceID: hex.EncodeToString(s.TraceId), spanID: hex.EncodeToString(s.SpanId), parentID: hex.EncodeToString(s.ParentSpanId)})
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the span of the trace with the name, if exported.
func (r *otlpReceiver) find(traceID, name string) (span, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if s.traceID == traceID && s.name == name {
			return s, true
		}
	}
	return span{}, false
}

// With an OTLP endpoint configured, an attempt is one trace: the planner's
// dispatch span, the worker's span as its child, and the action sent on as
// a child of the worker's span; the trace id is the occurrence id.
func TestAnAttemptIsOneTraceFromDispatchToTheAction(t *testing.T) {
	t.Parallel()
	rec := newOTLPReceiver(t)
	s := start(t, options{otlp: rec.URL})
	tg := newTarget(t, s.clock, nil)
	s.put("traced", httpJob(tg.URL+"/hook", "", `, "startTime": "2026-06-01T08:01:00Z"`))
	s.tick(time.Minute)
	c := tg.waitCalls(t, "/hook", 1)[0]

	parts := strings.Split(c.header.Get("traceparent"), "-")
	if len(parts) != 4 {
		t.Fatalf("traceparent %q", c.header.Get("traceparent"))
	}
	traceID, sent := parts[1], parts[2]
	if key := c.header.Get("Idempotency-Key"); traceID != key {
		t.Errorf("trace id %s, want the occurrence id %s", traceID, key)
	}
	var dispatch, perform span
	testkit.Eventually(t, 10*time.Second, func() bool {
		var ok1, ok2 bool
		dispatch, ok1 = rec.find(traceID, "dispatch MainAction")
		perform, ok2 = rec.find(traceID, "perform MainAction")
		return ok1 && ok2
	}, "the dispatch and perform spans of trace %s were not exported", traceID)
	if dispatch.service != "scheduler-planner" || dispatch.parentID != "" {
		t.Errorf("dispatch span %+v, want a root span of scheduler-planner", dispatch)
	}
	if perform.service != "scheduler-worker" || perform.parentID != dispatch.spanID {
		t.Errorf("perform span %+v, want a span of scheduler-worker under the dispatch span %s", perform, dispatch.spanID)
	}
	if sent != perform.spanID {
		t.Errorf("the action was sent with parent span %s, want the perform span %s", sent, perform.spanID)
	}
}
