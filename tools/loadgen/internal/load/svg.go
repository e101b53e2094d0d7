package load

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH        = 900, 420
	marginL, marginR    = 70, 150
	marginT, marginB    = 40, 50
	defaultBins         = 200
	svgWidth, svgHeight = marginL + plotW + marginR, marginT + plotH + marginB
	yTicks, xTicks      = 6, 8
	colorP50, colorP99  = "#1f77b4", "#ff7f0e"
	colorMax            = "#d62728"
)

// Bin is the lateness of the tasks due in one slice of the run.
type Bin struct {
	From int64 `json:"from_unix_ms"` // exec_at of the bin start
	N    int   `json:"n"`
	P50  int64 `json:"p50_ms"` // lateness
	P99  int64 `json:"p99_ms"`
	Max  int64 `json:"max_ms"`
}

// LatenessBins cuts samples by exec_at into at most n bins of equal width
// and returns the non-empty ones in time order.
func LatenessBins(samples []Sample, n int) []Bin {
	if len(samples) == 0 || n < 1 {
		return nil
	}
	lo, hi := samples[0].ExecAt, samples[0].ExecAt
	for _, s := range samples {
		lo, hi = min(lo, s.ExecAt), max(hi, s.ExecAt)
	}
	width := max((hi-lo+1+int64(n)-1)/int64(n), 1)
	groups := make(map[int64][]int64)
	for _, s := range samples {
		b := (s.ExecAt - lo) / width
		groups[b] = append(groups[b], s.Late)
	}
	keys := make([]int64, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	bins := make([]Bin, 0, len(keys))
	for _, k := range keys {
		vs := groups[k]
		slices.Sort(vs)
		bins = append(bins, Bin{From: lo + k*width, N: len(vs), P50: Rank(vs, 0.5), P99: Rank(vs, 0.99), Max: vs[len(vs)-1]})
	}
	return bins
}

// WriteSVG draws lateness (record timestamp minus delay-at) over due time:
// p50, p99 and max per bin, with the given title.
func WriteSVG(w io.Writer, title string, samples []Sample) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="22" font-size="15">%s</text>`+"\n", marginL, html.EscapeString(title))

	bins := LatenessBins(samples, defaultBins)
	if len(bins) == 0 {
		p(`<text x="%d" y="%d">no deliveries</text>`+"\n", marginL+plotW/2-40, marginT+plotH/2)
		p("</svg>\n")
		return bw.Flush()
	}
	t0 := bins[0].From
	xMax := float64(bins[len(bins)-1].From-t0) / 1000
	if xMax <= 0 {
		xMax = 1
	}
	yLo, yHi := int64(0), int64(1)
	for _, b := range bins {
		yLo, yHi = min(yLo, b.P50, b.P99, b.Max), max(yHi, b.Max)
	}
	yStep := niceStep(float64(yHi-yLo), yTicks)
	yMin := math.Floor(float64(yLo)/yStep) * yStep
	yMax := math.Ceil(float64(yHi)/yStep) * yStep
	xStep := niceStep(xMax, xTicks)
	xOf := func(ms int64) float64 { return marginL + float64(ms-t0)/1000/xMax*plotW }
	yOf := func(v float64) float64 { return marginT + plotH - (v-yMin)/(yMax-yMin)*plotH }

	// Grid, ticks and axis labels.
	for v := yMin; v <= yMax+yStep/2; v += yStep {
		y := yOf(v)
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, y, marginL+plotW, y)
		p(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, fmtNum(v))
	}
	for v := 0.0; v <= xMax+xStep/2; v += xStep {
		x := marginL + v/xMax*plotW
		p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", x, marginT, x, marginT+plotH)
		p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, marginT+plotH+16, fmtNum(v))
	}
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", marginL, marginT, plotW, plotH)
	p(`<text x="%d" y="%d" text-anchor="middle">due time, seconds after the first due task</text>`+"\n", marginL+plotW/2, svgHeight-10)
	p(`<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">lateness, ms</text>`+"\n", marginT+plotH/2)
	if yMin < 0 {
		p(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333" stroke-dasharray="4 3"/>`+"\n", marginL, yOf(0), marginL+plotW, yOf(0))
	}

	series := []struct {
		name  string
		color string
		value func(Bin) int64
	}{
		{"max", colorMax, func(b Bin) int64 { return b.Max }},
		{"p99", colorP99, func(b Bin) int64 { return b.P99 }},
		{"p50", colorP50, func(b Bin) int64 { return b.P50 }},
	}
	for i, s := range series {
		p(`<polyline fill="none" stroke="%s" stroke-width="1.5" points="`, s.color)
		for j, b := range bins {
			if j > 0 {
				p(" ")
			}
			p("%.1f,%.1f", xOf(b.From), yOf(float64(s.value(b))))
		}
		p(`"/>` + "\n")
		ly := marginT + 20 + 20*i
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", marginL+plotW+15, ly, marginL+plotW+40, ly, s.color)
		p(`<text x="%d" y="%d">%s</text>`+"\n", marginL+plotW+46, ly+4, s.name)
	}
	p(`<text x="%d" y="%d" fill="#555">%d tasks, %d bins</text>`+"\n", marginL+plotW+15, marginT+90, len(samples), len(bins))
	p("</svg>\n")
	return bw.Flush()
}

// niceStep returns a 1, 2 or 5 times a power of ten step that cuts span into
// about n intervals.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func fmtNum(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", math.Round(v*1000)/1000)
}
