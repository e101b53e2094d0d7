package console

import (
	"math"
	"sort"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Metric names the overview reads from the registry.
const (
	metricAccepted  = "delayq_tasks_accepted_total"
	metricDelivered = "delayq_tasks_delivered_total"
	metricFailed    = "delayq_tasks_failed_total"
	metricCancelled = "delayq_tasks_cancelled_total"
	metricLateness  = "delayq_delivery_lateness_seconds"
	metricLag       = "delayq_ingest_lag"
	metricPending   = "delayq_pending_tasks"
)

// counters the overview shows, in page order.
var counters = []struct{ key, metric string }{
	{"accepted", metricAccepted},
	{"delivered", metricDelivered},
	{"failed", metricFailed},
	{"cancelled", metricCancelled},
}

// sample is what the overview needs from one registry read.
type sample struct {
	at       time.Time
	counters map[string]float64 // by metric name, summed over series
	failed   map[string]float64 // delayq_tasks_failed_total by reason
	lateness histogram
	lag      map[string]float64 // delayq_ingest_lag by topic
	pending  map[string]float64 // delayq_pending_tasks by due
	// present holds every metric family name the registry exported.
	present map[string]bool
}

// histogram is a cumulative histogram: counts[i] observations <= bounds[i].
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
}

func readSample(at time.Time, mfs []*dto.MetricFamily) sample {
	s := sample{
		at: at, counters: map[string]float64{}, failed: map[string]float64{},
		lag: map[string]float64{}, pending: map[string]float64{}, present: map[string]bool{},
	}
	for _, mf := range mfs {
		name := mf.GetName()
		s.present[name] = true
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				s.counters[name] += m.GetCounter().GetValue()
				if name == metricFailed {
					s.failed[label(m, "reason")] += m.GetCounter().GetValue()
				}
			case name == metricLateness && m.GetHistogram() != nil:
				s.lateness = s.lateness.add(m.GetHistogram())
			case name == metricLag && m.GetGauge() != nil:
				s.lag[label(m, "topic")] = m.GetGauge().GetValue()
			case name == metricPending && m.GetGauge() != nil:
				s.pending[label(m, "due")] = m.GetGauge().GetValue()
			}
		}
	}
	return s
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// add sums h and another series of the same buckets.
func (h histogram) add(p *dto.Histogram) histogram {
	if h.bounds == nil {
		for _, b := range p.GetBucket() {
			h.bounds = append(h.bounds, b.GetUpperBound())
			h.counts = append(h.counts, 0)
		}
	}
	for i, b := range p.GetBucket() {
		if i < len(h.counts) && b.GetUpperBound() == h.bounds[i] {
			h.counts[i] += float64(b.GetCumulativeCount())
		}
	}
	h.count += float64(p.GetSampleCount())
	return h
}

// since returns the observations of h that are not in the earlier old.
func (h histogram) since(old histogram) histogram {
	if len(old.counts) != len(h.counts) {
		return h
	}
	d := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), count: h.count - old.count}
	for i := range h.counts {
		d.counts[i] = h.counts[i] - old.counts[i]
	}
	return d
}

// quantile estimates the q-quantile the way Prometheus's
// histogram_quantile does: linear interpolation inside the bucket that
// holds the rank; past the last finite bound it answers that bound. NaN
// when there are no observations.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.count
	i := sort.Search(len(h.counts), func(i int) bool { return h.counts[i] >= rank })
	if i == len(h.counts) || math.IsInf(h.bounds[i], 1) {
		// Past the last finite bound (client_golang leaves the +Inf
		// bucket out; a gatherer may not).
		for j := min(i, len(h.bounds)) - 1; j >= 0; j-- {
			if !math.IsInf(h.bounds[j], 1) {
				return h.bounds[j]
			}
		}
		return math.NaN()
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = h.bounds[i-1], h.counts[i-1]
	}
	in := h.counts[i] - below
	if in <= 0 {
		return h.bounds[i]
	}
	return lo + (h.bounds[i]-lo)*(rank-below)/in
}

// sampler keeps registry samples of the last 2 × window so that a request
// finds one about a window old to compute rates against.
type sampler struct {
	window time.Duration
	start  sample // taken by New, never dropped: the base until kept has one
	mu     sync.Mutex
	kept   []sample // oldest first
}

// base records now and returns the sample to compare it with: the newest
// one at least a window older, else the oldest kept, else the sample
// New took; ok is false when there is none older than a second.
func (s *sampler) base(now sample) (old sample, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.kept) > 0 && now.at.Sub(s.kept[0].at) > 2*s.window {
		s.kept = s.kept[1:]
	}
	for i := len(s.kept) - 1; i >= 0; i-- {
		if now.at.Sub(s.kept[i].at) >= s.window {
			old, ok = s.kept[i], true
			break
		}
	}
	if !ok && len(s.kept) > 0 && now.at.Sub(s.kept[0].at) >= time.Second {
		old, ok = s.kept[0], true
	}
	if !ok && !s.start.at.IsZero() && now.at.Sub(s.start.at) >= time.Second {
		old, ok = s.start, true // the first request: rates since the console started
	}
	// Keep at most about 24 samples per 2 windows, however often pages poll.
	if n := len(s.kept); n == 0 || now.at.Sub(s.kept[n-1].at) >= s.window/12 {
		s.kept = append(s.kept, now)
	}
	return old, ok
}
