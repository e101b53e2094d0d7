package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/internal/tracing"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/topics"
)

// otlpReceiver is an OTLP/HTTP trace receiver in the test process: it
// keeps every span delayd exports.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var ex collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &ex)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out) //nolint:errcheck
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the first span named name for which ok holds.
func (r *otlpReceiver) find(name string, ok func(*tracepb.Span) bool) *tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if s.Name == name && ok(s) {
			return s
		}
	}
	return nil
}

// tracedTask submits one task whose traceparent is a producer span's, and
// returns that span's context.
func tracedTask(t *testing.T, e *e2etest.Env, topic string, extra ...kafka.Header) trace.SpanContext {
	t.Helper()
	e2etest.WaitFor(t, 30*time.Second, "delay-input to exist", func() bool {
		return admin.Ensure(context.Background(), e.Brokers, nil, []admin.Spec{{Name: topics.Input}}) == nil
	})
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("producer").Start(context.Background(), "send delay-input", trace.WithSpanKind(trace.SpanKindProducer))
	span.End()
	h := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, h)
	e.Produce(context.Background(), []kafka.Message{{Key: []byte("traced"), Value: []byte("v"), Headers: append([]kafka.Header{
		{Key: "delay-topic", Value: []byte(topic)},
		{Key: "delay-after", Value: []byte("1s")},
		{Key: "traceparent", Value: []byte(h["traceparent"])},
	}, extra...)}})
	return span.SpanContext()
}

// checkTraces waits for the delivery and the spans, and checks the OTEP
// 0220 relations: ingest's span is the producer span's child; the delivery
// span starts a new trace with a link to it; the delivered message carries
// the delivery span's traceparent and the producer's as delay-traceparent.
func checkTraces(t *testing.T, rec *otlpReceiver, out *e2etest.Collector, producer trace.SpanContext, topic string) {
	t.Helper()
	e2etest.WaitFor(t, 60*time.Second, "the traced task delivered", func() bool { return out.Len() > 0 })
	msg := out.Snapshot()[0].Msg
	pid, ptrace := producer.SpanID(), producer.TraceID()

	in := (*tracepb.Span)(nil)
	e2etest.WaitFor(t, 30*time.Second, "ingest's span exported", func() bool {
		in = rec.find("process delay-input", func(s *tracepb.Span) bool { return bytes.Equal(s.TraceId, ptrace[:]) })
		return in != nil
	})
	if !bytes.Equal(in.ParentSpanId, pid[:]) || in.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
		t.Errorf("ingest span parent %x kind %v, want the producer span %x, consumer", in.ParentSpanId, in.Kind, pid[:])
	}

	var d *tracepb.Span
	e2etest.WaitFor(t, 30*time.Second, "the delivery span exported", func() bool {
		d = rec.find("send "+topic, func(s *tracepb.Span) bool {
			return len(s.Links) == 1 && bytes.Equal(s.Links[0].SpanId, pid[:])
		})
		return d != nil
	})
	if bytes.Equal(d.TraceId, ptrace[:]) || len(d.ParentSpanId) != 0 {
		t.Errorf("delivery span in trace %x with parent %x: want a new trace, a root span", d.TraceId, d.ParentSpanId)
	}
	if !bytes.Equal(d.Links[0].TraceId, ptrace[:]) {
		t.Errorf("delivery span's link names trace %x, want the producer's %x", d.Links[0].TraceId, ptrace[:])
	}
	want := "00-" + hex.EncodeToString(d.TraceId) + "-" + hex.EncodeToString(d.SpanId) + "-01"
	if got := e2etest.Header(msg, "traceparent"); got != want {
		t.Errorf("delivered traceparent %q, want the delivery span's %q", got, want)
	}
	orig := "00-" + ptrace.String() + "-" + pid.String() + "-01"
	if got := e2etest.Header(msg, tracing.HeaderDelayTraceparent); got != orig {
		t.Errorf("delay-traceparent %q, want the producer's %q", got, orig)
	}
}

// tracedEmbedded starts delayd --embedded exporting its spans, as
// OTEL_EXPORTER_OTLP_ENDPOINT says, to a receiver in the test process.
func tracedEmbedded(t *testing.T) (*otlpReceiver, *e2etest.Env) {
	t.Helper()
	rec := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rec.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	tp, stop, err := tracing.FromEnv(context.Background(), "delayd")
	if err != nil || tp == nil {
		t.Fatalf("tracing.FromEnv: %v, %v", tp, err)
	}
	t.Cleanup(func() { stop(context.Background()) }) //nolint:errcheck
	return rec, embeddedEnvWith(t, daemon.Options{TracerProvider: tp})
}

// TestEmbeddedTraces: delayd --embedded with OTEL_EXPORTER_OTLP_ENDPOINT
// naming a receiver in the test process.
func TestEmbeddedTraces(t *testing.T) {
	rec, e := tracedEmbedded(t)
	topic := e.Topic("traced")
	out := e.Collect(topic)
	checkTraces(t, rec, out, tracedTask(t, e, topic), topic)
}

// TestTraces: the same through a delayd process on the real stack, the
// exporter configured by the standard variables in its environment.
func TestTraces(t *testing.T) {
	rec := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rec.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	e := newEnv(t)
	topic := e.Topic("traced")
	out := e.Collect(topic)
	e.Start("d0")
	checkTraces(t, rec, out, tracedTask(t, e, topic), topic)
}

// TestTracesOff: without an OTLP endpoint, traceparent reaches the business
// topic as it was sent, and nothing is added.
func TestEmbeddedTracesOff(t *testing.T) {
	e := embeddedEnv(t)
	topic := e.Topic("untraced")
	out := e.Collect(topic)
	sc := tracedTask(t, e, topic)
	e2etest.WaitFor(t, 60*time.Second, "the task delivered", func() bool { return out.Len() > 0 })
	msg := out.Snapshot()[0].Msg
	if got, want := e2etest.Header(msg, "traceparent"), "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01"; got != want {
		t.Errorf("traceparent %q, want it untouched: %q", got, want)
	}
	if got := e2etest.Header(msg, tracing.HeaderDelayTraceparent); got != "" {
		t.Errorf("delay-traceparent %q written with tracing off", got)
	}
}

// TestEmbeddedTracesRecurring: each occurrence of a series is a trace of
// its own, linked to the first submit's span.
func TestEmbeddedTracesRecurring(t *testing.T) {
	rec, e := tracedEmbedded(t)
	topic := e.Topic("series")
	out := e.Collect(topic)
	sc := tracedTask(t, e, topic, kafka.Header{Key: "delay-every", Value: []byte("1s")}, kafka.Header{Key: "delay-count", Value: []byte("3")})
	e2etest.WaitFor(t, 60*time.Second, "three occurrences delivered", func() bool { return out.Len() >= 3 })
	orig := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	traces := map[string]bool{}
	for _, g := range out.Snapshot() {
		if got := e2etest.Header(g.Msg, tracing.HeaderDelayTraceparent); got != orig {
			t.Errorf("occurrence %s: delay-traceparent %q, want the first submit's %q", e2etest.Header(g.Msg, "delay-occurrence"), got, orig)
		}
		traces[e2etest.Header(g.Msg, "traceparent")] = true
	}
	if len(traces) != out.Len() {
		t.Errorf("%d occurrences in %d traces: each delivery must start a trace of its own", out.Len(), len(traces))
	}
	pid := sc.SpanID()
	e2etest.WaitFor(t, 30*time.Second, "a delivery span per occurrence, each linked to the first submit", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, s := range rec.spans {
			if s.Name == "send "+topic && len(s.Links) == 1 && bytes.Equal(s.Links[0].SpanId, pid[:]) {
				n++
			}
		}
		return n >= 3
	})
}
