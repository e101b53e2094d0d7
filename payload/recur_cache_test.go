package payload

import (
	"fmt"
	"testing"
	"time"
)

// TestCronCacheBounded: however many specs producers send, the cache of
// compiled schedules holds at most cronCacheSize, and a spec it forgot is
// compiled again with the same verdict.
func TestCronCacheBounded(t *testing.T) {
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	for i := range cronCacheSize + 500 {
		s := fmt.Sprintf("%d,%d 0 1 1 *", i%60, i/60%60)
		if _, err := compileCron(s, []byte(s), nil, from); err != nil {
			t.Fatal(err)
		}
	}
	cronCache.Lock()
	n := len(cronCache.m)
	cronCache.Unlock()
	if n > cronCacheSize {
		t.Fatalf("%d schedules cached, over %d", n, cronCacheSize)
	}
	c, err := compileCron("0,0 0 1 1 *", []byte("0,0 0 1 1 *"), nil, from)
	if err != nil || c.gap < 365*24*time.Hour.Milliseconds() {
		t.Fatalf("yearly schedule: gap %d ms, %v", c.gap, err)
	}
}
