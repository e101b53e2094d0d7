package tracing

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/delayq/delayq/payload"
)

// producerSpan starts a span as a producer service would and returns its
// context and the traceparent header it would send.
func producerSpan(t *testing.T, tp trace.TracerProvider) (trace.SpanContext, string) {
	t.Helper()
	ctx, span := tp.Tracer("producer").Start(context.Background(), "send delay-input", trace.WithSpanKind(trace.SpanKindProducer))
	span.End()
	h := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, h)
	return span.SpanContext(), h[HeaderTraceparent]
}

func header(hs []payload.Header, key string) (string, int) {
	v, n := "", 0
	for _, h := range hs {
		if h.Key == key {
			v, n = string(h.Value), n+1
		}
	}
	return v, n
}

func TestIngestedIsChildOfProducer(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	psc, tpHeader := producerSpan(t, tp)

	tr := New(tp)
	m := payload.Message{Topic: "delay-input", Partition: 3, Offset: 42, Headers: []payload.Header{{Key: HeaderTraceparent, Value: []byte(tpHeader)}}}
	start := time.Now()
	tr.Ingested(m, "o-42", "stored", start, start.Add(time.Millisecond))

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want the producer's and ingest's", len(spans))
	}
	in := spans[1]
	if in.Parent().SpanID() != psc.SpanID() || in.SpanContext().TraceID() != psc.TraceID() {
		t.Errorf("ingest span parent %v trace %v, want the producer span %v in trace %v", in.Parent().SpanID(), in.SpanContext().TraceID(), psc.SpanID(), psc.TraceID())
	}
	if in.SpanKind() != trace.SpanKindConsumer || in.Name() != "process delay-input" {
		t.Errorf("ingest span %q kind %v", in.Name(), in.SpanKind())
	}
}

func TestDeliverStartsLinkedTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	psc, tpHeader := producerSpan(t, tp)

	msg := payload.Message{Topic: "orders", Headers: []payload.Header{
		{Key: "app", Value: []byte("x")},
		{Key: HeaderTraceparent, Value: []byte(tpHeader)},
		{Key: HeaderDelayTraceparent, Value: []byte("stale")},
	}}
	hs := New(tp).Deliver(msg, "o-42", 1_800_000_000_000)

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want the producer's and the delivery's", len(spans))
	}
	d := spans[1]
	if d.SpanContext().TraceID() == psc.TraceID() || d.Parent().IsValid() {
		t.Errorf("delivery span in trace %v with parent %v: want a new trace, a root span", d.SpanContext().TraceID(), d.Parent())
	}
	if len(d.Links()) != 1 || d.Links()[0].SpanContext.SpanID() != psc.SpanID() || d.Links()[0].SpanContext.TraceID() != psc.TraceID() {
		t.Errorf("delivery span links %v, want one to the producer span %v", d.Links(), psc.SpanID())
	}
	got, n := header(hs, HeaderTraceparent)
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{HeaderTraceparent: got}))
	if n != 1 || sc.SpanID() != d.SpanContext().SpanID() {
		t.Errorf("delivered traceparent %q (%d), want the delivery span %v", got, n, d.SpanContext().SpanID())
	}
	if orig, n := header(hs, HeaderDelayTraceparent); n != 1 || orig != tpHeader {
		t.Errorf("delay-traceparent %q (%d), want the producer's %q once", orig, n, tpHeader)
	}
	if v, n := header(hs, "app"); n != 1 || v != "x" {
		t.Errorf("the message's own header became %q (%d)", v, n)
	}
}

func TestDeliverWithoutTraceparent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	hs := New(tp).Deliver(payload.Message{Topic: "orders"}, "o-1", 0)
	if len(rec.Ended()) != 1 || len(rec.Ended()[0].Links()) != 0 {
		t.Fatalf("spans %v, want one delivery span without links", rec.Ended())
	}
	if _, n := header(hs, HeaderDelayTraceparent); n != 0 {
		t.Error("delay-traceparent written for a message that had no traceparent")
	}
	if _, n := header(hs, HeaderTraceparent); n != 1 {
		t.Error("the delivery span's traceparent is missing")
	}
}

func TestOffLeavesHeaders(t *testing.T) {
	var tr *Tracer // tracing off
	in := []payload.Header{{Key: HeaderTraceparent, Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}}
	out := tr.Deliver(payload.Message{Topic: "orders", Headers: in}, "o", 0)
	if len(out) != 1 || string(out[0].Value) != string(in[0].Value) {
		t.Errorf("headers %v, want them untouched", out)
	}
	tr.Ingested(payload.Message{}, "o", "stored", time.Now(), time.Now()) // must not panic
	if New(nil) != nil {
		t.Error("New(nil) is a tracer")
	}
}

func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestFromEnvRefusesGRPC(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, _, err := FromEnv(context.Background(), "delayd"); err == nil {
		t.Error("OTEL_EXPORTER_OTLP_PROTOCOL=grpc accepted; delayd exports http/protobuf only")
	}
}
