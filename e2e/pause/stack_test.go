package pause

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/e2e/e2etest"
)

// The private Kafka's ports: none of them is the shared stack's or
// another package's.
const (
	kafkaPort      = 25092
	controllerPort = 25093
)

// private is the package's Kafka. delayd's consumer groups and internal
// topics have fixed names, so on the shared Kafka every delayd of every
// test running at the same time shares them: another test's scanner
// takes this test's scan tasks (and drops them: another prefix), and
// takeovers are another test's rebalances. Redis and HBase are shared;
// the Env's prefix and table keep them apart.
var private = &e2etest.PrivateStack{Name: "e2e-pause", Services: []string{"kafka"}, Env: []string{
	"KAFKA_PORT=" + strconv.Itoa(kafkaPort),
	"KAFKA_CONTROLLER_PORT=" + strconv.Itoa(controllerPort),
	"KAFKA_HEAP=384m",
}}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(e2etest.MainPrivate(m, private))
}

// stack returns a Kafka of the package's own (started on first use) with
// the shared Redis and HBase.
func stack(t *testing.T) e2etest.Stack {
	t.Helper()
	s := e2etest.Stack{Redis: stacktest.Redis(t), ZK: stacktest.HBase(t)}
	private.Require(t, "the pause test starts a Kafka of its own and runs about 3 minutes")
	s.Brokers = []string{e2etest.Addr(kafkaPort)}
	return s
}
