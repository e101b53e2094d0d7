package load

import (
	"context"
	"sync"
	"time"
)

// DispatchFigures is what delayd's dispatcher spent on its won ticks during
// the run (delayq_dispatch_seconds, delayq_dispatch_ticks_total), so that a
// deep backlog shows whether per-tick work stays bounded.
type DispatchFigures struct {
	WonTicks int `json:"won_ticks"`
	// MeanTickMs is the time of a won tick (emit, retire, backlog phases),
	// averaged over the run; MeanEmitMs its emit phase alone.
	MeanTickMs float64 `json:"mean_tick_ms"`
	MeanEmitMs float64 `json:"mean_emit_ms"`
	// MaxTickMs is the largest mean won-tick time over one sampling window
	// (dispatchEvery): with 1-second ticks about two ticks, with longer ticks
	// one.
	MaxTickMs float64 `json:"max_tick_ms"`
}

const dispatchEvery = 2 * time.Second

var dispatchMetrics = []string{metricWonTicks, metricTickSum, metricEmitSum, metricEmitCount}

// sampleDispatch scrapes the dispatcher metrics every dispatchEvery until
// the returned stop is called; stop returns the figures.
func sampleDispatch(ctx context.Context, addr string) (stop func() *DispatchFigures) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var first, last map[string]float64
	var maxMs float64
	wg.Go(func() {
		t := time.NewTicker(dispatchEvery)
		defer t.Stop()
		for {
			now, err := Scrape(ctx, metricsClient, addr, dispatchMetrics...)
			if err == nil {
				if first == nil {
					first = now
				}
				if last != nil {
					if n := now[metricWonTicks] - last[metricWonTicks]; n > 0 {
						maxMs = max(maxMs, 1000*(now[metricTickSum]-last[metricTickSum])/n)
					}
				}
				last = now
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() *DispatchFigures {
		cancel()
		wg.Wait()
		if first == nil || last == nil {
			return nil
		}
		f := &DispatchFigures{WonTicks: int(last[metricWonTicks] - first[metricWonTicks]), MaxTickMs: maxMs}
		if f.WonTicks > 0 {
			f.MeanTickMs = 1000 * (last[metricTickSum] - first[metricTickSum]) / float64(f.WonTicks)
		}
		if n := last[metricEmitCount] - first[metricEmitCount]; n > 0 {
			f.MeanEmitMs = 1000 * (last[metricEmitSum] - first[metricEmitSum]) / n
		}
		return f
	}
}
