package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	kafka "github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/cmd/delayctl/internal/backfill"
	"github.com/delayq/delayq/deploy/stacktest"
	"github.com/delayq/delayq/ingest"
	"github.com/delayq/delayq/kafka/admin"
	"github.com/delayq/delayq/kafka/producer"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/hbase"
	"github.com/delayq/delayq/zset"
)

// stack is one test's corner of the real local stack: its own HBase table,
// Redis prefix and topic suffix.
type stack struct {
	t       *testing.T
	brokers []string
	redis   string
	zk      string
	suffix  string
	table   string
	prefix  string
	salts   int
	rdb     *redis.Client
	inited  bool // the table is dropped at cleanup
}

func newStack(t *testing.T, salts int) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("short")
	}
	nanos := time.Now().UnixNano()
	s := &stack{
		t:       t,
		brokers: stacktest.Kafka(t),
		redis:   stacktest.Redis(t),
		zk:      stacktest.HBase(t),
		suffix:  strconv.FormatInt(nanos, 10),
		salts:   salts,
	}
	s.table = "delayq_test_ctl_" + s.suffix
	s.prefix = "dqtest-ctl-" + s.suffix
	s.rdb = redis.NewClient(&redis.Options{Addr: s.redis})
	t.Cleanup(func() {
		stacktest.DropKeys(t, s.rdb, s.prefix)
		s.rdb.Close()
	})
	return s
}

// run runs delayctl in-process against the stack (connection flags first,
// so a test can override them) with the real clock.
func (s *stack) run(stdin string, args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	var out, errOut bytes.Buffer
	code = s.main(s.t.Context(), stdin, &out, &errOut, args...)
	return out.String(), errOut.String(), code
}

func (s *stack) main(ctx context.Context, stdin string, stdout, stderr io.Writer, args ...string) int {
	full := append([]string{
		args[0],
		"--brokers", strings.Join(s.brokers, ","), "--redis", s.redis, "--hbase-zk", s.zk,
		"--table", s.table, "--prefix", s.prefix, "--salts", strconv.Itoa(s.salts),
	}, args[1:]...)
	return Main(ctx, full, IO{
		Stdin:  strings.NewReader(stdin),
		Stdout: stdout,
		Stderr: stderr,
		Getenv: func(string) string { return "" },
	})
}

// ok runs a command that must succeed and returns its stdout.
func (s *stack) ok(stdin string, args ...string) string {
	s.t.Helper()
	stdout, stderr, code := s.run(stdin, args...)
	if code != 0 {
		s.t.Fatalf("delayctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// init creates the table with delayctl init and drops it at the end.
func (s *stack) init() {
	s.t.Helper()
	out := s.ok("", "init", "--partitions", "2")
	if !strings.Contains(out, "hbase table ready: "+s.table) {
		s.t.Fatalf("init output: %s", out)
	}
	if !s.inited {
		s.inited = true
		s.t.Cleanup(func() { stacktest.DropTable(s.t, s.zk, s.table) })
	}
}

func (s *stack) store() *hbase.Store {
	s.t.Helper()
	st, err := hbase.New(hbase.Config{ZK: s.zk, Table: s.table, Salts: s.salts})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(st.Close)
	return st
}

func (s *stack) index() *zset.Index {
	s.t.Helper()
	ix, err := zset.New(s.rdb, zset.Config{Prefix: s.prefix})
	if err != nil {
		s.t.Fatal(err)
	}
	return ix
}

func (s *stack) topics(names ...string) {
	s.t.Helper()
	specs := make([]admin.Spec, len(names))
	for i, n := range names {
		specs[i] = admin.Spec{Name: n, Partitions: 4}
	}
	if err := admin.Ensure(s.t.Context(), s.brokers, nil, specs); err != nil {
		s.t.Fatal(err)
	}
}

// TestInit runs init twice: topics and table exist, the second run is a
// no-op that succeeds; a table that does not exist is named as such.
func TestInit(t *testing.T) {
	s := newStack(t, 4)
	s.init()
	s.init()
	if _, err := s.store().Get(t.Context(), []payload.Ref{{ID: 1, ExecAt: 1}}); err != nil {
		t.Fatalf("table %s not readable after init: %v", s.table, err)
	}
	conn, err := kafka.Dial("tcp", s.brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, topic := range []string{"delay-input", "delay-input-slow", "delay-scan", "delay-failed"} {
		if ps, err := conn.ReadPartitions(topic); err != nil || len(ps) == 0 {
			t.Errorf("topic %s after init: %v", topic, err)
		}
	}

	_, stderr, code := s.run("", "inspect", "--table", "delayq_test_ctl_missing_"+s.suffix, "--id", "x", "--at", "now")
	if code != 1 || !strings.Contains(stderr, "hbase table delayq_test_ctl_missing_"+s.suffix+" not found") {
		t.Errorf("inspect on a missing table: exit %d, stderr %q", code, stderr)
	}
}

var (
	idLine  = regexp.MustCompile(`(?m)^id\s+(\S+)$`)
	dueLine = regexp.MustCompile(`(?m)^due\s+\S+ \(unix ms (\d+)\)`)
)

// TestTaskCommands submits tasks with delayctl (value from an argument, a
// file and stdin), runs the real ingester on the input topics, then
// inspects, cancels and inspects again, and reads the backlog.
func TestTaskCommands(t *testing.T) {
	s := newStack(t, 4)
	s.init()
	input, slow, failed := "dqtest-ctl-in-"+s.suffix, "dqtest-ctl-slow-"+s.suffix, "dqtest-ctl-failed-"+s.suffix
	biz := "dqtest-ctl-biz-" + s.suffix
	s.topics(input, slow, failed)
	topics := []string{"--input-topic", input, "--slow-topic", slow}

	file := filepath.Join(t.TempDir(), "value.json")
	if err := os.WriteFile(file, []byte(`{"from":"file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	type submitted struct {
		id string
		at int64
	}
	var outs []string
	submit := func(stdin string, args ...string) submitted {
		t.Helper()
		out := s.ok(stdin, append(append([]string{"submit", "--topic", biz}, topics...), args...)...)
		outs = append(outs, out)
		id, due := idLine.FindStringSubmatch(out), dueLine.FindStringSubmatch(out)
		if id == nil || due == nil {
			t.Fatalf("submit output lacks id or due:\n%s", out)
		}
		at, _ := strconv.ParseInt(due[1], 10, 64)
		return submitted{id: id[1], at: at}
	}
	fromArg := submit("", "--after", "10m", "--key", "k-arg", "-H", "trace=abc", "-H", "tenant=7", "hello")
	at := time.Now().Add(20 * time.Minute).UTC().Truncate(time.Millisecond)
	fromFile := submit("", "--at", at.Format(time.RFC3339Nano), "--id", "file-"+s.suffix, "--file", file)
	fromStdin := submit("from stdin", "--after", "3h", "--id", "stdin-"+s.suffix)
	if fromFile.id != "file-"+s.suffix || fromFile.at != at.UnixMilli() {
		t.Errorf("submit --at --id: got %+v, want id file-%s at %d", fromFile, s.suffix, at.UnixMilli())
	}
	if !strings.Contains(outs[0], "via "+input) || !strings.Contains(outs[2], "via "+slow) {
		t.Errorf("a task due in 10m must go via %s, one due in 3h via %s:\n%s", input, slow, strings.Join(outs, ""))
	}
	if _, err := strconv.ParseUint(fromArg.id, 10, 64); err != nil {
		t.Errorf("generated id %q is not a snowflake id", fromArg.id)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	stopIngest := s.ingest(ctx, input, slow, failed)
	defer stopIngest()

	// inspect until ingest has stored and indexed each task (it writes the
	// row first, then the index entry: "stored yes" alone may still show
	// "pending no").
	inspect := func(task submitted, until string) string {
		t.Helper()
		for {
			stdout, stderr, code := s.run("", "inspect", "--id", task.id, "--at", strconv.FormatInt(task.at, 10))
			if code == 0 && strings.Contains(stdout, until) {
				return stdout
			}
			if code != 0 && !strings.Contains(stderr, "no row for id") {
				t.Fatalf("inspect: exit %d: %s", code, stderr)
			}
			select {
			case <-ctx.Done():
				t.Fatalf("inspect %s never showed %q; last output:\n%s%s", task.id, until, stdout, stderr)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	out := inspect(fromArg, "pending    yes")
	for _, want := range []string{
		"topic      " + biz, `key        "k-arg" (5 bytes)`, `headers    trace="abc" tenant="7"`,
		"payload    5 bytes", "cancelled  no", "pending    yes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	out = inspect(fromFile, "pending    yes")
	if !strings.Contains(out, "payload    15 bytes") || !strings.Contains(out, "key        (none)") {
		t.Errorf("inspect of the --file task:\n%s", out)
	}
	inspect(fromStdin, "pending    yes") // came through the slow topic

	stdout := s.ok("", "inspect", "--json", "--id", fromStdin.id, "--at", strconv.FormatInt(fromStdin.at, 10))
	var in inspection
	if err := json.Unmarshal([]byte(stdout), &in); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, stdout)
	}
	if !in.Stored || !in.Pending || in.Cancelled || in.Payload != len("from stdin") || in.Topic != biz {
		t.Errorf("inspect --json: %+v", in)
	}

	// Without --at: the due time and state come from the id row.
	stdout = s.ok("", "inspect", "--json", "--id", fromArg.id)
	in = inspection{}
	if err := json.Unmarshal([]byte(stdout), &in); err != nil {
		t.Fatalf("inspect --json without --at: %v\n%s", err, stdout)
	}
	if in.State != "pending" || in.ExecAt != fromArg.at || !in.Stored {
		t.Errorf("inspect without --at: %+v, want pending, stored, due %d", in, fromArg.at)
	}

	out = s.ok("", append([]string{"cancel", "--id", fromFile.id, "--at", at.Format(time.RFC3339Nano)}, topics...)...)
	if !strings.Contains(out, "cancel sent for id "+fromFile.id) {
		t.Errorf("cancel output: %s", out)
	}
	inspect(fromFile, "cancelled  yes")

	// The backlog counts the 2 tasks still pending: ingest takes the
	// cancelled task's entry out right after storing the cancel marker.
	var r backlogReport
	for {
		stdout = s.ok("", "backlog", "--json")
		r = backlogReport{}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("backlog --json: %v\n%s", err, stdout)
		}
		if r.Total == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("backlog --json: total %d, want the 2 tasks pending: %+v", r.Total, r)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if r.Overdue != 0 || len(r.Hours) == 0 || len(r.Days) == 0 {
		t.Errorf("backlog --json: %+v", r)
	}
	out = s.ok("", "backlog", "--by", "segment")
	if !strings.Contains(out, "pending tasks under prefix "+s.prefix+": 2") || !strings.Contains(out, "█") {
		t.Errorf("backlog:\n%s", out)
	}
}

// ingest runs the real ingester on the test's input topics into its table
// and prefix; the returned func stops it.
func (s *stack) ingest(ctx context.Context, input, slow, failed string) func() {
	s.t.Helper()
	w := producer.New(producer.Config{Brokers: s.brokers})
	ix := s.index()
	in, err := ingest.New(ingest.Config{
		Brokers: s.brokers, GroupID: "dqtest-ctl-" + s.suffix, Input: input, Slow: slow, Failed: failed,
	}, s.store(), struct {
		*zset.Writer
		*zset.OpFlags
	}{ix.Writer(), ix.OpFlags()}, w)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			s.t.Errorf("ingest: %v", err)
		}
		w.Close()
	}
}

var summaryLine = regexp.MustCompile(`(?m)^  (scanned|delivered|would deliver|skipped as pending|skipped as cancelled|skipped, other topic)\s+(\d+)$`)

func summary(t *testing.T, out string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for _, l := range summaryLine.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.ParseInt(l[2], 10, 64)
		m[l[1]] = n
	}
	if _, ok := m["scanned"]; !ok {
		t.Fatalf("no summary in:\n%s", out)
	}
	return m
}

// TestBackfill is the scenario: 10,000 tasks stored as ingest
// stores them (HBase row + Redis entry), plus 100 cancelled ones and 100
// for another topic, all due in the last half hour. With Redis intact,
// backfill --skip-pending delivers none of them; a dry run counts without
// writing; after the test's Redis keys are wiped, a backfill of their time
// range delivers each of the 10,000 exactly once, and nothing else.
func TestBackfill(t *testing.T) {
	const n = 10_000
	s := newStack(t, 16)
	s.init()
	biz, other := "dqtest-ctl-backfill-"+s.suffix, "dqtest-ctl-other-"+s.suffix
	s.topics(biz, other)

	base := time.Now().Add(-30 * time.Minute).Truncate(time.Second).UnixMilli()
	var tasks []payload.Task
	var entries []zset.Entry
	add := func(name, topic string, at int64, cancelled bool) {
		task := payload.Task{
			ID: payload.TaskID(name), Name: name, Topic: topic, ExecAt: at,
			Key: []byte("key-" + name), Value: []byte("value-" + name),
			Headers: []payload.Header{{Key: "trace", Value: []byte(name)}},
		}
		tasks = append(tasks, task)
		if cancelled {
			tasks = append(tasks, payload.Task{ID: task.ID, Name: name, ExecAt: at, Cancel: true})
		}
		entries = append(entries, zset.Entry{ID: task.ID, ExecAt: at})
	}
	for i := range n {
		add(fmt.Sprintf("bf-%s-%d", s.suffix, i), biz, base+int64(i)*100, false)
	}
	for i := range 100 {
		add(fmt.Sprintf("bf-cancelled-%s-%d", s.suffix, i), biz, base+int64(i)*1000+50, true)
		add(fmt.Sprintf("bf-other-%s-%d", s.suffix, i), other, base+int64(i)*1000+70, false)
	}
	start := time.Now()
	if err := s.store().Put(t.Context(), tasks); err != nil {
		t.Fatal(err)
	}
	if err := s.index().Writer().Add(t.Context(), time.Now(), entries); err != nil {
		t.Fatal(err)
	}
	t.Logf("stored %d rows and %d entries in %v", len(tasks), len(entries), time.Since(start))
	from, to := strconv.FormatInt(base, 10), strconv.FormatInt(base+n*100, 10)

	// Redis intact: everything is pending, so nothing is delivered.
	start = time.Now()
	out := s.ok("", "backfill", "--from", from, "--to", to, "--skip-pending", "--progress", "none")
	got := summary(t, out)
	if got["scanned"] != n+200 || got["delivered"] != 0 || got["skipped as pending"] != n+100 || got["skipped as cancelled"] != 100 {
		t.Fatalf("--skip-pending with Redis intact:\n%s", out)
	}
	t.Logf("backfill --skip-pending of %d rows, %d pending checks: %v", n+200, n+100, time.Since(start))
	if c := count(t, s.brokers, biz) + count(t, s.brokers, other); c != 0 {
		t.Fatalf("%d messages delivered with every task pending", c)
	}

	out = s.ok("", "backfill", "--from", from, "--to", to, "--topic", biz, "--dry-run", "--progress", "none")
	got = summary(t, out)
	if got["would deliver"] != n || got["skipped as cancelled"] != 100 || got["skipped, other topic"] != 100 {
		t.Fatalf("dry run:\n%s", out)
	}

	stacktest.DropKeys(t, s.rdb, s.prefix)
	start = time.Now()
	stdout, stderr, code := s.run("", "backfill", "--from", from, "--to", to, "--topic", biz,
		"--progress", "lines", "--progress-interval", "0")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("backfill: exit %d\n%s\n%s", code, stdout, stderr)
	}
	got = summary(t, stdout)
	if got["scanned"] != n+200 || got["delivered"] != n || got["skipped as pending"] != 0 || got["skipped as cancelled"] != 100 || got["skipped, other topic"] != 100 {
		t.Fatalf("backfill after wiping Redis:\n%s", stdout)
	}
	if lines := strings.Count(stderr, "backfill: "); lines < n/backfill.DefaultBatchSize || !strings.Contains(stderr, "100.0%") {
		t.Errorf("progress lines on stderr: %d\n%s", lines, stderr)
	}
	t.Logf("backfill of %d rows: %v (%.0f rows/s)\n%s", n+200, took, float64(n+200)/took.Seconds(), stdout)

	msgs := consume(t, s.brokers, biz)
	seen := map[string]int{}
	for _, m := range msgs {
		id := headerValue(m, payload.HeaderID)
		seen[id]++
		if string(m.Key) != "key-"+id || string(m.Value) != "value-"+id || headerValue(m, "trace") != id || headerValue(m, payload.HeaderAt) == "" {
			t.Fatalf("delivered message %s does not carry its task: %+v", id, m)
		}
	}
	for i := range n {
		if id := fmt.Sprintf("bf-%s-%d", s.suffix, i); seen[id] != 1 {
			t.Fatalf("task %s delivered %d times, want exactly once", id, seen[id])
		}
	}
	if len(msgs) != n || len(seen) != n {
		t.Fatalf("%d messages, %d distinct tasks; want %d of each", len(msgs), len(seen), n)
	}
	if c := count(t, s.brokers, other); c != 0 {
		t.Fatalf("%d messages delivered to the other topic", c)
	}
}

// interrupter stands in for stderr and cancels the command's context, as
// SIGINT does, once it has seen the given number of progress lines.
type interrupter struct {
	buf    bytes.Buffer
	after  int
	cancel context.CancelFunc
}

func (w *interrupter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	if strings.Count(w.buf.String(), "backfill: ") >= w.after {
		w.cancel()
	}
	return len(p), nil
}

var resumeLine = regexp.MustCompile(`resume with --from (\d+) --to (\d+)`)

// TestBackfillInterrupt interrupts a backfill after a few batches: it exits
// with 130, still writes the batch in hand and says where to resume; the
// rerun from there delivers the rest, so every task arrives at least once
// and only the task due at the resume millisecond twice.
func TestBackfillInterrupt(t *testing.T) {
	const n = 3000
	s := newStack(t, 4)
	s.init()
	biz := "dqtest-ctl-interrupt-" + s.suffix
	s.topics(biz)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	tasks := make([]payload.Task, n)
	for i := range tasks {
		name := fmt.Sprintf("int-%s-%d", s.suffix, i)
		tasks[i] = payload.Task{ID: payload.TaskID(name), Name: name, Topic: biz, ExecAt: base + int64(i)*10, Value: []byte(name)}
	}
	if err := s.store().Put(t.Context(), tasks); err != nil {
		t.Fatal(err)
	}
	from, to := strconv.FormatInt(base, 10), strconv.FormatInt(base+n*10, 10)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout bytes.Buffer
	stderr := &interrupter{after: 3, cancel: cancel}
	code := s.main(ctx, "", &stdout, stderr, "backfill", "--from", from, "--to", to,
		"--batch", "100", "--progress", "lines", "--progress-interval", "0")
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitInterrupted, stdout.String(), stderr.buf.String())
	}
	errLines := strings.Split(strings.TrimSpace(stderr.buf.String()), "\n")
	if last := errLines[len(errLines)-1]; !strings.HasPrefix(last, "delayctl backfill: interrupted; resume with --from ") {
		t.Errorf("last stderr line %q", last)
	}
	got := summary(t, stdout.String())
	m := resumeLine.FindStringSubmatch(stdout.String())
	if m == nil || m[2] != to {
		t.Fatalf("no resume hint in:\n%s", stdout.String())
	}
	if got["delivered"] < 300 || got["delivered"] >= n || got["delivered"] != got["scanned"] {
		t.Fatalf("interrupted run: want the batches before the interrupt and the one in hand:\n%s", stdout.String())
	}
	if c := count(t, s.brokers, biz); c != got["delivered"] {
		t.Fatalf("%d messages in the topic, the summary says %d delivered", c, got["delivered"])
	}

	out := s.ok("", "backfill", "--from", m[1], "--to", to, "--progress", "none")
	again := summary(t, out)
	msgs := consume(t, s.brokers, biz)
	seen := map[string]int{}
	for _, msg := range msgs {
		seen[string(msg.Value)]++
	}
	if len(seen) != n {
		t.Fatalf("%d distinct tasks delivered, want %d", len(seen), n)
	}
	if dup := len(msgs) - n; dup != 1 {
		t.Fatalf("%d duplicates, want 1 (the task due at the resume millisecond)", dup)
	}
	t.Logf("interrupted after %d, rerun delivered %d", got["delivered"], again["delivered"])
}

// count returns the number of messages in topic (sum of the partitions'
// end offsets; the topics are fresh).
func count(t *testing.T, brokers []string, topic string) int64 {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range parts {
		lc, err := kafka.DialLeader(t.Context(), "tcp", brokers[0], topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, err := lc.ReadLastOffset()
		lc.Close()
		if err != nil {
			t.Fatal(err)
		}
		total += last
	}
	return total
}

// consume reads every message of every partition of topic.
func consume(t *testing.T, brokers []string, topic string) []kafka.Message {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var msgs []kafka.Message
	for _, p := range parts {
		lc, err := kafka.DialLeader(ctx, "tcp", brokers[0], topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, err := lc.ReadLastOffset()
		lc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if last == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p.ID, MaxWait: 100 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s/%d: %v", topic, p.ID, err)
			}
			msgs = append(msgs, m)
			if m.Offset == last-1 {
				break
			}
		}
		r.Close()
	}
	return msgs
}

func headerValue(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestSubmitBlockedIDHBase: without --api, submit looks --id up in HBase's
// id row: an id a cancel by id alone blocks is refused before Kafka (the
// end dated with delayd's defaults), inspect shows the block; with HBase
// unreachable submit warns and sends.
func TestSubmitBlockedIDHBase(t *testing.T) {
	s := newStack(t, 4)
	s.init()
	input, slow := "dqtest-ctl-in-"+s.suffix, "dqtest-ctl-slow-"+s.suffix
	s.topics(input, slow)
	id := "o-42-" + s.suffix
	cancelled := time.Now().Add(-time.Minute).UnixMilli()
	if err := s.store().PutIDs(t.Context(), []payload.IDWrite{{ID: payload.TaskID(id), Name: id, Cancel: true, CancelRecorded: cancelled}}); err != nil {
		t.Fatal(err)
	}
	until := payload.FormatTime(cancelled + payload.DefaultCancelBlock.Milliseconds())
	args := []string{"submit", "--topic", "orders", "--input-topic", input, "--slow-topic", slow, "--id", id, "--after", "5s", "v"}
	_, errOut, code := s.run("", args...)
	if code != ExitFailure || !strings.Contains(errOut, "id cancelled: submit of id") || !strings.Contains(errOut, "blocked until "+until) ||
		!strings.Contains(errOut, "delayd's default --max-delay and --retention") {
		t.Errorf("submit of a blocked id: exit %d, %q", code, errOut)
	}
	out := s.ok("", "inspect", "--id", id)
	if !strings.Contains(out, "due        (none: no task with this id was stored)") || !strings.Contains(out, "blocked    until "+until) {
		t.Errorf("inspect of the blocked id:\n%s", out)
	}
	out, errOut, code = s.run("", append(args[:len(args)-1:len(args)-1], "--hbase-zk", "127.0.0.1:1", "v")...)
	if code != 0 || !strings.Contains(errOut, "warning: id "+strconv.Quote(id)+" not checked") || !strings.Contains(out, "id     "+id) {
		t.Errorf("submit with HBase unreachable: exit %d, stdout %q, stderr %q; want a warning and the task sent", code, out, errOut)
	}
}
