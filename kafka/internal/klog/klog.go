// Package klog adapts a *slog.Logger to kafka-go's printf-style error
// logger, for the readers and writers of delayq's kafka packages.
//
// kafka-go reports through its error logger what it retries by itself:
// rebalances, coordinator moves, brokers it cannot reach. None of that is an
// ERROR of delayq: routine group churn goes out at INFO, the rest at WARN,
// and the stages themselves say when they stall (internal/retry).
package klog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/segmentio/kafka-go"
)

// routine are fragments of kafka-go's lines about ordinary consumer-group
// churn (a member joined or left, the generation moved on, the coordinator
// moved with its broker).
var routine = []string{
	"rebalance",
	"Rebalance",
	"Illegal Generation",
	"Unknown Member",
	"Failed to join group",
	"Failed to sync group",
	"Partition changes found",
	// A coordinator or broker away: the group's join stall says so once
	// (consumer.Generations).
	"Unable to establish connection to consumer group coordinator",
	"Problem getting partitions while checking for changes",
}

// Logger returns a kafka-go logger writing each line to l as
// "kafka_client" with the text under "detail": at INFO for routine group
// churn, at WARN otherwise.
func Logger(l *slog.Logger) kafka.LoggerFunc {
	return func(format string, args ...any) {
		detail := fmt.Sprintf(format, args...)
		level := slog.LevelWarn
		for _, r := range routine {
			if strings.Contains(detail, r) {
				level = slog.LevelInfo
				break
			}
		}
		l.Log(context.Background(), level, "kafka_client", "detail", strings.TrimSpace(detail))
	}
}
