package redisloss

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/delayq/delayq/e2e/e2etest"
)

// cut is how much of its last writes the restarted Redis of TestLostTail
// lacks: with appendfsync everysec Redis answers writes it has not yet
// written to its append-only file while a background fsync is slow, up to
// 2 s of them, and a kill -9 then takes them along.
const cut = 1500 * time.Millisecond

// TestLostTail: Redis killed -9 under steady input (400 tasks/s, delays
// 0-30 s, 3 % cancelled) and started again on an append-only file cut
// back to its size 1.5 s before the kill: acknowledged index writes,
// removals of delivered entries and op flags are gone, the generation
// marker is not. delayd sees the restart by the master's new replication
// id and repairs the tasks recorded before it from HBase: none lost, none
// early, no cancelled one delivered; a task is delivered twice only if it
// fell due in the seconds before the kill (dupWindow).
func TestLostTail(t *testing.T) {
	e, d, rdb := start(t)
	steady := e.NewPhase(t, "steady", []*e2etest.Delayd{d})
	steady.At(15 * time.Second)

	aof := incrAOF(t)
	size := fileSize(t, aof)
	time.Sleep(cut)
	killed := time.Now()
	if _, err := private.Cmd("stop", "--kill", "redis"); err != nil {
		t.Fatal(err)
	}
	lost := fileSize(t, aof) - size
	if err := os.Truncate(aof, size); err != nil {
		t.Fatal(err)
	}
	if _, err := private.Cmd("start", "redis"); err != nil {
		t.Fatal(err)
	}
	healed := waitHealed(t, rdb, e.Run, killed)
	o := steady.Finish()
	steady.Summary(o, fmt.Sprintf("(append-only file cut by its last %d bytes, %v of writes; index repaired %v after the kill: %s)",
		lost, cut, healed.Sub(killed).Round(time.Millisecond), metrics(t, d)))
	if lost == 0 {
		t.Errorf("the append-only file did not grow in the %v before the kill: nothing was cut", cut)
	}
	if !bytes.Contains(d.Logs(), []byte(`"cause":"restart"`)) {
		t.Errorf("delayd did not log a loss with cause restart; its log ends:\n%s", d.Tail(4096))
	}
	steady.Check(o, true)
	dups, outside := duplicates(o.Ledger, steady.Out.Snapshot(), []window{{killed.Add(-dupWindow), healed}})
	t.Logf("%d duplicate deliveries; %d due outside [kill - %v, repaired]", dups, len(outside), dupWindow)
	if len(outside) > 0 {
		t.Errorf("%d duplicates due outside [kill - %v, repaired]: %v", len(outside), dupWindow, outside)
	}
}

// incrAOF returns the private Redis's current incremental append-only
// file: the last "type i" file its manifest lists (Redis 7 keeps a base
// file and incremental ones in appendonlydir).
func incrAOF(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(private.Dir(), "redis", "appendonlydir")
	manifest, err := os.ReadFile(filepath.Join(dir, "appendonly.aof.manifest"))
	if err != nil {
		t.Fatal(err)
	}
	file := ""
	for line := range strings.SplitSeq(string(manifest), "\n") {
		if f := strings.Fields(line); len(f) == 6 && f[0] == "file" && f[5] == "i" {
			file = f[1]
		}
	}
	if file == "" {
		t.Fatalf("no incremental file in %s/appendonly.aof.manifest:\n%s", dir, manifest)
	}
	return filepath.Join(dir, file)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
