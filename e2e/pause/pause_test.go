package pause

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
)

// role is one single-role delayd that the test pauses.
type role struct {
	name  string // its --roles value, and its stage label
	group string // its consumer group; "" for the dispatcher
	d     *e2etest.Delayd
	// member is its group member id when it was paused.
	member string
}

func TestPause(t *testing.T) {
	e := e2etest.NewEnv(t, stack(t), "pause")
	all := e.Start("all")
	roles := []*role{
		{name: "scanner", group: "delayq-scanner"},
		{name: "ingest", group: "delayq-ingest"},
		{name: "dispatcher"},
	}
	procs := []*e2etest.Delayd{all}
	for _, r := range roles {
		r.d = e.Start(r.name, "--roles", r.name)
		procs = append(procs, r.d)
		t.Cleanup(func() { _ = r.d.Resume() }) // a stopped process cannot stop
	}
	p := e.NewPhase(t, "orders", procs)

	// Each single-role process does its share of the work first.
	busy := map[string]string{
		"scanner":    "delayq_tasks_delivered_total",
		"ingest":     "delayq_tasks_accepted_total",
		"dispatcher": `delayq_dispatch_ticks_total{result="won"}`,
	}
	for _, r := range roles {
		e2etest.WaitFor(t, 60*time.Second, r.name+" at work", func() bool { return metric(t, r.d, busy[r.name]) > 0 })
	}
	p.At(5 * time.Second)
	for _, r := range roles {
		if r.group != "" {
			r.member = member(t, r.d, r.name)
		}
	}
	won := metric(t, all, busy["dispatcher"])
	stopped := time.Now()
	for _, r := range roles {
		if err := r.d.Pause(); err != nil {
			t.Fatalf("SIGSTOP delayd %s: %v", r.d.Name, err)
		}
	}
	// The other instance takes over: the coordinator removed the paused
	// members (their session expired) and the first delayd wins ticks.
	for _, r := range roles {
		if r.group == "" {
			continue
		}
		e2etest.WaitFor(t, 60*time.Second, r.group+" without the paused member", func() bool {
			return !inGroup(t, e.Brokers, r.group, r.member)
		})
	}
	e2etest.WaitFor(t, 30*time.Second, "ticks won by the other dispatcher", func() bool {
		return metric(t, all, busy["dispatcher"]) > won+1
	})
	pause := time.Since(stopped) // about the session (consumer.SessionTimeout) and a rebalance
	for _, r := range roles {
		_ = r.d.Resume()
	}
	// The resumed scanner and ingest meet their fence: each wakes holding
	// work of its lost generation (entries read, a batch fetched), and its
	// first writes for it are refused. The dispatcher's fence refuses a
	// write only when the pause found it waiting for a tick (the tick is
	// then skipped) or between winning and writing; a pause inside a lock
	// attempt that lost, or after a tick's writes, leaves nothing to
	// refuse, so its count is reported, not required (its unit tests,
	// TestTickFencedAfterItsTurn and TestTickSkippedAfterItsTurn, cover
	// both cases).
	for _, r := range roles {
		if r.group == "" {
			continue
		}
		e2etest.WaitFor(t, 30*time.Second, r.name+"'s fence refusing writes", func() bool {
			return fenced(t, r.d, r.name) > 0
		})
	}

	o := p.Finish()
	var extra []string
	for _, r := range roles {
		extra = append(extra, fmt.Sprintf("%s_fenced=%v", r.name, fenced(t, r.d, r.name)))
	}
	p.Summary(o, fmt.Sprintf("paused=%v %s", e2etest.Ms(pause), strings.Join(extra, " ")))
	// Duplicates are reported, not failed: what a paused scanner produced
	// and had not removed yet, and a write in flight when it stopped, are
	// delivered again by the next owner (at least once).
	p.Check(o, true)
}

// metrics returns the samples of d's /metrics, by series ("name{labels}").
func metrics(t *testing.T, d *e2etest.Delayd) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + d.HTTP + "/metrics")
	if err != nil {
		t.Fatalf("metrics of %s: %v", d.Name, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// metric returns one series of d's metrics, 0 when absent.
func metric(t *testing.T, d *e2etest.Delayd, series string) float64 {
	t.Helper()
	return metrics(t, d)[series]
}

// fenced sums d's delayq_fenced_writes_total of stage.
func fenced(t *testing.T, d *e2etest.Delayd, stage string) float64 {
	t.Helper()
	var n float64
	for k, v := range metrics(t, d) {
		if strings.HasPrefix(k, "delayq_fenced_writes_total{") && strings.Contains(k, `stage="`+stage+`"`) {
			n += v
		}
	}
	return n
}

// member returns the member id of the last generation d's component
// started, from its JSON log.
func member(t *testing.T, d *e2etest.Delayd, component string) string {
	t.Helper()
	f, err := os.Open(d.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for line := range strings.SplitSeq(string(b), "\n") {
		var rec struct {
			Msg       string `json:"msg"`
			Component string `json:"component"`
			Member    string `json:"member"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "generation started" && rec.Component == component {
			id = rec.Member
		}
	}
	if id == "" {
		t.Fatalf("no generation of %s in %s's log", component, d.Name)
	}
	return id
}

// inGroup reports whether member is in group, as its coordinator says.
func inGroup(t *testing.T, brokers []string, group, member string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c := &kafka.Client{Addr: kafka.TCP(brokers...)}
	res, err := c.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(res.Groups) != 1 || res.Groups[0].Error != nil {
		return true // not known: ask again
	}
	return slices.ContainsFunc(res.Groups[0].Members, func(m kafka.DescribeGroupsResponseMember) bool {
		return m.MemberID == member
	})
}
