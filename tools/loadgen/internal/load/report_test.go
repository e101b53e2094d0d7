package load

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
)

func TestRank(t *testing.T) {
	hundred := make([]int64, 100)
	for i := range hundred {
		hundred[i] = int64(i + 1) // 1..100
	}
	tests := []struct {
		name   string
		sorted []int64
		p      float64
		want   int64
	}{
		{"empty", nil, 0.5, 0},
		{"one value", []int64{7}, 0.99, 7},
		{"median of 1..100", hundred, 0.50, 50},
		{"p99 of 1..100", hundred, 0.99, 99},
		{"p999 of 1..100 is the max", hundred, 0.999, 100},
		{"max", hundred, 1, 100},
		{"tiny p is the min", hundred, 0.0001, 1},
		{"median of two is the lower", []int64{3, 9}, 0.5, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Rank(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Rank(p=%v) = %d, want %d", tt.p, got, tt.want)
			}
		})
	}
}

func TestNewPercentiles(t *testing.T) {
	vs := []int64{50, -3, 10, 1000, 20}
	p := NewPercentiles(vs)
	want := Percentiles{N: 5, Min: -3, P50: 20, P90: 1000, P99: 1000, P999: 1000, Max: 1000, Mean: 215.4}
	if p != want {
		t.Errorf("got %+v\nwant %+v", p, want)
	}
	if (NewPercentiles(nil) != Percentiles{}) {
		t.Error("percentiles of nothing are not zero")
	}
}

func TestTally(t *testing.T) {
	tally := NewTally(5)
	for seq, at := range []int64{1000, 2000, 3000, 4000, 5000} {
		tally.SetDue(seq, at)
	}
	for _, d := range []Delivery{
		{Seq: 0, ExecAt: 1000, Written: 1100, Seen: 1150},  // 100 ms late
		{Seq: 1, ExecAt: 2000, Written: 2500, Seen: 2600},  // 500 ms late
		{Seq: 1, ExecAt: 2000, Written: 2700, Seen: 2800},  // duplicate
		{Seq: 1, ExecAt: 2000, Written: 2900, Seen: 2950},  // another duplicate
		{Seq: 2, ExecAt: 3000, Written: 2990, Seen: 3010},  // early by 10 ms
		{Seq: 3, ExecAt: 3999, Written: 4100, Seen: 4100},  // delay-at differs: unknown
		{Seq: 9, ExecAt: 5000, Written: 5000, Seen: 5000},  // no such task
		{Seq: -1, ExecAt: 5000, Written: 5000, Seen: 5000}, // key not a number
	} {
		tally.Add(d)
	}
	// Task 3 (wrong delay-at) and task 4 (never delivered) are lost.
	o := tally.Outcome()
	if o.Delivered != 3 || o.Lost != 2 || o.Duplicates != 2 || o.Early != 1 || o.Unknown != 3 {
		t.Errorf("outcome %+v: want delivered 3, lost 2, duplicates 2, early 1, unknown 3", o)
	}
	if o.Lateness.Min != -10 || o.Lateness.P50 != 100 || o.Lateness.Max != 500 || o.Lateness.N != 3 {
		t.Errorf("lateness %+v: want min -10, p50 100, max 500 over 3", o.Lateness)
	}
	if o.SeenLateness.Max != 600 || o.LastWritten != 2990 {
		t.Errorf("seen lateness max %d, last written %d: want 600, 2990", o.SeenLateness.Max, o.LastWritten)
	}
	if tally.Delivered() != 3 || tally.FirstDue() != 1000 || tally.LastDue() != 5000 {
		t.Errorf("delivered %d, first due %d, last due %d", tally.Delivered(), tally.FirstDue(), tally.LastDue())
	}
	// A task that was never submitted (due 0) is unknown, not delivered.
	empty := NewTally(2)
	empty.Add(Delivery{Seq: 0, ExecAt: 0})
	if o := empty.Outcome(); o.Unknown != 1 || o.Delivered != 0 || o.Lost != 2 {
		t.Errorf("unsubmitted: %+v", o)
	}
}

func TestLatenessBins(t *testing.T) {
	var samples []Sample
	// 10 s of tasks, one per 10 ms, lateness growing with the second.
	for i := range 1000 {
		at := int64(1_000_000 + i*10)
		samples = append(samples, Sample{ExecAt: at, Late: int64(i / 100 * 10)})
	}
	bins := LatenessBins(samples, 10)
	if len(bins) != 10 {
		t.Fatalf("%d bins, want 10", len(bins))
	}
	total := 0
	for i, b := range bins {
		total += b.N
		if b.Max != int64(i*10) || b.P50 != int64(i*10) {
			t.Errorf("bin %d: %+v, want all lateness %d", i, b, i*10)
		}
		if i > 0 && b.From <= bins[i-1].From {
			t.Errorf("bins out of order at %d", i)
		}
	}
	if total != len(samples) {
		t.Errorf("bins hold %d samples, want %d", total, len(samples))
	}
	if LatenessBins(nil, 10) != nil {
		t.Error("bins of nothing")
	}
	// All due in the same millisecond: one bin.
	if b := LatenessBins([]Sample{{ExecAt: 5, Late: 1}, {ExecAt: 5, Late: 3}}, 200); len(b) != 1 || b[0].N != 2 || b[0].Max != 3 {
		t.Errorf("one instant: %+v", b)
	}
}

func TestWriteSVG(t *testing.T) {
	samples := []Sample{{ExecAt: 1000, Late: 5}, {ExecAt: 2000, Late: 900}, {ExecAt: 3000, Late: -2}, {ExecAt: 4000, Late: 40}}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, "lateness <run & 1>", samples); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML whose root is an svg element with three polylines of
	// four points each, and the title escaped.
	var doc struct {
		XMLName   xml.Name `xml:"svg"`
		Polylines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	if len(doc.Polylines) != 3 {
		t.Fatalf("%d polylines, want 3 (max, p99, p50)", len(doc.Polylines))
	}
	for _, pl := range doc.Polylines {
		if n := len(strings.Fields(pl.Points)); n != 4 {
			t.Errorf("polyline with %d points, want 4: %q", n, pl.Points)
		}
	}
	if !strings.Contains(buf.String(), "lateness &lt;run &amp; 1&gt;") {
		t.Error("title not escaped")
	}
	if !strings.Contains(buf.String(), "stroke-dasharray") {
		t.Error("no zero line although a task was early")
	}
	buf.Reset()
	if err := WriteSVG(&buf, "empty", nil); err != nil || !strings.Contains(buf.String(), "no deliveries") {
		t.Errorf("empty plot: %v %q", err, buf.String())
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP delayq_tasks_accepted_total Tasks accepted.
# TYPE delayq_tasks_accepted_total counter
delayq_tasks_accepted_total 12345
delayq_tasks_failed_total{reason="contract"} 3
delayq_tasks_failed_total{reason="store x y"} 4
process_cpu_seconds_total 1.5e+01
delayq_tasks_accepted_total_other 99
`
	got, err := ParseMetrics(strings.NewReader(text), "delayq_tasks_accepted_total", "delayq_tasks_failed_total",
		"process_cpu_seconds_total", "absent", `delayq_tasks_failed_total{reason="contract"}`, `delayq_tasks_failed_total{reason="other"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"delayq_tasks_accepted_total": 12345, "delayq_tasks_failed_total": 7, "process_cpu_seconds_total": 15, "absent": 0,
		`delayq_tasks_failed_total{reason="contract"}`: 3, `delayq_tasks_failed_total{reason="other"}`: 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if _, err := ParseMetrics(strings.NewReader("delayq_tasks_accepted_total x\n"), "delayq_tasks_accepted_total"); err == nil {
		t.Error("bad value accepted")
	}
}

func TestSummary(t *testing.T) {
	rep := &Report{
		Run: "r", Tasks: 100, Payload: 10, Delays: "burst", IDs: IDsSnowflake,
		Baseline: &Baseline{ProduceRate: 1000, CopyRate: 800, DrainRate: 900},
		Delayq: &Delayq{
			SubmitRate: 400, DeliveryRate: 450, Burst: true, AcceptedBeforeDue: false, Awaited: true,
			Outcome: Outcome{Delivered: 100, Lateness: Percentiles{P99: 120}},
			Redis:   &RedisFigures{BytesPerPending: 21.5, Pending: 100},
			RedisCPU: &RedisCPUFigures{SubmitSeconds: 4, PerThousand: 0.05,
				SubmitCommands: []CommandTime{{"evalsha", 2.2}, {"zmscore", 1.1}, {"zadd", 0.7}, {"exists", 0.1}}},
		},
		Ratios: &Ratios{Submit: 0.5, Delivery: 0.5},
	}
	var buf bytes.Buffer
	rep.WriteSummary(&buf)
	for _, want := range []string{"0.50 x baseline copy", "burst drain", "p99 120ms", "21.5 bytes/pending", "WARNING", "lost 0",
		"redis cpu        0.050s per 1,000 tasks (submit 4.0s: evalsha 2.2s, zmscore 1.1s, zadd 0.7s; deliver 0.0s)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Tasks: -1, Rate: -1, IDs: "uuid", Brokers: []string{"nohost"}}
	c.setDefaults()
	err := c.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"tasks", "rate", "ids", "broker"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	var ok Config
	ok.setDefaults()
	if err := ok.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func TestDelivery(t *testing.T) {
	at := time.UnixMilli(1795251948605).UTC()
	m := kafka.Message{
		Key:  []byte("42"),
		Time: at.Add(30 * time.Millisecond),
		Headers: []kafka.Header{
			{Key: payload.HeaderID, Value: []byte("x")},
			{Key: payload.HeaderAt, Value: []byte(payload.FormatTime(at.UnixMilli()))},
		},
	}
	d := delivery(m, at.Add(50*time.Millisecond))
	want := Delivery{Seq: 42, ExecAt: at.UnixMilli(), Written: at.UnixMilli() + 30, Seen: at.UnixMilli() + 50}
	if d != want {
		t.Errorf("delivery = %+v, want %+v", d, want)
	}
	if d := delivery(kafka.Message{Key: []byte("not a number")}, at); d.Seq != -1 {
		t.Errorf("unparsable key gave seq %d", d.Seq)
	}
}

func TestTaskSource(t *testing.T) {
	start := time.UnixMilli(1795251948605)
	for _, tt := range []struct {
		name string
		cfg  Config
		ok   func(at int64, now time.Time) bool
	}{
		{"uniform", Config{Tasks: 500, MinDelay: time.Second, Span: time.Minute, IDs: IDsString}, func(at int64, now time.Time) bool {
			d := time.UnixMilli(at).Sub(now)
			return d >= time.Second && d < time.Second+time.Minute
		}},
		{"burst", Config{Tasks: 500, Burst: true, BurstAfter: 30 * time.Second}, func(at int64, _ time.Time) bool {
			second := start.Add(30 * time.Second).Truncate(time.Second).UnixMilli()
			return at >= second && at < second+1000
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.setDefaults()
			tally := NewTally(cfg.Tasks)
			src, err := newTaskSource(&cfg, start, tally)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]bool{}
			now := start.Add(time.Second)
			for seq := range cfg.Tasks {
				m := src.task("in", seq, now)
				var at int64
				for _, h := range m.Headers {
					switch h.Key {
					case payload.HeaderAt:
						at, _ = strconv.ParseInt(string(h.Value), 10, 64)
					case payload.HeaderID:
						ids[string(h.Value)] = true
					case payload.HeaderTopic:
						if string(h.Value) != cfg.Topic {
							t.Fatalf("delay-topic %q, want %q", h.Value, cfg.Topic)
						}
					}
				}
				if !tt.ok(at, now) {
					t.Fatalf("task %d due %v, outside the distribution", seq, time.UnixMilli(at).Sub(now))
				}
				if string(m.Key) != strconv.Itoa(seq) || len(m.Value) != cfg.Payload || m.Topic != "in" {
					t.Fatalf("task %d: key %q, %d value bytes, topic %q", seq, m.Key, len(m.Value), m.Topic)
				}
				// The tally knows the due time before the message exists.
				tally.Add(Delivery{Seq: seq, ExecAt: at, Written: at})
			}
			if len(ids) != cfg.Tasks {
				t.Errorf("%d distinct ids for %d tasks", len(ids), cfg.Tasks)
			}
			if o := tally.Outcome(); o.Delivered != cfg.Tasks || o.Unknown != 0 {
				t.Errorf("tally of the source's own tasks: %+v", o)
			}
		})
	}
}

func TestRedisUsage(t *testing.T) {
	info := "# CPU\r\nused_cpu_sys:0.50\r\nused_cpu_user:1.25\r\nused_cpu_sys_children:9\r\n" +
		"# Commandstats\r\ncmdstat_zadd:calls=10,usec=300,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=2,usec=900,usec_per_call=450.00\r\ncmdstat_memory|usage:calls=1,usec=5,usec_per_call=5.00\r\n"
	before, err := ParseRedisUsage(info)
	if err != nil {
		t.Fatal(err)
	}
	if before.CPUSeconds != 1.75 || before.CommandUsec["zadd"] != 300 || before.CommandUsec["memory|usage"] != 5 {
		t.Fatalf("parsed %+v", before)
	}
	after, err := ParseRedisUsage(strings.NewReplacer("used_cpu_user:1.25", "used_cpu_user:3.25", "usec=300,", "usec=2300,",
		"cmdstat_evalsha:calls=2,usec=900,", "cmdstat_evalsha:calls=3,usec=1900,").Replace(info) + "cmdstat_exists:calls=1,usec=1000000\r\n")
	if err != nil {
		t.Fatal(err)
	}
	cpu, cmds := after.Since(before)
	want := []CommandTime{{"exists", 1}, {"zadd", 0.002}, {"evalsha", 0.001}}
	if cpu != 2 || !slices.Equal(cmds, want) {
		t.Errorf("since: %v %v, want 2 %v", cpu, cmds, want)
	}
	if _, err := ParseRedisUsage("# CPU\r\nused_cpu_sys:0.5\r\n"); err == nil {
		t.Error("INFO without used_cpu_user accepted")
	}
	if _, err := ParseRedisUsage("used_cpu_sys:0.5\nused_cpu_user:1\ncmdstat_get:calls=1,usec=x\n"); err == nil {
		t.Error("bad usec accepted")
	}
}
