package netfault

import (
	"flag"
	"os"
	"testing"

	"github.com/delayq/delayq/e2e/e2etest"
)

// proxied is the package's stack: every service, each behind its proxy.
var proxied = &e2etest.ProxiedStack{Name: "netfault", Base: 31000, Env: []string{"KAFKA_HEAP=384m", "HBASE_HEAP=768m"}}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(e2etest.MainPrivate(m, proxied.Private()))
}

// env returns an Env on the private stack whose delayd go through the
// proxies, starting the stack on first use.
func env(t *testing.T) *e2etest.Env {
	t.Helper()
	direct, via := proxied.Require(t, "the network-fault tests start a stack of their own and run minutes")
	e := e2etest.NewEnv(t, direct, "netfault")
	e.Via = via
	return e
}
