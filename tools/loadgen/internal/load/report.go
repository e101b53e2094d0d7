package load

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Report is everything one loadgen run measured. Rates are per second,
// times in seconds unless the name says otherwise.
type Report struct {
	Run        string    `json:"run"`
	Started    time.Time `json:"started"`
	Tasks      int       `json:"tasks"`
	Payload    int       `json:"payload_bytes"`
	Rate       float64   `json:"target_rate"` // 0: as fast as possible
	Delays     string    `json:"delays"`      // e.g. "uniform 5s..1h5s" or "burst at +60s"
	Topic      string    `json:"topic"`
	IDs        string    `json:"ids"`
	DelaydHTTP string    `json:"delayd_http"`

	Baseline *Baseline `json:"baseline,omitempty"`
	Delayq   *Delayq   `json:"delayq,omitempty"`
	Ratios   *Ratios   `json:"ratios,omitempty"`
}

// Baseline is the plain kafka-go pass-through measured in the same run.
type Baseline struct {
	Batch       int     `json:"batch"`        // messages copied per write and commit
	ProduceRate float64 `json:"produce_rate"` // the load tool's producer alone
	// CopyRate: input copied to the output topic while it was being
	// produced, from the first produce to the last copy.
	CopyRate    float64 `json:"copy_rate"`
	CopySeconds float64 `json:"copy_seconds"`
	// DrainRate: the whole input copied again from a backlog by a fresh
	// consumer group, from its first to its last written message.
	DrainRate    float64 `json:"drain_rate"`
	DrainSeconds float64 `json:"drain_seconds"`
	Copied       int     `json:"copied"`
	Drained      int     `json:"drained"`
}

// Delayq is what the delayq run measured.
type Delayq struct {
	ProduceRate    float64 `json:"produce_rate"`
	ProduceSeconds float64 `json:"produce_seconds"`
	// Accepted is the growth of delayq_tasks_accepted_total; SubmitRate is
	// Accepted over SubmitSeconds, from the first produce until Accepted
	// reached Tasks (ingest lag back to zero).
	Accepted      int     `json:"accepted"`
	SubmitSeconds float64 `json:"submit_seconds"`
	SubmitRate    float64 `json:"submit_rate"`
	// AcceptedBeforeDue is false in burst mode when the burst fell due
	// before everything was accepted, which spoils the drain figure.
	AcceptedBeforeDue bool `json:"accepted_before_due"`

	// Awaited is false with --no-deliver: the run ended once everything
	// was accepted, and Outcome counts what was delivered by then.
	Awaited bool    `json:"deliveries_awaited"`
	Outcome Outcome `json:"outcome"`
	// DeliverySeconds runs from the earliest delay-at to the last first
	// delivery; DeliveryRate is Delivered over it. In burst mode that is
	// the drain time of the burst.
	DeliverySeconds float64 `json:"delivery_seconds"`
	DeliveryRate    float64 `json:"delivery_rate"`
	Burst           bool    `json:"burst"`

	Redis *RedisFigures `json:"redis,omitempty"`
	CPU   CPUFigures    `json:"cpu"`
	// RedisCPU is what the run cost Redis (INFO cpu and commandstats).
	RedisCPU *RedisCPUFigures `json:"redis_cpu,omitempty"`
	// Dispatch is the dispatcher's per-tick time during the run.
	Dispatch *DispatchFigures `json:"dispatch,omitempty"`
	// Bins is lateness over due time, what the plot shows.
	Bins []Bin `json:"lateness_bins,omitempty"`

	samples []Sample
}

// Samples returns the first delivery of every delivered task, for the plot.
func (d *Delayq) Samples() []Sample { return d.samples }

// RedisFigures is the Redis memory the pending tasks cost.
type RedisFigures struct {
	UsedBefore      int64   `json:"used_memory_before"`
	UsedAfter       int64   `json:"used_memory_after"`
	Pending         int64   `json:"pending"`
	BytesPerPending float64 `json:"bytes_per_pending"`
	Zsets           int     `json:"zsets"`
	Listpack        int     `json:"listpack"`
	Skiplist        int     `json:"skiplist"`
	MaxMembers      int64   `json:"max_members"`
	MeanMembers     float64 `json:"mean_members"`
	// KeyBytes is the MEMORY USAGE of the index's keys; KeyBytesPerPending
	// it over Pending: unlike the used_memory growth it is not moved by
	// client buffers or allocator state, nor by other users of the Redis.
	KeyBytes           int64   `json:"key_bytes"`
	KeyBytesPerPending float64 `json:"key_bytes_per_pending"`
}

// CPUFigures is delayd's CPU time (process_cpu_seconds_total) during the run.
type CPUFigures struct {
	SubmitSeconds  float64 `json:"submit_seconds"`  // first produce → all accepted
	DeliverSeconds float64 `json:"deliver_seconds"` // all accepted → end
	TotalSeconds   float64 `json:"total_seconds"`
	PerThousand    float64 `json:"per_1000_tasks"`
}

// RedisCPUFigures is Redis's CPU time during the run (used_cpu_user +
// used_cpu_sys growth, every client of that Redis included) and its
// command time by command (commandstats usec growth), most first.
type RedisCPUFigures struct {
	SubmitSeconds   float64       `json:"submit_seconds"`  // first produce → all accepted
	DeliverSeconds  float64       `json:"deliver_seconds"` // all accepted → end
	PerThousand     float64       `json:"per_1000_tasks"`
	SubmitCommands  []CommandTime `json:"submit_commands"`
	DeliverCommands []CommandTime `json:"deliver_commands"`
}

// CommandTime is the time Redis spent in one command.
type CommandTime struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// Ratios are delayq's rates over the baseline's.
type Ratios struct {
	Submit   float64 `json:"submit"`   // delayq submit rate / baseline copy rate
	Delivery float64 `json:"delivery"` // delayq delivery rate / baseline drain rate
}

// topCommands lists the first three commands of cmds for the summary.
func topCommands(cmds []CommandTime) string {
	var b strings.Builder
	for i, c := range cmds[:min(3, len(cmds))] {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s %.1fs", sep, strings.ToLower(c.Name), c.Seconds)
	}
	return b.String()
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// WriteSummary writes the human summary of r.
func (r *Report) WriteSummary(w io.Writer) {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	rate := "as fast as possible"
	if r.Rate > 0 {
		rate = fmt.Sprintf("%.0f/s", r.Rate)
	}
	p("loadgen %s: %d tasks of %d B, %s, delays %s, ids %s\n", r.Run, r.Tasks, r.Payload, rate, r.Delays, r.IDs)
	if bl := r.Baseline; bl != nil {
		p("baseline (kafka-go consumer group -> writer, same messages, batches of %d)\n", bl.Batch)
		p("  produce          %10.0f msg/s\n", bl.ProduceRate)
		p("  copy, streaming  %10.0f msg/s  (%d in %.2fs)\n", bl.CopyRate, bl.Copied, bl.CopySeconds)
		p("  copy, backlog    %10.0f msg/s  (%d in %.2fs)\n", bl.DrainRate, bl.Drained, bl.DrainSeconds)
	}
	if d := r.Delayq; d != nil {
		p("delayq\n")
		p("  produce          %10.0f msg/s  (%.2fs)\n", d.ProduceRate, d.ProduceSeconds)
		p("  submit           %10.0f tasks/s accepted into HBase+Redis (%d in %.2fs)", d.SubmitRate, d.Accepted, d.SubmitSeconds)
		if r.Ratios != nil {
			p("  = %.2f x baseline copy", r.Ratios.Submit)
		}
		p("\n")
		o := d.Outcome
		if o.Delivered > 0 {
			what := "delivery"
			if d.Burst {
				what = "burst drain"
			}
			p("  delivery         %10.0f tasks/s (%s %.2fs from the first due time)", d.DeliveryRate, what, d.DeliverySeconds)
			if r.Ratios != nil {
				p("  = %.2f x baseline backlog copy", r.Ratios.Delivery)
			}
			p("\n")
			l := o.Lateness
			p("  lateness         p50 %dms  p90 %dms  p99 %dms  p99.9 %dms  max %dms  min %dms\n", l.P50, l.P90, l.P99, l.P999, l.Max, l.Min)
			s := o.SeenLateness
			p("  seen by consumer p50 %dms  p99 %dms  max %dms\n", s.P50, s.P99, s.Max)
		}
		if d.Awaited {
			p("  delivered %d  lost %d  duplicates %d  early %d  unknown %d\n", o.Delivered, o.Lost, o.Duplicates, o.Early, o.Unknown)
		} else {
			p("  deliveries not awaited (--no-deliver); %d delivered by the end, early %d\n", o.Delivered, o.Early)
		}
		if d.Burst && !d.AcceptedBeforeDue {
			p("  WARNING: the burst fell due before every task was accepted; raise --burst-after\n")
		}
		if rf := d.Redis; rf != nil {
			p("  redis            %.1f bytes/pending task (%d pending, used_memory %d -> %d)\n",
				rf.BytesPerPending, rf.Pending, rf.UsedBefore, rf.UsedAfter)
			p("                   %.1f bytes/pending task by MEMORY USAGE of the index keys (%d bytes)\n",
				rf.KeyBytesPerPending, rf.KeyBytes)
			p("                   %d zsets: %d listpack, %d skiplist; members max %d, mean %.1f\n",
				rf.Zsets, rf.Listpack, rf.Skiplist, rf.MaxMembers, rf.MeanMembers)
		}
		if f := d.Dispatch; f != nil {
			p("  dispatch         %d won ticks: mean %.1fms (emit %.1fms), max %.1fms per tick over %v windows\n",
				f.WonTicks, f.MeanTickMs, f.MeanEmitMs, f.MaxTickMs, dispatchEvery)
		}
		c := d.CPU
		p("  delayd cpu       %.3fs per 1,000 tasks (submit %.1fs, deliver %.1fs, total %.1fs)\n",
			c.PerThousand, c.SubmitSeconds, c.DeliverSeconds, c.TotalSeconds)
		if rc := d.RedisCPU; rc != nil {
			p("  redis cpu        %.3fs per 1,000 tasks (submit %.1fs%s; deliver %.1fs%s)\n",
				rc.PerThousand, rc.SubmitSeconds, topCommands(rc.SubmitCommands), rc.DeliverSeconds, topCommands(rc.DeliverCommands))
		}
	}
	io.WriteString(w, b.String())
}
