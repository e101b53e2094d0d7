package stacktest

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"
)

// DropTable disables and deletes an HBase table a test created; a failure
// is logged, not fatal.
func DropTable(tb testing.TB, zk, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ac := gohbase.NewAdminClient(zk, gohbase.Logger(slog.New(slog.DiscardHandler)))
	if err := ac.DisableTable(hrpc.NewDisableTable(ctx, []byte(table))); err != nil {
		tb.Logf("disable %s: %v", table, err)
		return
	}
	if err := ac.DeleteTable(hrpc.NewDeleteTable(ctx, []byte(table))); err != nil {
		tb.Logf("delete %s: %v", table, err)
	}
}

// DropKeys deletes the Redis keys under a test's own prefix (never
// FLUSHALL: tests in other packages share this Redis).
func DropKeys(tb testing.TB, rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Logf("drop keys %s:*: %v", prefix, err)
	}
}

// RedisPrefix returns a client of the local Redis and a key prefix unique
// to this test (name-<nanos>); the test's keys are deleted and the client
// closed when it ends.
func RedisPrefix(tb testing.TB, name string) (*redis.Client, string) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: Redis(tb)})
	prefix := fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	tb.Cleanup(func() {
		DropKeys(tb, c, prefix)
		c.Close()
	})
	return c, prefix
}
