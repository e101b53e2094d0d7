package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/delayq/delayq/cmd/delayctl/internal/backfill"
	"github.com/delayq/delayq/payload"
)

// Progress modes of backfill and repair.
const (
	progressAuto  = "auto"  // bar on a terminal, lines otherwise
	progressBar   = "bar"   // one line redrawn in place
	progressLines = "lines" // a plain line every interval
	progressNone  = "none"
)

// progress renders backfill.Stats on stderr: a bar redrawn at most every
// 100 ms, or a line every interval. Completion is estimated from
// the due time of the last row scanned within [from, to): rows are scanned
// in due-time order, and counting them first would cost a second scan.
type progress struct {
	w        io.Writer
	mode     string
	from, to int64
	every    time.Duration
	start    time.Time
	last     time.Time
	drawn    bool
}

func newProgress(w io.Writer, mode string, from, to int64, every time.Duration) *progress {
	if mode == progressAuto {
		mode = progressLines
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = progressBar
		}
	}
	if mode == progressBar {
		every = 100 * time.Millisecond // the interval is for lines
	}
	now := time.Now()
	return &progress{w: w, mode: mode, from: from, to: to, every: every, start: now, last: now}
}

// update draws s unless the last drawing is more recent than the interval.
func (p *progress) update(s backfill.Stats) {
	p.draw("backfill", s.Scanned, s.Position, "delivered", s.Delivered,
		fmt.Sprintf("delivered %d pending %d cancelled %d", s.Delivered, s.Pending, s.Cancelled))
}

// draw draws a command's progress: rows scanned up to the due time
// position, done of them (named label on the bar), and detail on a line.
func (p *progress) draw(cmd string, scanned, position int64, label string, done int64, detail string) {
	now := time.Now()
	if p.mode == progressNone || now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	frac, rate, eta := p.estimate(scanned, position, now)
	switch p.mode {
	case progressBar:
		const width = 30
		filled := int(frac * width)
		fmt.Fprintf(p.w, "\r\033[K[%s%s] %5.1f%%  %d rows  %d %s  %.0f rows/s  ETA %s",
			strings.Repeat("=", filled), strings.Repeat(" ", width-filled), 100*frac,
			scanned, done, label, rate, eta)
		p.drawn = true
	case progressLines:
		fmt.Fprintf(p.w, "%s: %.1f%% (due %s) scanned %d %s, %.0f rows/s, eta %s\n",
			cmd, 100*frac, fmtDue(position), scanned, detail, rate, eta)
	}
}

// finish clears the bar.
func (p *progress) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// estimate returns the done fraction of the due-time range, the scan rate
// and the time left at that rate.
func (p *progress) estimate(scanned, position int64, now time.Time) (frac, rate float64, eta string) {
	elapsed := now.Sub(p.start)
	if scanned > 0 && p.to > p.from {
		frac = min(max(float64(position-p.from+1)/float64(p.to-p.from), 0), 1)
	}
	if elapsed > 0 {
		rate = float64(scanned) / elapsed.Seconds()
	}
	eta = "?"
	if frac > 0 {
		eta = (time.Duration(float64(elapsed) * (1 - frac) / frac)).Round(time.Second).String()
	}
	return frac, rate, eta
}

func fmtDue(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05")
}

// rangeFlags are the flags backfill and repair share: a due-time range, a
// batch size and how progress is shown.
type rangeFlags struct {
	from, to         *timeValue
	batch            int
	progressMode     string
	progressInterval time.Duration
}

// register adds the flags to cmd; batch is the --batch default, batchUse
// what a batch does.
func (f *rangeFlags) register(sys *IO, cmd *cobra.Command, batch int, batchUse string) {
	f.from, f.to = &timeValue{now: sys.Now}, &timeValue{now: sys.Now}
	fs := cmd.Flags()
	fs.Var(f.from, "from", "first due time, inclusive (required): "+timeHelp)
	fs.Var(f.to, "to", "end of the due times, exclusive (required): "+timeHelp)
	fs.IntVar(&f.batch, "batch", batch, batchUse)
	fs.StringVar(&f.progressMode, "progress", progressAuto, "progress on stderr: auto (bar on a terminal, lines otherwise), bar, lines, none")
	fs.DurationVar(&f.progressInterval, "progress-interval", 5*time.Second, "time between progress lines (--progress lines)")
	_ = cmd.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions(
		[]string{progressAuto, progressBar, progressLines, progressNone}, cobra.ShellCompDirectiveNoFileComp))
}

// check checks the flags: the range is required and not empty, the batch
// at least 1, the progress mode known.
func (f *rangeFlags) check(cmd *cobra.Command) error {
	if err := require(cmd, "from", "to"); err != nil {
		return err
	}
	if f.to.ms() <= f.from.ms() {
		return usagef("--to %s is not after --from %s", payload.FormatTime(f.to.ms()), payload.FormatTime(f.from.ms()))
	}
	if f.batch < 1 {
		return usagef("--batch: %d must be at least 1", f.batch)
	}
	switch f.progressMode {
	case progressAuto, progressBar, progressLines, progressNone:
	default:
		return usagef("--progress: %q is not auto, bar, lines or none", f.progressMode)
	}
	return nil
}

// progress is the progress display of a run over the range.
func (f *rangeFlags) progress(sys *IO) *progress {
	return newProgress(sys.Stderr, f.progressMode, f.from.ms(), f.to.ms(), f.progressInterval)
}

// result is a run's error as the command returns it; after an interrupt
// (ctx ended) it says on stdout where a rerun resumes.
func (f *rangeFlags) result(ctx context.Context, sys *IO, err error, resume int64) error {
	if err == nil || !errors.Is(err, context.Canceled) || ctx.Err() == nil {
		return err
	}
	fmt.Fprintf(sys.Stdout, "interrupted: every task due before %s is done; resume with --from %d --to %d\n",
		payload.FormatTime(resume), resume, f.to.ms())
	return fmt.Errorf("interrupted; resume with --from %d: %w", resume, context.Canceled)
}

// printRate ends a summary: how long the run took, and its rate.
func printRate(w io.Writer, scanned int64, took time.Duration) {
	rate := 0.0
	if took > 0 {
		rate = float64(scanned) / took.Seconds()
	}
	fmt.Fprintf(w, "  took %v, %.0f rows/s\n", took.Round(time.Millisecond), rate)
}
