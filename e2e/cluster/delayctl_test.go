package cluster

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
)

// TestDelayctl runs delayctl's Redis commands against the cluster through
// a delayd on it: backlog counts the tasks of segments on every master,
// inspect finds a task's zset, cancel marks a pending task, and backfill
// tells pending tasks (checked in Redis) from delivered ones and delivers
// these again.
func TestDelayctl(t *testing.T) {
	e := stack(t)
	ctl := delayctl(t, e)
	topic := e.Topic("orders")
	out := e.Collect(topic)
	e.Start("d0", delaydFlags()...)

	now := time.Now().Truncate(time.Millisecond)
	const far, soon = 60, 3
	farAt, soonAt := now.Add(time.Hour), now.Add(3*time.Second)
	var msgs []kafka.Message
	for i := range far {
		// Due over a minute: several segments, 256 shards, all masters.
		msgs = append(msgs, e2etest.TaskMessage(topic, e.Seq("far-"+strconv.Itoa(i)), "far-"+strconv.Itoa(i), now, farAt.Add(time.Duration(i)*time.Second), 1))
	}
	for i := range soon {
		msgs = append(msgs, e2etest.TaskMessage(topic, e.Seq("soon-"+strconv.Itoa(i)), "soon-"+strconv.Itoa(i), now, soonAt, 1))
	}
	e.Produce(t.Context(), msgs)
	e2etest.WaitFor(t, 30*time.Second, "the soon tasks delivered", func() bool { return out.Len() >= soon })

	var backlog struct {
		Total    int64 `json:"total"`
		Segments []struct {
			Pending int64 `json:"pending"`
		} `json:"segments"`
	}
	e2etest.WaitFor(t, 30*time.Second, "backlog of the far tasks", func() bool {
		if err := json.Unmarshal([]byte(ctl.ok("backlog", "--json")), &backlog); err != nil {
			t.Fatal(err)
		}
		return backlog.Total == far
	})
	t.Logf("backlog: %d pending in %d segments", backlog.Total, len(backlog.Segments))

	at := func(i int) string { return strconv.FormatInt(farAt.Add(time.Duration(i)*time.Second).UnixMilli(), 10) }
	var task struct {
		Stored, Pending, Cancelled bool
		Zset                       string
	}
	if err := json.Unmarshal([]byte(ctl.ok("inspect", "--id", "far-7", "--at", at(7), "--json")), &task); err != nil {
		t.Fatal(err)
	}
	if !task.Stored || !task.Pending || task.Cancelled || !strings.HasPrefix(task.Zset, e.Run+":") {
		t.Fatalf("inspect far-7: %+v, want stored, pending in a zset of %s, not cancelled", task, e.Run)
	}
	port := masterOf(t, clusterClient(t), task.Zset)
	t.Logf("inspect far-7: pending in %s on master %d", task.Zset, port)

	ctl.ok("cancel", "--id", "far-8", "--at", at(8))
	e2etest.WaitFor(t, 30*time.Second, "far-8 marked cancelled", func() bool {
		if err := json.Unmarshal([]byte(ctl.ok("inspect", "--id", "far-8", "--at", at(8), "--json")), &task); err != nil {
			t.Fatal(err)
		}
		return task.Cancelled
	})

	from, to := strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(farAt.Add(2*time.Minute).UnixMilli(), 10)
	sum := summary(t, ctl.ok("backfill", "--from", from, "--to", to, "--skip-pending", "--progress", "none"))
	if sum["scanned"] != far+soon || sum["delivered"] != soon || sum["skipped as pending"] != far-1 || sum["skipped as cancelled"] != 1 {
		t.Fatalf("backfill --skip-pending: %v; want %d scanned, the %d delivered tasks again, %d pending, 1 cancelled", sum, far+soon, soon, far-1)
	}
	e2etest.WaitFor(t, 30*time.Second, "the backfilled tasks", func() bool { return out.Len() >= 2*soon })
	time.Sleep(time.Second)
	if n := out.Len(); n != 2*soon {
		t.Errorf("%d messages on %s, want each soon task twice (%d)", n, topic, 2*soon)
	}
}

// ctl runs a delayctl binary with the flags of the test's delayd.
type ctl struct {
	t    *testing.T
	bin  string
	args []string
}

// delayctl builds cmd/delayctl into the test's temporary directory.
func delayctl(t *testing.T, e *e2etest.Env) *ctl {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "delayctl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/delayq/delayq/cmd/delayctl").CombinedOutput(); err != nil {
		t.Fatalf("go build delayctl: %v\n%s", err, out)
	}
	return &ctl{t: t, bin: bin, args: []string{
		"--brokers", strings.Join(e.Brokers, ","), "--redis", seeds(), "--hbase-zk", e.ZK,
		"--table", e.Run, "--prefix", e.Run, "--salts", "4",
	}}
}

// ok runs a delayctl command and returns its stdout; it fails the test
// unless the command exits 0.
func (c *ctl) ok(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.bin, append(args, c.args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("delayctl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

var summaryLine = regexp.MustCompile(`(?m)^  ([a-z ,]+?)\s+(\d+)$`)

// summary reads the counters of a backfill summary.
func summary(t *testing.T, out string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, g := range summaryLine.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(g[2])
		m[g[1]] = n
	}
	if len(m) == 0 {
		t.Fatalf("no backfill summary in:\n%s", out)
	}
	return m
}
