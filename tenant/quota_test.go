package tenant

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_767_225_600_000)

func TestAdmit(t *testing.T) {
	r := Rules{MaxPending: 10, SubmitPerSecond: 100, MaxPayloadBytes: 1024}
	for _, c := range []struct {
		name    string
		rules   Rules
		req     Request
		pending int64
		empty   bool // the bucket has no token
		quota   string
		reason  string
	}{
		{name: "admitted", rules: r, req: Request{Adds: true, PayloadBytes: 1024}, pending: 9},
		{name: "no rules", rules: Rules{}, req: Request{Adds: true, PayloadBytes: 1 << 30}, pending: 1 << 40, empty: true},
		{name: "payload", rules: r, req: Request{Adds: true, PayloadBytes: 1025}, pending: 0,
			quota: QuotaPayload, reason: "quota: max_payload_bytes 1024: a payload of 1025 bytes"},
		{name: "pending", rules: r, req: Request{Adds: true}, pending: 10,
			quota: QuotaPending, reason: "quota: max_pending 10: 10 tasks pending"},
		{name: "pending counts only adds", rules: r, req: Request{Adds: false}, pending: 10},
		{name: "rate", rules: r, req: Request{Adds: true}, pending: 0, empty: true,
			quota: QuotaRate, reason: "quota: submit_per_second 100: over the rate"},
		{name: "rate applies to ops too", rules: r, req: Request{}, pending: 10, empty: true, quota: QuotaRate},
		{name: "payload first", rules: r, req: Request{Adds: true, PayloadBytes: 2000}, pending: 10, empty: true, quota: QuotaPayload},
		{name: "pending before rate", rules: r, req: Request{Adds: true}, pending: 10, empty: true, quota: QuotaPending},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b Bucket
			if c.empty {
				for c.rules.SubmitPerSecond > 0 && b.Take(c.rules.SubmitPerSecond, t0) {
				}
			}
			before := b
			ref := c.rules.Admit(c.req, c.pending, &b, t0)
			switch {
			case c.quota == "" && ref != nil:
				t.Fatalf("refused: %+v", *ref)
			case c.quota == "":
				return
			case ref == nil:
				t.Fatalf("admitted, want refused by %s", c.quota)
			}
			if ref.Quota != c.quota || !strings.HasPrefix(ref.Reason, QuotaPrefix+c.quota+" ") {
				t.Fatalf("refusal %+v, want quota %s", *ref, c.quota)
			}
			if c.reason != "" && ref.Reason != c.reason {
				t.Fatalf("reason %q, want %q", ref.Reason, c.reason)
			}
			if b.Tokens != before.Tokens {
				t.Fatalf("a refused request took a token: %v -> %v", before.Tokens, b.Tokens)
			}
		})
	}
}

// TestAdmitSequence: a tenant at max_pending 1000 receiving 1500 submits
// (the must-show 2, as rules) admits 1000 and refuses 500 with
// reason quota, and admits again once tasks are delivered.
func TestAdmitSequence(t *testing.T) {
	r := Rules{MaxPending: 1000}
	var b Bucket
	pending, admitted, refused := int64(0), 0, 0
	for range 1500 {
		if ref := r.Admit(Request{Adds: true}, pending, &b, t0); ref != nil {
			refused++
			if !strings.HasPrefix(ref.Reason, "quota: max_pending 1000") {
				t.Fatalf("reason %q", ref.Reason)
			}
			continue
		}
		admitted++
		pending++
	}
	if admitted != 1000 || refused != 500 {
		t.Fatalf("admitted %d, refused %d; want 1000, 500", admitted, refused)
	}
	pending -= 3 // three delivered
	for i := range 4 {
		ref := r.Admit(Request{Adds: true}, pending, &b, t0)
		if (ref == nil) != (i < 3) {
			t.Fatalf("submit %d after 3 deliveries: %+v", i, ref)
		}
		if ref == nil {
			pending++
		}
	}
}

// TestBucket: at most rate + rate×t tokens in any span t, a full second's
// worth at once, none gained from a clock that steps back.
func TestBucket(t *testing.T) {
	for _, c := range []struct {
		name  string
		rate  int
		steps []int64 // ms after t0 of each Take
		want  int     // tokens taken
	}{
		{"a full bucket at first", 5, []int64{0, 0, 0, 0, 0, 0, 0}, 5},
		{"refills at the rate", 10, []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100, 100, 150, 200}, 12},
		{"no more than a second's worth", 2, []int64{0, 0, 10_000, 10_000, 10_000}, 4},
		{"clock back", 10, append(repeat(0, 10), -5000, -5000, 0), 10},
		{"rate 1", 1, []int64{0, 0, 999, 1000, 1000}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b Bucket
			got := 0
			for _, ms := range c.steps {
				if b.Take(c.rate, t0.Add(time.Duration(ms)*time.Millisecond)) {
					got++
				}
			}
			if got != c.want {
				t.Fatalf("took %d, want %d", got, c.want)
			}
		})
	}
}

func repeat(v int64, n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// TestBucketRate: over a long run of greedy takes every millisecond, the
// tokens taken in any window stay within rate + rate×t.
func TestBucketRate(t *testing.T) {
	for _, rate := range []int{1, 7, 100, 1000} {
		var b Bucket
		var at []int64
		for ms := int64(0); ms < 5000; ms++ {
			for b.Take(rate, t0.Add(time.Duration(ms)*time.Millisecond)) {
				at = append(at, ms)
			}
		}
		for i := range at {
			for j := i; j < len(at); j++ {
				if n, span := j-i+1, at[j]-at[i]; float64(n) > float64(rate)+float64(rate)*float64(span)/1000+1e-9 {
					t.Fatalf("rate %d: %d tokens in %d ms", rate, n, span)
				}
				if j-i > rate*3 {
					break
				}
			}
		}
		if want := rate + rate*4999/1000; len(at) < want {
			t.Fatalf("rate %d: %d tokens in 5 s, want at least %d", rate, len(at), want)
		}
	}
}
