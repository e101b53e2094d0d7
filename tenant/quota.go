package tenant

import (
	"fmt"
	"time"
)

// QuotaPrefix starts the reason of every refusal by a quota.
const QuotaPrefix = "quota: "

// The quotas, as named in Rules' JSON and in a refusal.
const (
	QuotaPending = "max_pending"
	QuotaRate    = "submit_per_second"
	QuotaPayload = "max_payload_bytes"
)

// Request is one input message of a tenant as the quotas see it.
type Request struct {
	// Adds is whether it adds a pending task (a submit of a new id). A
	// cancel, a reschedule and a replace of a pending task add none.
	Adds bool
	// PayloadBytes is the size of its value.
	PayloadBytes int
}

// Refusal is why Admit refused a request: the quota and its limit.
type Refusal struct {
	Quota string
	Limit int64
	// Reason is what the refusal says (the failed topic's delay-error,
	// the API's 429 body): "quota: " + the quota, its limit and the count.
	Reason string
}

// Admit decides a request of a tenant with rules r that has pending tasks
// pending now: admitted (nil), or refused by the first quota it is over,
// checked in this order: max_payload_bytes, max_pending (only for a
// request that adds a task), submit_per_second (a token of b, taken only
// when the request is admitted). The caller counts an admitted Adds
// request into pending before it decides the next one.
func (r Rules) Admit(req Request, pending int64, b *Bucket, now time.Time) *Refusal {
	if r.MaxPayloadBytes > 0 && req.PayloadBytes > r.MaxPayloadBytes {
		return refuse(QuotaPayload, int64(r.MaxPayloadBytes), fmt.Sprintf("a payload of %d bytes", req.PayloadBytes))
	}
	if req.Adds && r.MaxPending > 0 && pending >= r.MaxPending {
		return refuse(QuotaPending, r.MaxPending, fmt.Sprintf("%d tasks pending", pending))
	}
	if r.SubmitPerSecond > 0 && !b.Take(r.SubmitPerSecond, now) {
		return refuse(QuotaRate, int64(r.SubmitPerSecond), "over the rate")
	}
	return nil
}

func refuse(quota string, limit int64, what string) *Refusal {
	return &Refusal{Quota: quota, Limit: limit, Reason: fmt.Sprintf("%s%s %d: %s", QuotaPrefix, quota, limit, what)}
}

// Bucket is a tenant's submit token bucket: Tokens at At (unix ms). It
// holds at most one second's worth of tokens (rate) and refills at rate a
// second. The zero Bucket is full at its first Take.
type Bucket struct {
	Tokens float64
	At     int64
	set    bool
}

// Take takes one token at now, refilling at rate a second up to rate, and
// reports whether it got one. A clock that steps back refills nothing.
func (b *Bucket) Take(rate int, now time.Time) bool {
	ms := now.UnixMilli()
	if !b.set {
		b.Tokens, b.At, b.set = float64(rate), ms, true
	}
	if ms > b.At {
		b.Tokens = min(float64(rate), b.Tokens+float64(ms-b.At)*float64(rate)/1000)
		b.At = ms
	}
	if b.Tokens < 1 {
		return false
	}
	b.Tokens--
	return true
}
