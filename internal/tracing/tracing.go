package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/delayq/delayq/payload"
)

// Headers of the W3C trace context, and delayq's copy of the producer's.
const (
	HeaderTraceparent      = "traceparent"
	HeaderTracestate       = "tracestate"
	HeaderDelayTraceparent = "delay-traceparent"
)

// ErrConfig is wrapped by FromEnv's errors.
var ErrConfig = errors.New("tracing: invalid config")

// Tracer records delayq's spans; a nil *Tracer records nothing.
type Tracer struct {
	t trace.Tracer
}

// New returns a Tracer on tp (nil: tracing off, New returns nil).
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{t: tp.Tracer("github.com/delayq/delayq")}
}

// Enabled reports whether the standard variables name an OTLP endpoint
// for traces and do not turn the exporter off.
func Enabled(getenv func(string) string) bool {
	if getenv("OTEL_SDK_DISABLED") == "true" || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// FromEnv returns the tracer provider the standard OTEL_* variables
// describe, or nil when they name no endpoint (Enabled), and the function
// that flushes and stops it. Only the HTTP/protobuf protocol is built in.
func FromEnv(ctx context.Context, service string) (*sdktrace.TracerProvider, func(context.Context) error, error) {
	nop := func(context.Context) error { return nil }
	if !Enabled(os.Getenv) {
		return nil, nop, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, nop, fmt.Errorf("%w: %s=%s: delayd exports OTLP over http/protobuf only", ErrConfig, v, p)
		}
	}
	if e := os.Getenv("OTEL_TRACES_EXPORTER"); e != "" && e != "otlp" {
		return nil, nop, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%s: delayd exports otlp or none", ErrConfig, e)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nop, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		return nil, nop, fmt.Errorf("tracing: resource: %w", err)
	}
	if os.Getenv("OTEL_SERVICE_NAME") != "" {
		res = resource.Default() // the SDK's default reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

var propagator = propagation.TraceContext{}

// carrier reads the trace context headers of a message.
type carrier []payload.Header

func (c carrier) Get(key string) string {
	for _, h := range c {
		if strings.EqualFold(h.Key, key) {
			return string(h.Value)
		}
	}
	return ""
}
func (c carrier) Set(string, string) {}
func (c carrier) Keys() []string {
	keys := make([]string, len(c))
	for i, h := range c {
		keys[i] = h.Key
	}
	return keys
}

// producer returns the span context of a message's traceparent (invalid
// when it has none or it does not parse).
func producer(headers []payload.Header) trace.SpanContext {
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), carrier(headers)))
}

// Ingested records ingest's span for one delay-input message, from start
// to end, a child of the message's traceparent when it has one; outcome
// is what ingest did with it ("stored", or the failed topic's reason).
func (t *Tracer) Ingested(m payload.Message, id, outcome string, start, end time.Time) {
	if t == nil {
		return
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), producer(m.Headers))
	_, span := t.t.Start(ctx, "process "+m.Topic, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(start),
		trace.WithAttributes(
			attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", m.Topic),
			attribute.String("messaging.destination.partition.id", strconv.Itoa(m.Partition)),
			attribute.Int64("messaging.kafka.offset", m.Offset),
			attribute.String("messaging.message.id", id),
			attribute.String("delayq.outcome", outcome),
		))
	span.End(trace.WithTimestamp(end))
}

// Deliver records the delivery of msg (the task's id and due time, unix ms) as the
// root span of a new trace, linked to the producer's span when msg
// carries a traceparent, and returns msg's headers for the business
// topic: traceparent (and tracestate) now the delivery span's, the
// producer's kept as delay-traceparent. A nil Tracer returns the headers
// unchanged.
func (t *Tracer) Deliver(msg payload.Message, id string, execAt int64) []payload.Header {
	if t == nil {
		return msg.Headers
	}
	opts := []trace.SpanStartOption{
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", msg.Topic),
			attribute.String("messaging.message.id", id),
			attribute.Int64("delayq.exec_at", execAt),
		),
	}
	orig := carrier(msg.Headers).Get(HeaderTraceparent)
	if sc := producer(msg.Headers); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx, span := t.t.Start(context.Background(), "send "+msg.Topic, opts...)
	defer span.End()
	if !span.SpanContext().IsValid() {
		return msg.Headers
	}
	out := make(map[string]string, 2)
	propagator.Inject(ctx, propagation.MapCarrier(out))
	return Rewrite(msg.Headers, orig, out[HeaderTraceparent], out[HeaderTracestate])
}

// Rewrite returns headers with traceparent set to traceparent (and
// tracestate to tracestate, or removed when empty), and the producer's
// traceparent orig kept as delay-traceparent (none when orig is empty).
// A delay-traceparent already among headers is replaced: the producer's
// is the one the stored task carries.
func Rewrite(headers []payload.Header, orig, traceparent, tracestate string) []payload.Header {
	out := make([]payload.Header, 0, len(headers)+2)
	for _, h := range headers {
		switch strings.ToLower(h.Key) {
		case HeaderTraceparent, HeaderTracestate, HeaderDelayTraceparent:
			continue
		}
		out = append(out, h)
	}
	out = append(out, payload.Header{Key: HeaderTraceparent, Value: []byte(traceparent)})
	if tracestate != "" {
		out = append(out, payload.Header{Key: HeaderTracestate, Value: []byte(tracestate)})
	}
	if orig != "" {
		out = append(out, payload.Header{Key: HeaderDelayTraceparent, Value: []byte(orig)})
	}
	return out
}
