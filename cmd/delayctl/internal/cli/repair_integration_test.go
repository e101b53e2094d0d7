package cli

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

var repairLine = regexp.MustCompile(`(?m)^ +(scanned|missing from the index|indexed again|of which already due|already indexed|skipped as cancelled|skipped, moved elsewhere|op flags set again)\s+(\d+)$`)

func repairSummary(t *testing.T, out string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for _, l := range repairLine.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.ParseInt(l[2], 10, 64)
		m[l[1]] = n
	}
	if _, ok := m["scanned"]; !ok {
		t.Fatalf("no summary in:\n%s", out)
	}
	return m
}

// TestRepair is must-show 4 of issue 27: index entries of a range deleted
// by hand; repair --dry-run counts them, repair indexes them again, a
// second repair adds nothing, and cancelled (by id and due time, by id
// alone) and rescheduled tasks are not brought back at their old times.
func TestRepair(t *testing.T) {
	const n, lost = 10_000, 3_000
	s := newStack(t, 16)
	s.init()
	ctx := t.Context()
	store, ix := s.store(), s.index().Repairer()
	topic := "dqtest-ctl-repair-" + s.suffix
	base := time.Now().Add(10 * time.Minute).Truncate(time.Second).UnixMilli()
	recorded := time.Now().UnixMilli()

	var tasks []payload.Task
	var ids []payload.IDWrite
	var plain, indexed, gone []zset.Entry
	task := func(name string, at int64) payload.Task {
		tk := payload.Task{ID: payload.TaskID(name), Name: name, Topic: topic, ExecAt: at, Value: []byte(name)}
		tasks = append(tasks, tk)
		return tk
	}
	entry := func(tk payload.Task) zset.Entry { return zset.Entry{ID: tk.ID, ExecAt: tk.ExecAt} }
	for i := range n {
		tk := task(fmt.Sprintf("rp-%s-%d", s.suffix, i), base+int64(i)*50)
		ids = append(ids, payload.IDWrite{ID: tk.ID, Submitted: tk.ExecAt, SubmitRecorded: recorded})
		plain = append(plain, entry(tk))
	}
	indexed = append(indexed, plain...)
	var moved, cancelledByID []zset.Entry
	for i := range 100 {
		// Cancelled by id and due time: the row's cancel marker.
		c := task(fmt.Sprintf("rp-cancel-%s-%d", s.suffix, i), base+int64(i)*50+1)
		tasks = append(tasks, payload.Task{ID: c.ID, Name: c.Name, ExecAt: c.ExecAt, Cancel: true})
		ids = append(ids, payload.IDWrite{ID: c.ID, Submitted: c.ExecAt, SubmitRecorded: recorded})
		gone = append(gone, entry(c))
		// Cancelled by id alone: only the id row says so here.
		x := task(fmt.Sprintf("rp-cancelid-%s-%d", s.suffix, i), base+int64(i)*50+2)
		ids = append(ids, payload.IDWrite{ID: x.ID, Submitted: x.ExecAt, SubmitRecorded: recorded, Cancel: true})
		gone = append(gone, entry(x))
		cancelledByID = append(cancelledByID, entry(x))
		// Rescheduled 5 minutes later: the old row and its copy.
		old := task(fmt.Sprintf("rp-moved-%s-%d", s.suffix, i), base+int64(i)*50+3)
		now := task(old.Name, old.ExecAt+5*time.Minute.Milliseconds())
		ids = append(ids, payload.IDWrite{ID: old.ID, Submitted: old.ExecAt, SubmitRecorded: recorded, At: now.ExecAt, Moving: now.ExecAt, MoveRecorded: recorded})
		gone = append(gone, entry(old))
		moved = append(moved, entry(now))
	}
	indexed = append(indexed, moved...)
	if err := store.Put(ctx, tasks); err != nil {
		t.Fatal(err)
	}
	if err := store.PutIDs(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(ctx, time.Now(), indexed); err != nil {
		t.Fatal(err)
	}
	// Deleted by hand: the first lost plain tasks and every moved one.
	for _, e := range append(append([]zset.Entry{}, plain[:lost]...), moved...) {
		if err := ix.Remove(ctx, ix.Key(e), []zset.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	from, to := strconv.FormatInt(base, 10), strconv.FormatInt(base+time.Hour.Milliseconds(), 10)
	rows := int64(len(tasks) - 100) // a cancel marker shares its task's row

	out := s.ok("", "repair", "--from", from, "--to", to, "--dry-run", "--progress", "none")
	got := repairSummary(t, out)
	if got["scanned"] != rows || got["missing from the index"] != lost+100 || got["already indexed"] != n-lost ||
		got["skipped as cancelled"] != 200 || got["skipped, moved elsewhere"] != 100 {
		t.Fatalf("dry run:\n%s", out)
	}
	if pending(t, ix, plain[:lost]) != 0 {
		t.Fatal("the dry run indexed tasks")
	}

	start := time.Now()
	out = s.ok("", "repair", "--from", from, "--to", to, "--op-flags", "--progress", "none")
	took := time.Since(start)
	got = repairSummary(t, out)
	if got["indexed again"] != lost+100 || got["of which already due"] != 0 || got["op flags set again"] < 200 {
		t.Fatalf("repair:\n%s", out)
	}
	t.Logf("repair of %d rows, %d indexed again: %v (%.0f rows/s)\n%s", rows, lost+100, took, float64(rows)/took.Seconds(), out)
	if c := pending(t, ix, indexed); c != len(indexed) {
		t.Fatalf("%d of %d pending tasks indexed after the repair", c, len(indexed))
	}
	if c := pending(t, ix, gone); c != 0 {
		t.Fatalf("%d cancelled or moved-away tasks indexed after the repair", c)
	}
	cids := make([]uint64, len(cancelledByID))
	for i, e := range cancelledByID {
		cids[i] = e.ID
	}
	flagged, err := ix.Flagged(ctx, append(cids, plain[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range flagged {
		if f != (i < len(cids)) {
			t.Fatalf("op flag %d of %d is %v after --op-flags", i, len(flagged), f)
		}
	}

	out = s.ok("", "repair", "--from", from, "--to", to, "--progress", "none")
	got = repairSummary(t, out)
	if got["indexed again"] != 0 || got["already indexed"] != int64(len(indexed)) {
		t.Fatalf("second repair:\n%s", out)
	}
	segs, err := ix.Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var backlog int64
	for _, sc := range segs {
		backlog += sc.Pending
	}
	if backlog != int64(len(indexed)) {
		t.Fatalf("backlog %d after two repairs, want %d (one entry per task)", backlog, len(indexed))
	}
}

func pending(t *testing.T, ix zset.Repairer, entries []zset.Entry) int {
	t.Helper()
	n := 0
	for _, e := range entries {
		ok, err := ix.Pending(t.Context(), e)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			n++
		}
	}
	return n
}
