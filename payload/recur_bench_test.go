package payload_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/delayq/delayq/payload"
)

// BenchmarkCheckCron is what Decode spends on a message's cron headers:
// the same spec and zone again and again (same: the cache's case), and a
// new spec every time (new: 3,600 specs in turn, more than the cache
// holds, as a producer that varies its specs would send).
func BenchmarkCheckCron(b *testing.B) {
	first := now.Add(time.Minute).UnixMilli()
	for _, tc := range []struct{ name, spec, tz string }{
		{"weekdays", "%d,%d 9 * * 1-5", "Europe/Berlin"},
		{"hourly", "%d,%d * * * *", "UTC"},
		{"twicemonthly", "%d,%d 0 1,15 * *", "America/New_York"},
	} {
		b.Run(tc.name+"/same", func(b *testing.B) {
			hs := hdr("delay-cron", fmt.Sprintf(tc.spec, 0, 30), "delay-tz", tc.tz)
			b.ReportAllocs()
			for b.Loop() {
				if err := payload.CheckRecurrence(hs, first, payload.DefaultMaxDelay); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/new", func(b *testing.B) {
			specs := make([][]byte, 3600)
			for i := range specs {
				specs[i] = fmt.Appendf(nil, tc.spec, i%60, i/60)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				hs := hdr("delay-cron", string(specs[i%len(specs)]), "delay-tz", tc.tz)
				i++
				if err := payload.CheckRecurrence(hs, first, payload.DefaultMaxDelay); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
