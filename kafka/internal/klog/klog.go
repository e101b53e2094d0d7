// Package klog adapts a *slog.Logger to kafka-go's printf-style logger, for
// the readers and writers of delayq's kafka packages.
package klog

import (
	"fmt"
	"log/slog"

	"github.com/segmentio/kafka-go"
)

// Errors returns a kafka-go logger that writes each line to l at ERROR with
// the message "kafka_client_error" and the text under "detail".
func Errors(l *slog.Logger) kafka.LoggerFunc {
	return func(format string, args ...any) {
		l.Error("kafka_client_error", "detail", fmt.Sprintf(format, args...))
	}
}
