// Package logging builds the *slog.Logger of delayq's commands from
// --log-format and --log-level: JSON for machines, text for people, and by
// default text when stderr is a terminal and JSON otherwise.
//
// Every line carries each key once. Components add their own attributes to
// the logger they were handed (logger.With("component", "kafka_writer") on
// a logger that already says "component", "ingest"); slog's handlers would
// write both, and a JSON line with a duplicate key is read differently by
// different tools. Here the innermost value wins.
package logging
