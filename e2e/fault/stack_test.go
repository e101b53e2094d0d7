package fault

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/topics"
)

// The private stack's ports: none of them is one of the shared stack's.
const (
	kafkaPort      = 19092
	controllerPort = 19093
	redisPort      = 16379
	zkPort         = 12181
	masterPort     = 16100
	regionPort     = 16120
)

// private is the stack of the package: all three services.
var private = &e2etest.PrivateStack{Name: "fault", Env: []string{
	"KAFKA_PORT=" + strconv.Itoa(kafkaPort),
	"KAFKA_CONTROLLER_PORT=" + strconv.Itoa(controllerPort),
	"REDIS_PORT=" + strconv.Itoa(redisPort),
	"HBASE_ZK_PORT=" + strconv.Itoa(zkPort),
	"HBASE_MASTER_PORT=" + strconv.Itoa(masterPort),
	"HBASE_REGIONSERVER_PORT=" + strconv.Itoa(regionPort),
	"KAFKA_HEAP=384m",
	"HBASE_HEAP=768m",
}}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(e2etest.MainPrivate(m, private))
}

// stack returns the private stack, starting it on first use
// (PrivateStack.Require).
func stack(t *testing.T) e2etest.Stack {
	t.Helper()
	private.Require(t, "the fault tests start a stack of their own and run about 10 minutes")
	return e2etest.Stack{
		Brokers: []string{addr(kafkaPort)},
		Redis:   addr(redisPort),
		ZK:      addr(zkPort),
	}
}

var addr = e2etest.Addr

// stopService takes service away: SIGTERM, or SIGKILL when kill is set.
func stopService(t *testing.T, service string, kill bool) time.Duration {
	t.Helper()
	args := []string{"stop", service}
	if kill {
		args = []string{"stop", "--kill", service}
	}
	took, err := private.Cmd(args...)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// startService brings service back and waits until a real client call
// succeeds (3 minutes at most); it returns that moment.
func startService(t *testing.T, e *e2etest.Env, service string) time.Time {
	t.Helper()
	if _, err := private.Cmd("start", service); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	var err error
	for time.Now().Before(deadline) {
		if err = answers(e, service); err == nil {
			return time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s started but does not answer after 3 minutes: %v", service, err)
	return time.Time{}
}

// answers makes one real client call to service.
func answers(e *e2etest.Env, service string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch service {
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: e.Redis})
		defer rdb.Close()
		return rdb.Ping(ctx).Err()
	case "kafka":
		client := &kafka.Client{Addr: kafka.TCP(e.Brokers...), Timeout: 5 * time.Second}
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topics.Input}})
		if err != nil {
			return err
		}
		for _, tp := range md.Topics {
			if tp.Error != nil {
				return tp.Error
			}
			for _, p := range tp.Partitions {
				if p.Error != nil || p.Leader.ID < 0 {
					return fmt.Errorf("%s/%d has no leader: %v", tp.Name, p.ID, p.Error)
				}
			}
		}
		return nil
	case "hbase":
		c := gohbase.NewClient(e.ZK, gohbase.Logger(slog.New(slog.DiscardHandler)))
		defer c.Close()
		get, err := hrpc.NewGetStr(ctx, e.Run, "probe")
		if err != nil {
			return err
		}
		_, err = c.Get(get)
		return err
	}
	return fmt.Errorf("unknown service %s", service)
}
