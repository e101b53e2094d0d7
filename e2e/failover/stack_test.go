package failover

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/tsuna/gohbase"
	"github.com/tsuna/gohbase/hrpc"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/topics"
)

// The private cluster's ports: none of them is another stack's, and all
// lie below Linux's ephemeral range (32768-60999), where an outgoing
// connection of any process on the machine may hold a port just when a
// service restarts (a RegionServer and a broker failed to start so).
const (
	kafkaPort  = 24092 // kafka-1; kafka-2 and kafka-3 are +2 and +4, controllers +1
	redisPort  = 24379
	zkPort     = 24181
	masterPort = 24000
	regionPort = 24020 // hbase-rs-1; hbase-rs-2 is +10
)

var private = &e2etest.PrivateStack{Name: "failover", Env: []string{
	"CLUSTER=1",
	"KAFKA_PORT=" + strconv.Itoa(kafkaPort),
	"REDIS_PORT=" + strconv.Itoa(redisPort),
	"HBASE_ZK_PORT=" + strconv.Itoa(zkPort),
	"HBASE_MASTER_PORT=" + strconv.Itoa(masterPort),
	"HBASE_REGIONSERVER_PORT=" + strconv.Itoa(regionPort),
}}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(e2etest.MainPrivate(m, private))
}

// brokerService maps a Kafka node id to its service name.
func brokerService(id int) string { return "kafka-" + strconv.Itoa(id) }

// rsService maps a RegionServer port to its service name.
func rsService(port int) string { return "hbase-rs-" + strconv.Itoa((port-regionPort)/10+1) }

// stack returns the private cluster, starting it on first use
// (PrivateStack.Require).
func stack(t *testing.T) e2etest.Stack {
	t.Helper()
	private.Require(t, "the failover tests start a cluster of their own and run about 11 minutes")
	return e2etest.Stack{
		Brokers: []string{addr(kafkaPort), addr(kafkaPort + 2), addr(kafkaPort + 4)},
		Redis:   addr(redisPort),
		ZK:      addr(zkPort),
	}
}

var addr = e2etest.Addr

// stack runs deploy/local/stack on the cluster and fails the test on an
// error; it returns the command's standard output.
func stackCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := private.Output(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// restoreOnExit starts service again when the test ends, should it end
// (failed) while the service is away: the next fault needs it.
func restoreOnExit(t *testing.T, service string) {
	t.Cleanup(func() {
		if _, err := private.Cmd("start", service); err != nil {
			t.Errorf("restore %s: %v", service, err)
		}
	})
}

// waitFor polls check until it returns nil (3 minutes at most) and returns
// that moment.
func waitFor(t *testing.T, what string, check func() error) time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var err error
	for time.Now().Before(deadline) {
		if err = check(); err == nil {
			return time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: still failing after 3 minutes: %v", what, err)
	return time.Time{}
}

// partitions returns the metadata of the partitions of delay-input and
// delay-scan.
func partitions(e *e2etest.Env) ([]kafka.Partition, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(e.Brokers...), Timeout: 5 * time.Second}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topics.Input, topics.Scan}})
	if err != nil {
		return nil, err
	}
	var ps []kafka.Partition
	for _, tp := range md.Topics {
		if tp.Error != nil {
			return nil, fmt.Errorf("%s: %w", tp.Name, tp.Error)
		}
		ps = append(ps, tp.Partitions...)
	}
	return ps, nil
}

// replicated reports nil when every delay-input and delay-scan partition
// has a leader and all 3 replicas in sync.
func replicated(e *e2etest.Env) error {
	ps, err := partitions(e)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Error != nil || p.Leader.ID <= 0 || len(p.Isr) != 3 || len(p.Replicas) != 3 {
			return fmt.Errorf("%s/%d: leader %d, %d of %d replicas in sync (%v)", p.Topic, p.ID, p.Leader.ID, len(p.Isr), len(p.Replicas), p.Error)
		}
	}
	return nil
}

// led reports nil when every delay-input and delay-scan partition has a
// leader.
func led(e *e2etest.Env) error {
	ps, err := partitions(e)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Error != nil || p.Leader.ID <= 0 {
			return fmt.Errorf("%s/%d: no leader (%v)", p.Topic, p.ID, p.Error)
		}
	}
	return nil
}

// busiestBroker returns the node id leading the most delay-input and
// delay-scan partitions, and how many it leads of how many.
func busiestBroker(t *testing.T, e *e2etest.Env) (id, led, of int) {
	t.Helper()
	ps, err := partitions(e)
	if err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for _, p := range ps {
		count[p.Leader.ID]++
	}
	for n, c := range count {
		if c > led || c == led && n < id {
			id, led = n, c
		}
	}
	return id, led, len(ps)
}

// tableAnswers makes one Get on the test's table.
func tableAnswers(e *e2etest.Env) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := gohbase.NewClient(e.ZK, gohbase.Logger(slog.New(slog.DiscardHandler)))
	defer c.Close()
	get, err := hrpc.NewGetStr(ctx, e.Run, "probe")
	if err != nil {
		return err
	}
	_, err = c.Get(get)
	return err
}

// regions returns the RegionServer port of each region of the test's
// table, by encoded region name.
func regions(t *testing.T, e *e2etest.Env) map[string]int {
	t.Helper()
	out := stackCmd(t, "admin", "regions", e.Run)
	rs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("admin regions: unexpected line %q", line)
		}
		port, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("admin regions: %q: %v", line, err)
		}
		rs[f[0]] = port
	}
	return rs
}

// perServer counts regions by RegionServer port.
func perServer(rs map[string]int) map[int]int {
	n := map[int]int{regionPort: 0, regionPort + 10: 0}
	for _, port := range rs {
		n[port]++
	}
	return n
}
