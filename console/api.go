package console

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/delayq/delayq/internal/httpserve"
	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/zset"
)

// maxBody caps the JSON body of an action.
const maxBody = 64 << 10

// httpError is an error with the status the API answers it with.
type httpError struct {
	status int
	msg    string
}

func (e httpError) Error() string { return e.msg }

// backendError is a failed call to one of delayd's dependencies: callers
// learn which one failed, the log gets the error, whose text may hold
// addresses of brokers, ZooKeeper or Redis.
type backendError struct {
	dep string
	err error
}

func (e backendError) Error() string { return e.dep + ": " + e.err.Error() }
func (e backendError) Unwrap() error { return e.err }

func backend(dep string, err error) error { return backendError{dep, err} }

// api turns f into a JSON endpoint: its value is answered 200, an
// httpError with its status, a backendError 502 (naming the dependency
// only), any other error 500. With a Token every call needs it.
func (c *Console) api(f func(*http.Request) (any, error)) http.Handler {
	return c.secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		err := c.authorized(w, r)
		var v any
		if err == nil {
			v, err = f(r)
		}
		status := http.StatusOK
		if err != nil {
			var (
				he httpError
				be backendError
			)
			msg := err.Error()
			switch {
			case errors.As(err, &he):
				status = he.status
			case errors.Is(err, ErrNotReady):
				status = http.StatusServiceUnavailable
			case errors.As(err, &be):
				status, msg = http.StatusBadGateway, be.dep+" failed (the reason is in delayd's log)"
				c.cfg.Logger.Warn("console backend call failed", "dependency", be.dep, "path", r.URL.Path, "err", be.err)
			default:
				status, msg = http.StatusInternalServerError, "internal error (the reason is in delayd's log)"
				c.cfg.Logger.Error("console request failed", "path", r.URL.Path, "err", err)
			}
			v = map[string]string{"error": msg}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}))
}

// authorized checks the bearer token, when the console has one.
func (c *Console) authorized(w http.ResponseWriter, r *http.Request) error {
	if c.cfg.Token == "" {
		return nil
	}
	if !httpserve.Bearer(r, c.cfg.Token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="delayq console"`)
		return httpError{http.StatusUnauthorized, "missing or wrong console token (DELAYQ_CONSOLE_TOKEN)"}
	}
	return nil
}

// who says who made r, for the lines that log reads and actions: the
// remote address, what a proxy says it forwarded for (unverified), and
// whether the console token came with it.
func (c *Console) who(r *http.Request) []any {
	auth := "none"
	if c.cfg.Token != "" {
		auth = "token" // authorized let it through
	}
	attrs := []any{"remote", r.RemoteAddr, "auth", auth}
	if f := r.Header.Get("X-Forwarded-For"); f != "" {
		attrs = append(attrs, "forwarded_for", f)
	}
	return attrs
}

// action guards f: write mode (the token was checked by api, Write needs
// one), a JSON body.
func (c *Console) action(f func(*http.Request) (any, error)) func(*http.Request) (any, error) {
	return func(r *http.Request) (any, error) {
		if !c.cfg.Write {
			return nil, httpError{http.StatusForbidden, "read-only console: start delayd with --console-write and DELAYQ_CONSOLE_TOKEN to act"}
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			return nil, httpError{http.StatusUnsupportedMediaType, "send application/json"}
		}
		r.Body = http.MaxBytesReader(nil, r.Body, maxBody)
		return f(r)
	}
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return httpError{http.StatusBadRequest, "body: " + err.Error()}
	}
	return nil
}

func (c *Console) ready() (*Backends, error) {
	b := c.backends()
	if b == nil {
		return nil, ErrNotReady
	}
	return b, nil
}

// Overview is the overview page's data.
type Overview struct {
	Now   int64 `json:"now"`
	Write bool  `json:"write"`
	Ready bool  `json:"ready"`
	// Window is the span, in seconds, the rates and the lateness
	// percentiles cover; 0 when there is no earlier sample yet.
	Window  float64            `json:"window"`
	Totals  map[string]float64 `json:"totals"`
	Rates   map[string]float64 `json:"rates,omitempty"` // per second over Window
	Reasons map[string]float64 `json:"failed_by_reason"`
	// Lateness percentiles in seconds over Window, or since start when no
	// task was delivered in Window (LatenessSince says which); nil when none
	// was ever delivered.
	LatenessP50   *float64           `json:"lateness_p50"`
	LatenessP99   *float64           `json:"lateness_p99"`
	LatenessSince string             `json:"lateness_since"` // "window" or "start"
	Lag           map[string]float64 `json:"ingest_lag"`
	Pending       map[string]float64 `json:"pending"`
	Dependencies  []Status           `json:"dependencies"`
}

func (c *Console) overview(r *http.Request) (any, error) {
	mfs, err := c.cfg.Gatherer.Gather()
	if err != nil && len(mfs) == 0 {
		return nil, backend("metrics", err)
	}
	now := c.cfg.Now()
	s := readSample(now, mfs)
	old, ok := c.sampler.base(s)
	o := Overview{
		Now: now.UnixMilli(), Write: c.cfg.Write, Totals: map[string]float64{}, Reasons: s.failed,
		Lag: s.lag, Pending: s.pending, Dependencies: []Status{},
	}
	for _, k := range counters {
		o.Totals[k.key] = s.counters[k.metric]
	}
	lat, since := s.lateness, "start"
	if ok {
		dt := s.at.Sub(old.at).Seconds()
		o.Window, o.Rates = dt, map[string]float64{}
		for _, k := range counters {
			o.Rates[k.key] = max(0, s.counters[k.metric]-old.counters[k.metric]) / dt
		}
		if d := s.lateness.since(old.lateness); d.count > 0 {
			lat, since = d, "window"
		}
	}
	o.LatenessP50, o.LatenessP99, o.LatenessSince = finite(lat.quantile(0.5)), finite(lat.quantile(0.99)), since
	if b := c.backends(); b != nil {
		o.Ready = true
		if b.Health != nil {
			o.Dependencies = b.Health.Dependencies()
		}
	}
	return o, nil
}

func finite(f float64) *float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func (c *Console) backlogView(r *http.Request) (any, error) {
	b, err := c.ready()
	if err != nil {
		return nil, err
	}
	if b.Index == nil {
		return nil, httpError{http.StatusNotImplemented, "this delayd has no index"}
	}
	now := c.cfg.Now()
	segs, err := c.backlog.get(r.Context(), now)
	if err != nil {
		return nil, backend("redis", err)
	}
	v := bucketize(now, segs)
	v.CachedFor = c.cfg.BacklogTTL.Seconds()
	return v, nil
}

// Bytes is a key or value as the pages show it: text when it is UTF-8,
// else base64; cut to Config.PreviewBytes.
type Bytes struct {
	Len       int    `json:"len"`
	Null      bool   `json:"null,omitempty"`
	Text      string `json:"text,omitempty"`
	Base64    string `json:"base64,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

func (c *Console) preview(b []byte) Bytes {
	p := Bytes{Len: len(b), Null: b == nil}
	if len(b) > c.cfg.PreviewBytes {
		b, p.Truncated = b[:c.cfg.PreviewBytes], true
		for i := 0; i < utf8.UTFMax && !utf8.Valid(b) && len(b) > 0; i++ {
			b = b[:len(b)-1] // do not call text binary for a rune the cut split
		}
	}
	if utf8.Valid(b) {
		p.Text = string(b)
	} else {
		p.Base64 = base64.StdEncoding.EncodeToString(b)
	}
	return p
}

// Task states. A lookup by id alone answers what the HTTP API's GET
// /v1/tasks/{id} answers (payload.State): pending, cancelled,
// delivered-or-expired or unknown; a lookup by id and due time reads that
// one row and may also answer StateOrphan.
const (
	StatePending   = string(payload.PhasePending)   // will be delivered when due
	StateCancelled = string(payload.PhaseCancelled) // cancelled by id alone, or its row carries the cancel marker
	StateDone      = string(payload.PhaseDone)      // due time passed: delivered, being delivered or expired
	StateOrphan    = "indexed without a row"
	StateUnknown   = string(payload.PhaseUnknown) // no such task: never submitted, or expired past the retention window
)

// TaskView is the task page's data.
type TaskView struct {
	ID        string `json:"id"`
	ID64      string `json:"id64"`
	ExecAt    int64  `json:"exec_at"`
	Due       string `json:"due"`
	State     string `json:"state"`
	Stored    bool   `json:"stored"`
	Pending   bool   `json:"pending"` // State is StatePending
	Cancelled bool   `json:"cancelled"`
	// Indexed: the row's entry is in the Redis index (Zset), where the
	// scanner finds it when due. A cancelled row's entry may linger there
	// until then (a cancel that overtook its task).
	Indexed bool   `json:"indexed"`
	Zset    string `json:"zset"`
	// Replaced: the row is a replace's (under its version id, ID64). A
	// cancel by id and due time names the row of the id, never this one:
	// the console cancels it by id alone (see cancel).
	Replaced bool     `json:"replaced,omitempty"`
	Topic    string   `json:"topic,omitempty"`
	Key      *Bytes   `json:"key,omitempty"`
	Value    *Bytes   `json:"value,omitempty"`
	Headers  []Header `json:"headers,omitempty"`
}

// taskRef reads the id and due time of a task from query or body values.
func taskRef(id, at string) (payload.Ref, int64, error) {
	var errs []string
	if id == "" {
		errs = append(errs, "id is required")
	} else if len(id) > 128 {
		errs = append(errs, fmt.Sprintf("id is %d bytes, over the 128-byte limit", len(id)))
	}
	ms, err := parseTime(at)
	if err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return payload.Ref{}, 0, httpError{http.StatusBadRequest, strings.Join(errs, "; ")}
	}
	return payload.Ref{ID: payload.TaskID(id), ExecAt: ms}, ms, nil
}

// parseTime reads a due time: unix milliseconds or RFC 3339.
func parseTime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("at (the due time) is required")
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms <= 0 {
			return 0, fmt.Errorf("at %q: want a positive unix ms time", s)
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.UnixMilli() <= 0 {
		return 0, fmt.Errorf("at %q: want RFC 3339 (2030-01-02T15:04:05Z) or unix ms", s)
	}
	return t.UnixMilli(), nil
}

func (c *Console) task(r *http.Request) (any, error) {
	b, err := c.ready()
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	id, at := q.Get("id"), q.Get("at")
	if b.Store == nil || b.Index == nil {
		return nil, httpError{http.StatusNotImplemented, "this delayd has no payload store or index"}
	}
	var phase payload.TaskState
	var replaced bool
	ref := payload.Ref{ID: payload.TaskID(id)}
	if at == "" && id != "" && len(id) <= payload.MaxNameLen {
		// By id alone: the API's state (payload.State), and the row it
		// names (a replace's row is its VersionID's).
		if phase, err = payload.State(r.Context(), stateReader{b.Store}, id, c.cfg.Now()); err != nil {
			return nil, backend("payload store", err)
		}
		if phase.At == 0 { // unknown, or cancelled by id alone with no task stored
			return TaskView{ID: id, ID64: strconv.FormatUint(ref.ID, 10), State: string(phase.Phase),
				Cancelled: phase.Phase == payload.PhaseCancelled}, nil
		}
		st, err := b.Store.GetIDs(r.Context(), []uint64{ref.ID})
		if err != nil {
			return nil, backend("payload store", err)
		}
		ref.ID = st[0].Row(ref.ID)
		at = strconv.FormatInt(phase.At, 10)
		replaced = st[0].Version != 0
	}
	given, ms, err := taskRef(id, at)
	if err != nil {
		return nil, err
	}
	if phase.Phase == "" {
		ref = given
	}
	ref.ExecAt = ms
	rows, err := b.Store.Get(r.Context(), []payload.Ref{ref})
	if err != nil {
		return nil, backend("payload store", err)
	}
	e := zset.Entry{ID: ref.ID, ExecAt: ms}
	indexed, err := b.Index.Pending(r.Context(), e)
	if err != nil {
		return nil, backend("redis", err)
	}
	v := TaskView{
		ID: id, ID64: strconv.FormatUint(ref.ID, 10), ExecAt: ms,
		Due: time.UnixMilli(ms).UTC().Format(time.RFC3339Nano), Indexed: indexed, Zset: b.Index.Key(e),
		Replaced: replaced,
	}
	if t := rows[0]; t != nil {
		v.Stored, v.Cancelled, v.Topic = true, t.Cancel, t.Topic
		if !t.Cancel || t.Topic != "" {
			k, val := c.preview(t.Key), c.preview(t.Value)
			v.Key, v.Value = &k, &val
		}
		for _, h := range t.Headers {
			v.Headers = append(v.Headers, Header{Key: h.Key, Value: string(h.Value)})
		}
	}
	if v.Key != nil || len(v.Headers) > 0 {
		c.cfg.Logger.Info("console task read", append([]any{"id", v.ID, "exec_at", ms}, c.who(r)...)...)
	}
	switch {
	case phase.Phase != "":
		v.State = string(phase.Phase)
		v.Cancelled = phase.Phase == payload.PhaseCancelled
	case v.Cancelled:
		v.State = StateCancelled
	case v.Stored && indexed:
		v.State = StatePending
	case v.Stored:
		v.State = StateDone
	case indexed:
		v.State = StateOrphan
	default:
		v.State = StateUnknown
	}
	v.Pending = v.State == StatePending
	return v, nil
}

type cancelRequest struct {
	ID string `json:"id"`
	At string `json:"at"`
}

func (c *Console) cancel(r *http.Request) (any, error) {
	b, err := c.ready()
	if err != nil {
		return nil, err
	}
	var req cancelRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	_, ms, err := taskRef(req.ID, req.At)
	if err != nil {
		return nil, err
	}
	if b.Canceller == nil {
		return nil, httpError{http.StatusNotImplemented, "this delayd cannot write cancels"}
	}
	byID, err := replaceAt(r.Context(), b, req.ID, ms)
	if err != nil {
		return nil, err
	}
	sent := ms
	if byID {
		sent = 0
	}
	if err := b.Canceller.Cancel(r.Context(), req.ID, sent); err != nil {
		return nil, backend("kafka", err)
	}
	c.cfg.Logger.Info("console cancel sent", append([]any{"id", req.ID, "exec_at", ms, "by_id", byID}, c.who(r)...)...)
	out := map[string]any{"sent": true, "id": req.ID, "exec_at": ms}
	if byID {
		out["by_id"] = true
		out["rule"] = "a replaced task is cancelled by id alone (a cancel by id and due time names the row of the id, not the replace's), which also blocks the id for delayd's --max-delay + --retention"
	}
	return out, nil
}

// replaceAt reports whether the current task of name is a replace due at
// ms. Its row is under the replace's version id, which a cancel by id and
// due time (delay-id, delay-at) never names: only a cancel by id alone
// reaches it.
func replaceAt(ctx context.Context, b *Backends, name string, ms int64) (bool, error) {
	if b.Store == nil || len(name) > payload.MaxNameLen {
		return false, nil
	}
	st, err := b.Store.GetIDs(ctx, []uint64{payload.TaskID(name)})
	if err != nil {
		return false, backend("payload store", err)
	}
	return st[0].Version != 0 && st[0].Due() == ms && !st[0].Cancelled, nil
}

// FailedView is one row of the failed page.
type FailedView struct {
	Partition int      `json:"partition"`
	Offset    int64    `json:"offset"`
	Time      int64    `json:"time"` // unix ms
	Reason    string   `json:"reason"`
	Source    string   `json:"source,omitempty"`
	Topic     string   `json:"topic,omitempty"` // delay-topic, the business topic asked for
	Dropped   bool     `json:"dropped,omitempty"`
	Key       Bytes    `json:"key"`
	Value     Bytes    `json:"value"`
	Headers   []Header `json:"headers"`
}

func (c *Console) failed(r *http.Request) (any, error) {
	b, err := c.ready()
	if err != nil {
		return nil, err
	}
	if b.Failed == nil {
		return nil, httpError{http.StatusNotImplemented, "this delayd cannot read delay-failed"}
	}
	q := FailedQuery{Reason: r.URL.Query().Get("reason"), Limit: c.cfg.FailedLimit}
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, httpError{http.StatusBadRequest, fmt.Sprintf("limit %q: want a positive number", s)}
		}
		q.Limit = min(n, c.cfg.FailedLimit)
	}
	msgs, err := b.Failed.Browse(r.Context(), q)
	if err != nil {
		return nil, backend("kafka (delay-failed)", err)
	}
	out := make([]FailedView, len(msgs))
	for i, m := range msgs {
		v := FailedView{
			Partition: m.Partition, Offset: m.Offset, Time: m.Time.UnixMilli(), Reason: m.Reason, Source: m.Source,
			Topic: m.Business, Dropped: m.Dropped, Key: c.preview(m.Key), Value: c.preview(m.Value), Headers: m.Headers,
		}
		if v.Headers == nil {
			v.Headers = []Header{}
		}
		out[i] = v
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time > out[j].Time })
	if len(out) > 0 {
		offsets := make([]string, len(out))
		for i, v := range out {
			offsets[i] = fmt.Sprintf("%d/%d", v.Partition, v.Offset)
		}
		c.cfg.Logger.Info("console failed messages read", append([]any{"messages", len(out), "offsets", offsets}, c.who(r)...)...)
	}
	return map[string]any{"messages": out, "limit": q.Limit}, nil
}

type replayRequest struct {
	Messages []FailedRef `json:"messages"`
}

// maxReplay caps the messages one replay request names.
const maxReplay = 1000

func (c *Console) replay(r *http.Request) (any, error) {
	b, err := c.ready()
	if err != nil {
		return nil, err
	}
	var req replayRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.Messages) == 0 || len(req.Messages) > maxReplay {
		return nil, httpError{http.StatusBadRequest, fmt.Sprintf("name 1 to %d messages, got %d", maxReplay, len(req.Messages))}
	}
	if b.Failed == nil {
		return nil, httpError{http.StatusNotImplemented, "this delayd cannot read delay-failed"}
	}
	n, err := b.Failed.Replay(r.Context(), req.Messages)
	if err != nil {
		return nil, backend("kafka (replay)", err)
	}
	c.cfg.Logger.Info("console replay sent", append([]any{"messages", n}, c.who(r)...)...)
	return map[string]any{"replayed": n}, nil
}
