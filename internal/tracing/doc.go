// Package tracing carries a task's trace through the delay, as the
// OpenTelemetry messaging conventions ask of a message delivered long
// after it was sent (OTEP 0220): the delivery is a new trace, linked to
// the producer's span, not a child of a span that ended hours or days
// before.
//
//   - Ingest records one consumer span per delay-input message
//     ("process delay-input"), a child of the message's W3C traceparent
//     when it has one (Tracer.Ingested).
//   - The scanner starts a new trace for each delivery ("send <topic>",
//     a producer span) with a link to the span context of the stored
//     traceparent, writes the delivery span's traceparent on the
//     delivered message and keeps the producer's as delay-traceparent
//     (Tracer.Deliver). A recurring task's occurrences keep the first
//     submit's traceparent in their row, so each links to it.
//
// FromEnv builds the exporter from the standard OTEL_EXPORTER_OTLP_*
// variables (OTLP over HTTP/protobuf). Without an endpoint tracing is off:
// a nil *Tracer records nothing, exports nothing and leaves the headers as
// they came (traceparent passes through untouched, as before).
package tracing
