package failover

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
)

// Timing of the faults: `make test` runs the short form, `make faults`
// (DELAYQ_FAULTS_FULL=1, e2etest.Full) the full one.
const (
	faultAt = 10 * time.Second // when a fault begins, after its input started
	onTime  = time.Second      // lateness under this is "back to normal"
)

var (
	// brokerDown is longer than the controller's broker session (6 s,
	// deploy/local/cluster.sh): the killed broker is fenced and its
	// partitions get new leaders.
	brokerDown = e2etest.Pick(15*time.Second, 30*time.Second)
	// rsDown is longer than the RegionServers' ZooKeeper session (10 s):
	// the master declares the server dead and reassigns its regions.
	rsDown = e2etest.Pick(30*time.Second, 60*time.Second)
)

// TestFaults starts the cluster and two delayd once and runs the five
// faults on them one after the other (see the package doc).
func TestFaults(t *testing.T) {
	e := e2etest.NewEnv(t, stack(t), "failover")
	procs := []*e2etest.Delayd{e.Start("d0", "--replication-factor", "3"), e.Start("d1", "--replication-factor", "3")}
	waitFor(t, "delay-input and delay-scan replicated 3 times", func() error { return replicated(e) })
	f := &faults{e: e, procs: procs}
	t.Run("BrokerKill", f.brokerKill)
	t.Run("RollingBrokerRestart", f.rollingBrokerRestart)
	t.Run("RegionServerKill", f.regionServerKill)
	t.Run("RegionMoves", f.regionMoves)
	t.Run("MasterKill", f.masterKill)
}

// faults holds what the faults share: the Env and its delayd.
type faults struct {
	e     *e2etest.Env
	procs []*e2etest.Delayd
}

// phase is one fault's input and judgement, and where delayd's logs were
// when it began.
type phase struct {
	*e2etest.Phase
	t    *testing.T
	logs []int64
}

func (f *faults) begin(t *testing.T, name string) *phase {
	p := &phase{t: t}
	for _, d := range f.procs {
		p.logs = append(p.logs, size(d.Log))
	}
	p.Phase = f.e.NewPhase(t, name, f.procs)
	return p
}

// end judges the phase: began is when the fault began, back when it was
// over (the last service answering again), what says what happened. The
// summary has the longest gap between deliveries and when lateness was
// under 1 s for good, counted from began (recovery) and from back.
// Duplicates fail the phase unless dupsAllowed: a broker that fails or
// steps down while a write waits for its replicas leaves the write's
// outcome unknown (kafka-go has no idempotent producer), and a commit in
// flight to a killed coordinator too. The summary tells them apart by
// their timestamps: resent copies carry their first delivery's (kafka-go
// sent the same write again by itself), redelivered ones a later one (the
// scanner wrote again after an error, or a task was delivered twice).
func (p *phase) end(began, back time.Time, dupsAllowed bool, what string) {
	o := p.Finish()
	warns, errs, sample := p.logLevels()
	resent, again := duplicates(p.Out.Snapshot(), o.Ledger)
	p.Summary(o, fmt.Sprintf("(resent=%d redelivered=%d %v) longest_gap=%v recovery=%v (%v after the fault ended) delayd_warn=%d delayd_error=%d (%s)",
		resent, len(again), again[:min(len(again), 5)], e2etest.Ms(o.Report.LongestGap()),
		e2etest.Ms(o.Report.Recovery(began, onTime)), e2etest.Ms(o.Report.Recovery(back, onTime)), warns, errs, what))
	p.Check(o, dupsAllowed)
	if errs > 0 {
		p.t.Errorf("delayd logged %d ERROR lines during the fault (a stall is one WARN/INFO pair), first: %s", errs, sample)
	}
}

// logLevels counts the WARN and ERROR lines delayd wrote since the phase
// began and returns the first ERROR line.
func (p *phase) logLevels() (warns, errs int, first string) {
	for i, d := range p.Procs {
		var from int64
		if i < len(p.logs) {
			from = p.logs[i]
		}
		b := d.Logs()
		from = min(from, int64(len(b)))
		sc := bufio.NewScanner(bytes.NewReader(b[from:]))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, `"level":"WARN"`):
				warns++
			case strings.Contains(line, `"level":"ERROR"`):
				errs++
				if first == "" {
					first = d.Name + ": " + line
				}
			}
		}
	}
	return warns, errs, first
}

// duplicates counts the repeated deliveries of l's due tasks: resent
// ones carry the timestamp of the task's first delivery, again lists the
// seqs of the others.
func duplicates(got []e2etest.Received, l e2etest.Ledger) (resent int, again []string) {
	first := map[string]time.Time{}
	for _, g := range got {
		seq := e2etest.Header(g.Msg, "seq")
		if _, due := l.Due[seq]; !due {
			continue
		}
		at, seen := first[seq]
		switch {
		case !seen:
			first[seq] = g.Msg.Time
		case g.Msg.Time.Equal(at):
			resent++
		default:
			again = append(again, seq)
		}
	}
	return resent, again
}

func size(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// brokerKill: kill -9 of the broker leading the most delay-input and
// delay-scan partitions, started again 15 s (full: 30 s) later.
func (f *faults) brokerKill(t *testing.T) {
	p := f.begin(t, "brokerkill")
	p.At(faultAt)
	id, led, of := busiestBroker(t, f.e)
	victim := brokerService(id)
	restoreOnExit(t, victim)
	began := time.Now()
	stackCmd(t, "stop", "--kill", victim)
	time.Sleep(brokerDown)
	stackCmd(t, "start", victim)
	back := waitFor(t, "partitions back in sync", func() error { return replicated(f.e) })
	p.end(began, back, true, fmt.Sprintf("%s, leader of %d of %d partitions, killed -9 and started %v later", victim, led, of, brokerDown))
}

// rollingBrokerRestart: kafka-1, then kafka-2 stopped with SIGTERM and
// started again, each once the partitions are back in sync; while kafka-1
// (the first of --brokers) is away, delayd d1 restarts.
func (f *faults) rollingBrokerRestart(t *testing.T) {
	p := f.begin(t, "rolling")
	p.At(faultAt)
	began := time.Now()
	var took []string
	for _, victim := range []string{"kafka-1", "kafka-2"} {
		restoreOnExit(t, victim)
		t0 := time.Now()
		stackCmd(t, "stop", victim)
		stopped := time.Since(t0)
		if victim == "kafka-1" {
			// Once the partitions and the groups have moved to the
			// other brokers: a delayd stopped while its group
			// coordinator moves leaves its last batches uncommitted.
			waitFor(t, "partitions led without kafka-1", func() error { return led(f.e) })
			time.Sleep(5 * time.Second)
			f.procs[1].Stop(t)
			f.procs[1] = f.e.Start("d1", "--replication-factor", "3") // p.Procs too: one slice
			p.logs[1] = 0
		}
		stackCmd(t, "start", victim)
		waitFor(t, "partitions back in sync", func() error { return replicated(f.e) })
		took = append(took, fmt.Sprintf("%s stopped in %v, back in sync %v later", victim, e2etest.Ms(stopped), e2etest.Ms(time.Since(t0)-stopped)))
	}
	p.end(began, time.Now(), true, strings.Join(took, "; ")+"; d1 restarted without kafka-1")
}

// regionServerKill: kill -9 of the RegionServer holding the most regions
// of the table, started again 30 s (full: 60 s) later.
func (f *faults) regionServerKill(t *testing.T) {
	if n := perServer(regions(t, f.e)); n[regionPort] == 0 || n[regionPort+10] == 0 {
		stackCmd(t, "admin", "balance")
	}
	p := f.begin(t, "rskill")
	p.At(faultAt)
	n := perServer(regions(t, f.e))
	port := regionPort
	if n[regionPort+10] > n[regionPort] {
		port = regionPort + 10
	}
	victim := rsService(port)
	restoreOnExit(t, victim)
	stackCmd(t, "stop", "--kill", victim)
	killed := time.Now()
	time.Sleep(rsDown)
	stackCmd(t, "start", victim)
	back := waitFor(t, "table answers", func() error { return tableAnswers(f.e) })
	p.end(killed, back, false, fmt.Sprintf("%s holding %d of %d regions killed -9, started %v later",
		victim, n[port], n[regionPort]+n[regionPort+10], rsDown))
}

// regionMoves: under input, every region of the table moved to one
// RegionServer, a region split, the balancer run and a major compaction
// requested.
func (f *faults) regionMoves(t *testing.T) {
	p := f.begin(t, "moves")
	p.At(faultAt)
	rs := regions(t, f.e)
	before, n := len(rs), perServer(rs)
	target := regionPort // the RegionServer holding fewer regions takes all
	if n[regionPort+10] < n[regionPort] {
		target = regionPort + 10
	}
	// One admin client for the four steps: a JVM start each would
	// spread them over a minute.
	began := time.Now()
	out := stackCmd(t, "admin", "move", f.e.Run, strconv.Itoa(target), "--", "split", f.e.Run, "--", "balance", "--", "compact", f.e.Run)
	steps := strings.Join(strings.Fields(out), " ")
	back := waitFor(t, "table answers", func() error { return tableAnswers(f.e) })
	after := perServer(regions(t, f.e))
	if got := after[regionPort] + after[regionPort+10]; got <= before {
		t.Errorf("the table has %d regions after the split, had %d", got, before)
	}
	p.end(began, back, false, fmt.Sprintf("%s; regions by port %v -> %v", steps, n, after))
}

// masterKill: kill -9 of the HBase master, started again 20 s later; the
// RegionServers keep serving meanwhile.
func (f *faults) masterKill(t *testing.T) {
	p := f.begin(t, "masterkill")
	p.At(faultAt)
	restoreOnExit(t, "hbase-master")
	began := time.Now()
	stackCmd(t, "stop", "--kill", "hbase-master")
	time.Sleep(20 * time.Second)
	t0 := time.Now()
	stackCmd(t, "start", "hbase-master")
	back := time.Now()
	p.end(began, back, false, fmt.Sprintf("hbase-master killed -9, started 20 s later, initialized in %v", e2etest.Ms(back.Sub(t0))))
}
