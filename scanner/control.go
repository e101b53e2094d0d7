package scanner

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/internal/metric"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/scanner/schedule"
	"github.com/delayq/delayq/topicctl"
)

// ReasonExpired is the delay-error of a task delivered later than its
// exec_at plus its delay-expire-after (or its topic's default expiry);
// it is also the reason label of delayq_tasks_failed_total for it.
const ReasonExpired = "expired"

// Controls is the part of the operators' topic controls the scanner uses
// (topicctl.Store): it holds back the due tasks of paused and
// rate-limited topics, and releases them (release.go).
type Controls interface {
	// Controls returns every topic's control, cached briefly.
	Controls(ctx context.Context) (topicctl.Snapshot, error)
	// Hold keeps refs of topic aside until they are released.
	Hold(ctx context.Context, topic string, refs []payload.Ref) error
	// HeldTopics are the topics that may have held tasks.
	HeldTopics(ctx context.Context) ([]string, error)
	// Held returns up to n held refs of topic due by until, lowest first.
	Held(ctx context.Context, topic string, until int64, n int) ([]payload.Ref, error)
	// Release removes delivered (or dropped) refs from the held ones.
	Release(ctx context.Context, topic string, refs []payload.Ref) error
	// Forget drops topic from HeldTopics when it holds nothing.
	Forget(ctx context.Context, topic string) error
	// Take takes up to want of topic's tokens at rate a second.
	Take(ctx context.Context, topic string, rate, want int, now time.Time) (int, error)
	// Lease makes owner the one releaser of topic for ttl.
	Lease(ctx context.Context, topic, owner string, ttl time.Duration) (bool, error)
	// Renew extends owner's lease of topic by ttl while owner holds it;
	// false once it lapsed or passed to another owner.
	Renew(ctx context.Context, topic, owner string, ttl time.Duration) (bool, error)
	// List returns every topic with a control or held tasks (the gauges).
	List(ctx context.Context) ([]topicctl.Status, bool, error)
}

// controlMetrics counts what the controls did.
type controlMetrics struct {
	held     prometheus.Counter
	lateness prometheus.Histogram
	// Set by the releaser every gaugeEvery, the same on every instance.
	paused     *prometheus.GaugeVec
	heldTopics *prometheus.GaugeVec
}

func newControlMetrics(reg prometheus.Registerer) (*controlMetrics, error) {
	var errs []error
	m := &controlMetrics{
		held: metric.Register(reg, &errs, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "delayq_tasks_held_total",
			Help: "Due tasks held back because their topic was paused or rate-limited.",
		})),
		lateness: metric.Register(reg, &errs, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "delayq_held_delivery_lateness_seconds",
			Help:    "Delivery time minus due time of tasks held back by a pause or a rate limit (not in delayq_delivery_lateness_seconds).",
			Buckets: []float64{0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400},
		})),
		paused: metric.Register(reg, &errs, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "delayq_topic_paused",
			Help: "1 while a business topic is paused (its own pause or a pause of every topic), by topic.",
		}, []string{"topic"})),
		heldTopics: metric.Register(reg, &errs, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "delayq_topic_held_tasks",
			Help: "Due tasks held back by a pause or a rate limit, by topic.",
		}, []string{"topic"})),
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("scanner: control metrics: %w", errs[0])
	}
	return m, nil
}

// control applies the topics' controls to ds, the deliveries of a step:
// an expired task goes to FailedTopic instead; a task of a paused or
// rate-limited topic is held (Controls.Hold) and its entry settled, to be
// delivered by the releaser. It returns the deliveries to write now, and
// an error only when ctx ended first.
func (l loader) control(ctx context.Context, ds []*delivery) ([]*delivery, error) {
	c := l.s.cfg.Controls
	if len(ds) == 0 {
		return ds, nil
	}
	var sn topicctl.Snapshot
	if c != nil {
		err := l.s.stage.Do(ctx, "controls", l.s.policy, func(ctx context.Context) (err error) {
			sn, err = c.Controls(ctx)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("scanner: read topic controls: %w", err)
		}
	}
	now := time.Now()
	out := ds[:0:0]
	hold := make(map[string][]*delivery)
	for _, d := range ds {
		ctl := sn.Of(d.task.Topic)
		failed := d.failed || d.expire(ctl, now, l.s.cfg.FailedTopic)
		if schedule.Route(rules(ctl), failed, false) == schedule.HoldBack {
			hold[d.task.Topic] = append(hold[d.task.Topic], d)
			continue
		}
		out = append(out, d)
	}
	for topic, hds := range hold {
		refs := make([]payload.Ref, len(hds))
		for i, d := range hds {
			refs[i] = d.task.Ref()
		}
		err := l.s.stage.Do(ctx, "hold", l.s.policy, func(ctx context.Context) error {
			return c.Hold(ctx, topic, refs)
		})
		if err != nil {
			return nil, fmt.Errorf("scanner: hold %d tasks of %s: %w", len(refs), topic, err)
		}
		for _, d := range hds {
			d.entry.settle()
		}
		l.s.cm.held.Add(float64(len(hds)))
	}
	return out, nil
}

// rules is the part of a topic's control the scheduling rules need.
func rules(c topicctl.Control) schedule.Control {
	return schedule.Control{Paused: c.Paused, Rate: c.Rate}
}

// expire turns d into its form for failed (the failed topic) with reason
// ReasonExpired when delivering it at now would be later than its exec_at
// plus its delay-expire-after, or its topic's default expiry
// (schedule.Expired), and reports whether it did.
func (d *delivery) expire(ctl topicctl.Control, now time.Time, failed string) bool {
	after, ok, err := payload.ExpireAfter(d.task.Headers)
	if err != nil || !ok {
		after = ctl.ExpireAfter
	}
	if !schedule.Expired(d.task.ExecAt, after, now) {
		return false
	}
	d.toFailed(failed, ReasonExpired)
	d.reason = ReasonExpired
	return true
}
