package payload_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// BenchmarkCheckCron is what Decode spends on a message's cron headers:
// the same spec and zone again and again (same: the cache's case), and a
// new spec every time (new: 216,000 specs in turn, far more than the cache
// holds, as a producer that varies its specs would send).
func BenchmarkCheckCron(b *testing.B) {
	first := now.Add(time.Minute).UnixMilli()
	for _, tc := range []struct{ name, spec, tz string }{
		{"weekdays", "%d,%d,%d 9 * * 1-5", "Europe/Berlin"},
		{"hourly", "%d,%d,%d * * * *", "UTC"},
		{"twicemonthly", "%d,%d,%d 0 1,15 * *", "America/New_York"},
	} {
		b.Run(tc.name+"/same", func(b *testing.B) {
			hs := hdr("delay-cron", fmt.Sprintf(tc.spec, 0, 20, 40), "delay-tz", tc.tz)
			b.ReportAllocs()
			for b.Loop() {
				if err := payload.CheckRecurrence(hs, first, payload.DefaultMaxDelay); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/new", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				n := i % (60 * 60 * 60)
				hs := hdr("delay-cron", fmt.Sprintf(tc.spec, n%60, n/60%60, n/3600), "delay-tz", tc.tz)
				i++
				if err := payload.CheckRecurrence(hs, first, payload.DefaultMaxDelay); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
