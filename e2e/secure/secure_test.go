package secure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/e2e/e2etest"
	"github.com/delayq/delayq/internal/tlsfiles/tlsfilestest"
	"github.com/delayq/delayq/topics"
)

// TestPipeline: the outside-client scenario of the pipeline tests (2,000
// tasks over 0–15 s in the three time formats, 100 cancels, the contract
// breakers) written over SASL_SSL by the producer user, through a delayd
// that logs in as delayq (only the documented ACLs) and reaches Redis over
// mutual TLS: nothing lost, duplicated or early, no cancelled task
// delivered, the breakers in delay-failed and nothing else.
func TestPipeline(t *testing.T) {
	e, s := stack(t)
	topic := e.Topic("biz-orders")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	s.delayd(t, e, "d0")

	w := e.NewWorkload(topic, 2000, 100, 15*time.Second, time.Now())
	s.produce(t, "producer", w.Early)
	s.produce(t, "producer", w.Tasks)
	s.produce(t, "producer", w.Late)

	r := awaitDelivery(w.Ledger, out, 60*time.Second)
	t.Logf("TestPipeline (SASL_SSL SCRAM-SHA-512, Redis mutual TLS, delayq's ACLs): %v", r)
	if !r.Clean() || r.Delivered != len(w.Due) {
		t.Errorf("delivery not clean: %v (want %d delivered)", r, len(w.Due))
	}
	e2etest.WaitFor(t, 30*time.Second, "malformed messages in delay-failed", func() bool {
		return w.JudgeFailed(failed.Snapshot()).MalformedDone(w.Ledger)
	})
	for _, p := range w.JudgeFailed(failed.Snapshot()).Problems(w.Ledger) {
		t.Error(p)
	}
}

// TestDelayctl: delayctl submit, inspect, backlog, cancel and replay as
// user delayq over SASL_SSL with SCRAM-SHA-512 and Redis over mutual TLS;
// a task for a topic delayq may not write lands in delay-failed.
func TestDelayctl(t *testing.T) {
	e, s := stack(t)
	topic := e.Topic("biz-ctl")
	out, failed := e.Collect(topic), e.Collect(topics.Failed)
	s.delayd(t, e, "d0")
	ctl := s.delayctl(t, e, "delayq")

	// submit: one task due at once, one far ahead.
	ctl.ok("submit", "--topic", topic, "--after", "1s", "--id", "ctl-soon", "soon")
	farAt := time.Now().Add(30 * time.Minute).Truncate(time.Millisecond)
	far := strconv.FormatInt(farAt.UnixMilli(), 10)
	ctl.ok("submit", "--topic", topic, "--at", far, "--id", "ctl-far", "far")
	e2etest.WaitFor(t, 30*time.Second, "ctl-soon delivered", func() bool { return delivered(out, "ctl-soon") == 1 })

	// inspect and backlog see the far task; cancel marks it.
	var task struct{ Stored, Pending, Cancelled bool }
	inspect := func() {
		if err := json.Unmarshal([]byte(ctl.ok("inspect", "--id", "ctl-far", "--at", far, "--json")), &task); err != nil {
			t.Fatal(err)
		}
	}
	e2etest.WaitFor(t, 30*time.Second, "ctl-far stored and pending", func() bool { inspect(); return task.Stored && task.Pending })
	var backlog struct {
		Total int64 `json:"total"`
	}
	if err := json.Unmarshal([]byte(ctl.ok("backlog", "--json")), &backlog); err != nil {
		t.Fatal(err)
	}
	if backlog.Total != 1 {
		t.Errorf("backlog total %d, want 1 (ctl-far)", backlog.Total)
	}
	ctl.ok("cancel", "--id", "ctl-far", "--at", far)
	e2etest.WaitFor(t, 30*time.Second, "ctl-far cancelled", func() bool { inspect(); return task.Cancelled })

	// replay: a task without a due time lands in delay-failed; replay
	// reads it there and writes it back to delay-input, where ingest
	// refuses it again, from a new input position (input carries no
	// provenance headers: ingest drops delay-replay-* on the way in).
	seq := e.Seq("bad")
	s.produce(t, "producer", []kafka.Message{e2etest.MalformedMessage(seq, []kafka.Header{{Key: "delay-topic", Value: []byte(topic)}}, time.Now())})
	e2etest.WaitFor(t, 30*time.Second, "the malformed task in delay-failed", func() bool { return len(failedOf(failed, seq)) == 1 })
	ctl.ok("replay", "--from", "-5m", "--to", "+1m", "--topic", topic, "--progress", "none")
	e2etest.WaitFor(t, 30*time.Second, "the replayed task in delay-failed again", func() bool { return len(failedOf(failed, seq)) == 2 })
	if ms := failedOf(failed, seq); e2etest.Header(ms[1], "delay-source-offset") == e2etest.Header(ms[0], "delay-source-offset") {
		t.Errorf("the replayed copy names the first input position again: %v", ms[1].Headers)
	}

	if n := delivered(out, "ctl-soon"); n != 1 {
		t.Errorf("ctl-soon delivered %d times, want once", n)
	}
}

// TestMissingACLWaits: a task for a business topic outside delayq's ACLs
// (no biz- prefix) that delayq may see (DESCRIBE) but not write is not bad
// input but delayd's setup: it stays pending, written again with backoff
// and named in a WARN line, never in delay-failed; once an admin grants
// delayq WRITE on the topic it is delivered, once. (Without DESCRIBE Kafka
// answers "unknown topic", which delayd cannot tell from a topic that does
// not exist: docs/security.md.)
func TestMissingACLWaits(t *testing.T) {
	e, s := stack(t)
	denied := "denied-" + e.Run
	out, failed := e.Collect(denied), e.Collect(topics.Failed) // it exists
	grant := func(op kafka.ACLOperationType) {
		t.Helper()
		super := &kafka.Client{Addr: kafka.TCP(addr(internalPort)), Timeout: 10 * time.Second}
		res, err := super.CreateACLs(t.Context(), &kafka.CreateACLsRequest{ACLs: []kafka.ACLEntry{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: denied, ResourcePatternType: kafka.PatternTypeLiteral,
			Principal: "User:delayq", Host: "*", Operation: op, PermissionType: kafka.ACLPermissionTypeAllow}}})
		if err == nil {
			err = errors.Join(res.Errors...)
		}
		if err != nil {
			t.Fatalf("granting delayq %v on %s: %v", op, denied, err)
		}
	}
	grant(kafka.ACLOperationTypeDescribe)
	d := s.delayd(t, e, "d0")
	ctl := s.delayctl(t, e, "delayq")
	ctl.ok("submit", "--topic", denied, "--after", "1s", "--id", "ctl-denied", "x")
	e2etest.WaitFor(t, 60*time.Second, "a WARN line naming the missing ACL", func() bool {
		return bytes.Contains(d.Logs(), []byte("not authorized to write the topic"))
	})
	time.Sleep(5 * time.Second) // past MaxAttempts writes: the old rule refused here
	if n := delivered(failed, "ctl-denied"); n != 0 {
		t.Fatalf("ctl-denied in delay-failed %d times for a missing ACL, want 0", n)
	}
	grant(kafka.ACLOperationTypeWrite)
	e2etest.WaitFor(t, 60*time.Second, "ctl-denied delivered once the ACL is granted", func() bool { return delivered(out, "ctl-denied") == 1 })
	time.Sleep(2 * time.Second)
	if n, f := delivered(out, "ctl-denied"), delivered(failed, "ctl-denied"); n != 1 || f != 0 {
		t.Errorf("ctl-denied delivered %d times and in delay-failed %d times, want 1 and 0", n, f)
	}
}

// TestAuthFailures: a wrong Kafka password, a CA that did not sign the
// broker's certificate and a Redis client without its certificate each
// make delayd say what is wrong in one line and keep retrying, never ready
// and without sending the tasks it cannot handle to delay-failed; delayctl
// says the same about the password on stderr.
func TestAuthFailures(t *testing.T) {
	e, s := stack(t)
	topic := e.Topic("biz-auth")
	failed := e.Collect(topics.Failed)
	e.Collect(topics.Input)             // no delayd creates it here
	other := tlsfilestest.New(t).CAFile // signed nothing of the stack's

	cases := []struct {
		name     string
		password string
		args     []string
		want     string // in delayd's log and on /readyz
	}{
		{"wrong password", "wrong-" + s.password(t, "delayq"),
			append(s.kafkaFlags("delayq"), s.redisFlags()...),
			`kafka: SASL authentication failed for user "delayq"`},
		{"unknown CA", s.password(t, "delayq"),
			append(append(s.kafkaFlags("delayq"), "--kafka-tls-ca", other), s.redisFlags()...),
			"kafka: TLS handshake: certificate signed by unknown authority"},
		{"no redis client certificate", s.password(t, "delayq"),
			append(s.kafkaFlags("delayq"), "--redis", addr(redisPort), "--redis-tls", "--redis-tls-ca", s.file("ca.pem")),
			"certificate required"},
	}
	var wg sync.WaitGroup
	procs := make([]*failing, len(cases))
	for i, c := range cases {
		procs[i] = startFailing(t, e, c.password, c.args...)
	}
	// Tasks for them to (not) handle.
	var msgs []kafka.Message
	now := time.Now()
	for i := range 20 {
		msgs = append(msgs, e2etest.TaskMessage(topic, e.Seq(strconv.Itoa(i)), "", now, now.Add(time.Second), i))
	}
	s.produce(t, "producer", msgs)

	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := procs[i]
			deadline := time.Now().Add(45 * time.Second)
			for time.Now().Before(deadline) && cause(f.logs(), c.want) == "" {
				time.Sleep(500 * time.Millisecond)
			}
			if err := cause(f.logs(), c.want); err == "" {
				t.Errorf("%s: no error with %q in delayd's log", c.name, c.want)
			} else {
				t.Logf("%s: delayd logs %q", c.name, err)
			}
			// It keeps retrying (the stall is logged once; the retries
			// are counted) and is not ready, saying why.
			before := retries(t, f)
			time.Sleep(4 * time.Second)
			if after := retries(t, f); after <= before {
				t.Errorf("%s: delayq_stage_retries_total %v, then %v 4 s later: delayd does not retry", c.name, before, after)
			}
			select {
			case <-f.done:
				t.Errorf("%s: delayd exited; it must keep retrying", c.name)
			default:
			}
			code, body := get(t, "http://"+f.http+"/readyz")
			if code == http.StatusOK || !strings.Contains(body, c.want) {
				t.Errorf("%s: /readyz answers %d %q, want 503 naming %q", c.name, code, body, c.want)
			}
		}()
	}
	wg.Wait()
	for i := range msgs {
		if n := len(failedOf(failed, e.Seq(strconv.Itoa(i)))); n != 0 {
			t.Errorf("task %d in delay-failed %d times during an authentication failure", i, n)
		}
	}

	ctl := s.delayctl(t, e, "delayq")
	ctl.env = []string{"DELAYQ_KAFKA_SASL_PASSWORD=wrong"}
	stderr := ctl.fail("submit", "--topic", topic, "--after", "1s", "x")
	if !strings.Contains(stderr, `SASL authentication failed for user "delayq"`) {
		t.Errorf("delayctl with a wrong password says %q, want it to name the SASL authentication failure", stderr)
	}
}

// TestProducerACLs: the producer user may write delay-input and nothing
// else: it is refused delay-scan, and a business topic that delayq sees is
// hidden from it (Kafka answers "unknown topic" to a principal without
// Describe), so it cannot read it.
func TestProducerACLs(t *testing.T) {
	s := startPrivate(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// The harness, a super user on the internal listener, creates the
	// topics; no delayd, no table.
	e := e2etest.NewEnv(t, e2etest.Stack{Brokers: []string{addr(internalPort)}}, "acl")
	topic := e.Topic("biz-acl")
	for _, tp := range []string{topic, topics.Scan, topics.Input} {
		e.Collect(tp)
	}
	visible := func(user, topic string) error {
		client := &kafka.Client{Addr: kafka.TCP(addr(kafkaPort)), Transport: s.transport(t, user), Timeout: 10 * time.Second}
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Topics) != 1 {
			t.Fatalf("metadata of %s: %+v", topic, md.Topics)
		}
		return md.Topics[0].Error
	}
	e2etest.WaitFor(t, 30*time.Second, "delayq sees "+topic+" and "+topics.Scan, func() bool {
		return visible("delayq", topic) == nil && visible("delayq", topics.Scan) == nil
	})
	for _, tp := range []string{topic, topics.Scan} {
		if err := visible("producer", tp); !errors.Is(err, kafka.UnknownTopicOrPartition) && !errors.Is(err, kafka.TopicAuthorizationFailed) {
			t.Errorf("producer describing %s: %v, want it hidden", tp, err)
		}
	}

	tr := s.transport(t, "producer")
	w := &kafka.Writer{Addr: kafka.TCP(addr(kafkaPort)), Transport: tr, Topic: topics.Scan, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("forged scan task")}); err == nil {
		t.Errorf("producer wrote %s", topics.Scan)
	}
	client := &kafka.Client{Addr: kafka.TCP(addr(kafkaPort)), Transport: tr, Timeout: 10 * time.Second}
	if _, err := client.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: 0, MaxBytes: 1 << 20}); err == nil {
		t.Errorf("producer read %s", topic)
	}
	s.produce(t, "producer", []kafka.Message{{Value: []byte("not a task")}}) // delay-input: allowed
}

// awaitDelivery waits until nothing of l is lost (timeout at most), then
// two more ticks for late duplicates, and judges.
func awaitDelivery(l e2etest.Ledger, out *e2etest.Collector, timeout time.Duration) e2etest.Report {
	deadline := time.Now().Add(timeout)
	for l.Judge(out.Snapshot()).Lost > 0 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	return l.Judge(out.Snapshot())
}

// delivered counts the messages of c with delay-id id.
func delivered(c *e2etest.Collector, id string) int {
	n := 0
	for _, g := range c.Snapshot() {
		if e2etest.Header(g.Msg, "delay-id") == id {
			n++
		}
	}
	return n
}

// failedOf returns the messages of c with seq header seq.
func failedOf(c *e2etest.Collector, seq string) []kafka.Message {
	var ms []kafka.Message
	for _, g := range c.Snapshot() {
		if e2etest.Header(g.Msg, "seq") == seq {
			ms = append(ms, g.Msg)
		}
	}
	return ms
}

// get returns the status and body of a GET of url.
func get(t *testing.T, url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// retries sums delayq_stage_retries_total over every stage and operation
// of f's /metrics.
func retries(t *testing.T, f *failing) float64 {
	_, body := get(t, "http://"+f.http+"/metrics")
	sum := 0.0
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, "delayq_stage_retries_total{"); ok {
			_, v, _ := strings.Cut(rest, "} ")
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			sum += n
		}
	}
	return sum
}

// cause returns the err of the first entry of delayd's own (JSON) log
// whose err contains substr, or "".
func cause(logs, substr string) string {
	for line := range strings.Lines(logs) {
		var entry struct{ Err string }
		if json.Unmarshal([]byte(line), &entry) == nil && strings.Contains(entry.Err, substr) {
			return entry.Err
		}
	}
	return ""
}

var (
	ctlOnce sync.Once
	ctlBin  string
	ctlErr  error
)

// ctl runs a delayctl binary as a Kafka user with the test's settings.
type ctl struct {
	t    *testing.T
	args []string
	env  []string
}

// delayctl builds cmd/delayctl once and returns a runner of it that logs in
// to Kafka as user and to Redis with mutual TLS, on the Env's table and
// prefix.
func (s secured) delayctl(t *testing.T, e *e2etest.Env, user string) *ctl {
	t.Helper()
	ctlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "delayq-secure-ctl-")
		if err != nil {
			ctlErr = err
			return
		}
		ctlBin = filepath.Join(dir, "delayctl")
		if out, err := exec.Command("go", "build", "-o", ctlBin, "github.com/delayq/delayq/cmd/delayctl").CombinedOutput(); err != nil {
			ctlErr = errors.New("go build delayctl: " + err.Error() + "\n" + string(out))
		}
	})
	if ctlErr != nil {
		t.Fatal(ctlErr)
	}
	args := append(append(s.kafkaFlags(user), s.redisFlags()...), "--hbase-zk", e.ZK, "--table", e.Run, "--prefix", e.Run, "--salts", "4")
	return &ctl{t: t, args: args, env: []string{"DELAYQ_KAFKA_SASL_PASSWORD=" + s.password(t, user)}}
}

func (c *ctl) run(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(ctlBin, append(args, c.args...)...)
	cmd.Env = append(os.Environ(), c.env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// ok runs a command and returns its stdout; it fails the test unless the
// command exits 0.
func (c *ctl) ok(args ...string) string {
	c.t.Helper()
	stdout, stderr, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("delayctl %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// fail runs a command that must fail and returns its stderr.
func (c *ctl) fail(args ...string) string {
	c.t.Helper()
	stdout, stderr, err := c.run(args...)
	if err == nil {
		c.t.Fatalf("delayctl %s succeeded, want a failure\n%s", strings.Join(args, " "), stdout)
	}
	return stderr
}
