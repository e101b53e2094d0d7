package netfault

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
)

// Timing shared by the tests.
const (
	faultAt  = 20 * time.Second // when the fault begins, after the input started
	faultFor = 30 * time.Second
	latency  = 500 // ms added to every answer
	onTime   = time.Second
	// What shows that the fault was in the path.
	minStall = 10 * time.Second       // a black hole stops deliveries this long at least
	minLate  = 400 * time.Millisecond // latency makes some delivery this late at least
)

// inMakeTest are the tests `make test` runs; the others need
// DELAYQ_NETFAULT_ALL=1 (`make faults`).
var inMakeTest = map[string]bool{
	"TestBlackHoleKafka": true,
	"TestLatencyHBase":   true,
}

// netFault runs one fault: toxic between delayd and dep from faultAt for
// faultFor, under steady input, and judges the run.
func netFault(t *testing.T, dep string, toxic e2etest.Toxic) {
	if !inMakeTest[t.Name()] && os.Getenv("DELAYQ_NETFAULT_ALL") != "1" {
		t.Skip("DELAYQ_NETFAULT_ALL=1 (make faults) runs the whole matrix; make test runs one black hole and one latency")
	}
	e := env(t)
	d := e.Start("d0")
	p := e.NewPhase(t, "orders", []*e2etest.Delayd{d})
	p.At(faultAt)
	if err := proxied.Inject(dep, toxic); err != nil {
		t.Fatal(err)
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := proxied.Heal(dep, toxic); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(heal) // the next test needs the path clear
	began := time.Now()
	time.Sleep(faultFor)
	heal()
	ended := time.Now()
	o := p.Finish()
	rep := o.Report
	p.Summary(o, fmt.Sprintf("stall=%v recovery=%v (%s %s %v from %v)",
		e2etest.Ms(rep.LongestGap()), e2etest.Ms(rep.Recovery(ended, onTime)), dep, toxic.Kind,
		faultFor, e2etest.Ms(began.Sub(p.Began))))
	p.Check(o, true)
	switch toxic.Kind {
	case e2etest.BlackHole:
		if gap := rep.LongestGap(); gap < minStall {
			t.Errorf("the longest gap between deliveries is %v, under %v: was the black hole in delayd's path to %s?", gap, minStall, dep)
		}
	case e2etest.Latency:
		if worst := e2etest.Percentile(rep.Lateness, 1); worst < minLate {
			t.Errorf("the latest delivery was %v late, under %v: was the latency in delayd's path to %s?", worst, minLate, dep)
		}
	}
}

var (
	blackHole = e2etest.Toxic{Name: "blackhole", Kind: e2etest.BlackHole}
	slow      = e2etest.Toxic{Name: "latency", Kind: e2etest.Latency, Amount: latency}
)

// TestBlackHoleRedis: nothing passes between delayd and Redis for 30 s.
func TestBlackHoleRedis(t *testing.T) { netFault(t, "redis", blackHole) }

// TestBlackHoleHBase: nothing passes between delayd and HBase (ZooKeeper
// and the region server) for 30 s.
func TestBlackHoleHBase(t *testing.T) { netFault(t, "hbase", blackHole) }

// TestBlackHoleKafka: nothing passes between delayd and Kafka for 30 s;
// the test's producer, direct, keeps writing meanwhile.
func TestBlackHoleKafka(t *testing.T) { netFault(t, "kafka", blackHole) }

// TestLatencyRedis: every Redis answer to delayd 500 ms late for 30 s.
func TestLatencyRedis(t *testing.T) { netFault(t, "redis", slow) }

// TestLatencyHBase: every HBase answer to delayd 500 ms late for 30 s.
func TestLatencyHBase(t *testing.T) { netFault(t, "hbase", slow) }

// TestLatencyKafka: every Kafka answer to delayd 500 ms late for 30 s.
func TestLatencyKafka(t *testing.T) { netFault(t, "kafka", slow) }
