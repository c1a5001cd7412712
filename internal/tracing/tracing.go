// Package tracing exports OpenTelemetry traces of the executions over OTLP
// (HTTP), when an endpoint is configured: one trace per attempt, from the
// planner's dispatch span to the worker's span around the action, whose
// context the action sends on as traceparent.
//
// The trace id of an attempt is its occurrence id, and the dispatch span's
// id is derived from it (contracts.TraceParent), so the planner writes the
// trace context into the execution message before anything is exported,
// and every delivery of the attempt belongs to the same trace.
package tracing

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/jobscheduler/scheduler/contracts"
	"github.com/jobscheduler/scheduler/internal/events"
)

// Config configures tracing.
type Config struct {
	// Endpoint is the OTLP/HTTP endpoint, such as http://collector:4318
	// (the traces path /v1/traces is added when the URL has no path).
	// Empty falls back to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT; when none is set, nothing is traced.
	Endpoint string
	// Service names the process in the traces ("scheduler-planner").
	// Required.
	Service string
	// BatchTimeout is the longest a finished span waits to be exported.
	// Defaults to 5s.
	BatchTimeout time.Duration
	// Logger receives export errors. Defaults to slog.Default().
	Logger *slog.Logger
}

// Tracer exports the spans of one process. A nil Tracer traces nothing.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

// Enabled reports whether cfg (or the environment) names an endpoint.
func (c Config) Enabled() bool {
	return c.Endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Start returns a Tracer exporting to the configured endpoint, or nil when
// none is configured.
func Start(ctx context.Context, cfg Config) (*Tracer, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var opts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("the OTLP endpoint (--otlp-endpoint or SCHEDULER_OTLP_ENDPOINT) %q is not an http:// or https:// URL", cfg.Endpoint)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exporter, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("starting the OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", cfg.Service), attribute.String("service.namespace", "scheduler"))
	batch := []sdktrace.BatchSpanProcessorOption{}
	if cfg.BatchTimeout > 0 {
		batch = append(batch, sdktrace.WithBatchTimeout(cfg.BatchTimeout))
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter, batch...),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		sdktrace.WithIDGenerator(idGenerator{}),
	)
	return &Tracer{provider: provider, tracer: provider.Tracer("github.com/jobscheduler/scheduler")}, nil
}

// Shutdown exports the spans not exported yet, until ctx ends.
func (t *Tracer) Shutdown(ctx context.Context) {
	if t != nil {
		_ = t.provider.Shutdown(ctx)
	}
}

// Dispatched records the planner's span of an execution JetStream stored:
// from its claim to JetStream's acknowledgement, with the ids of the trace
// context the execution carries. It implements dispatch.Observer.
func (t *Tracer) Dispatched(d events.Dispatched) {
	if t == nil {
		return
	}
	sc, ok := parse(d.TraceParent)
	if !ok {
		return
	}
	ctx := context.WithValue(context.Background(), fixedIDs{}, sc)
	_, span := t.tracer.Start(ctx, "dispatch "+string(d.Action),
		trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer), trace.WithTimestamp(d.Claimed),
		trace.WithAttributes(
			attribute.String("scheduler.job", d.JobKey),
			attribute.String("scheduler.action", string(d.Action)),
			attribute.Int64("scheduler.occurrence", d.Occurrence),
			attribute.Int("scheduler.attempt", d.Attempt),
			attribute.String("scheduler.due", d.Due.UTC().Format(time.RFC3339Nano)),
			attribute.Float64("scheduler.lateness_ms", float64(max(d.Stored.Sub(d.Due), 0))/float64(time.Millisecond)),
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.destination.name", contracts.ExecStream),
		))
	span.End(trace.WithTimestamp(d.Stored))
}

// Perform starts the worker's span of an attempt, a child of the dispatch
// span in parent (the execution's traceparent), and returns the trace
// context to send on with the action and the function that ends the span
// with the attempt's result (nil: handed back unperformed).
func (t *Tracer) Perform(parent string, exec contracts.Execution) (string, func(r *contracts.Result)) {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": parent})
	ctx, span := t.tracer.Start(ctx, "perform "+string(exec.ActionName),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			attribute.String("scheduler.job", exec.Job.Key()),
			attribute.String("scheduler.action", string(exec.ActionName)),
			attribute.Int64("scheduler.occurrence", exec.Occurrence),
			attribute.Int("scheduler.attempt", exec.Attempt),
			attribute.String("scheduler.expected_time", exec.ExpectedTime.UTC().Format(time.RFC3339)),
		))
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"], func(r *contracts.Result) {
		if r == nil {
			span.SetStatus(codes.Error, "handed back: the execution is delivered again")
			span.End()
			return
		}
		span.SetAttributes(attribute.String("scheduler.action_type", string(r.ActionType)), attribute.String("scheduler.outcome", string(r.Outcome)))
		if r.StatusCode != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", r.StatusCode))
		}
		if r.Outcome != contracts.Succeeded {
			span.SetStatus(codes.Error, r.Error)
		}
		span.End()
	}
}

// parse reads a version-00 traceparent.
func parse(traceParent string) (trace.SpanContext, bool) {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceParent})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid() && strings.HasPrefix(traceParent, "00-")
}

// fixedIDs is the context key of the ids a root span must take.
type fixedIDs struct{}

// idGenerator gives a root span the ids its context names, and random ids
// otherwise.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(fixedIDs{}).(trace.SpanContext); ok {
		return sc.TraceID(), sc.SpanID()
	}
	var tid trace.TraceID
	_, _ = rand.Read(tid[:])
	return tid, newSpanID()
}

func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	_, _ = rand.Read(sid[:])
	return sid
}
