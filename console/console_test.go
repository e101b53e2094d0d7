package console

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/taskstate"
	"github.com/delayq/delayq/zset"
)

const token = "0123456789abcdef-test"

type fakeIndex struct {
	segs    []zset.SegmentCount
	pending map[zset.Entry]bool
	calls   int
}

func (f *fakeIndex) Backlog(context.Context) ([]zset.SegmentCount, error) {
	f.calls++
	return f.segs, nil
}
func (f *fakeIndex) Pending(_ context.Context, e zset.Entry) (bool, error) { return f.pending[e], nil }
func (f *fakeIndex) Key(e zset.Entry) string                               { return "p:seg:1" }

type fakeCanceller struct {
	mu   sync.Mutex
	sent []string
}

func (f *fakeCanceller) Cancel(_ context.Context, id string, at int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if at == 0 {
		f.sent = append(f.sent, id+" by id alone")
		return nil
	}
	f.sent = append(f.sent, id+"@"+time.UnixMilli(at).UTC().Format(time.RFC3339))
	return nil
}

type fakeFailed struct {
	msgs     []FailedMessage
	replayed []FailedRef
}

func (f *fakeFailed) Browse(_ context.Context, q FailedQuery) ([]FailedMessage, error) {
	var out []FailedMessage
	for _, m := range f.msgs {
		if strings.Contains(m.Reason, q.Reason) && len(out) < q.Limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeFailed) Replay(_ context.Context, refs []FailedRef) (int, error) {
	f.replayed = append(f.replayed, refs...)
	return len(refs), nil
}

// fixture is a console over fakes, served by httptest.
type fixture struct {
	srv    *httptest.Server
	ix     *fakeIndex
	store  *payload.Memory
	cancel *fakeCanceller
	failed *fakeFailed
	reg    *prometheus.Registry
}

func newFixture(t *testing.T, cfg Config, attach bool) *fixture {
	t.Helper()
	f := &fixture{
		ix: &fakeIndex{pending: map[zset.Entry]bool{}}, store: payload.NewMemory(),
		cancel: &fakeCanceller{}, failed: &fakeFailed{}, reg: prometheus.NewRegistry(),
	}
	cfg.Gatherer = f.reg
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if attach {
		c.Attach(Backends{Index: f.ix, Store: f.store, Canceller: f.cancel, Failed: f.failed,
			Health: fakeHealth{{Name: "redis", Up: true}, {Name: "hbase", Error: "connection refused"}}})
	}
	f.srv = httptest.NewServer(c.Handler())
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) do(t *testing.T, method, path, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestConfigValidate(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"read-only", Config{Gatherer: reg}, ""},
		{"write with token", Config{Gatherer: reg, Write: true, Token: token}, ""},
		{"write without token", Config{Gatherer: reg, Write: true}, "need a token"},
		{"short token", Config{Gatherer: reg, Token: "short"}, "at least 16"},
		{"no gatherer", Config{}, "no gatherer"},
		{"every problem", Config{Write: true, Window: -1}, "no gatherer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want ErrConfig with %q", err, tc.want)
			}
		})
	}
}

func TestActionsGuarded(t *testing.T) {
	ro := newFixture(t, Config{}, true)
	rw := newFixture(t, Config{Write: true, Token: token}, true)
	body := `{"id":"t-1","at":"2030-01-02T15:04:05Z"}`
	for _, tc := range []struct {
		name   string
		f      *fixture
		auth   string
		body   string
		ctype  bool
		status int
	}{
		{"read-only refuses even with the token", ro, token, body, true, http.StatusForbidden},
		{"no token", rw, "", body, true, http.StatusUnauthorized},
		{"wrong token", rw, token + "x", body, true, http.StatusUnauthorized},
		{"bad body", rw, token, `{"id":"t-1","at":"tomorrow"}`, true, http.StatusBadRequest},
		{"unknown field", rw, token, `{"id":"t-1","at":"1","x":1}`, true, http.StatusBadRequest},
		{"ok", rw, token, body, true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := tc.f.do(t, "POST", "/ui/api/task/cancel", tc.auth, tc.body)
			if status != tc.status {
				t.Fatalf("status %d (%s), want %d", status, out, tc.status)
			}
		})
	}
	if got := strings.Join(rw.cancel.sent, ","); got != "t-1@2030-01-02T15:04:05Z" {
		t.Errorf("cancels sent = %q, want exactly the one authorized", got)
	}
	if len(ro.cancel.sent) != 0 {
		t.Errorf("read-only console sent %v", ro.cancel.sent)
	}

	// A form post from another site cannot set the JSON content type.
	req, _ := http.NewRequest("POST", rw.srv.URL+"/ui/api/failed/replay", strings.NewReader(`{"messages":[{"partition":0,"offset":1}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "text/plain")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain replay: status %d, want 415", res.StatusCode)
	}
	if status, out := rw.do(t, "POST", "/ui/api/failed/replay", token, `{"messages":[{"partition":2,"offset":7}]}`); status != 200 || !strings.Contains(out, `"replayed":1`) {
		t.Errorf("replay: %d %s", status, out)
	}
	if len(rw.failed.replayed) != 1 || rw.failed.replayed[0] != (FailedRef{2, 7}) {
		t.Errorf("replayed %v", rw.failed.replayed)
	}
}

func TestNotReady(t *testing.T) {
	f := newFixture(t, Config{}, false)
	for _, p := range []string{"/ui/api/backlog", "/ui/api/task?id=a&at=1", "/ui/api/failed"} {
		if status, out := f.do(t, "GET", p, "", ""); status != http.StatusServiceUnavailable {
			t.Errorf("%s: %d %s, want 503", p, status, out)
		}
	}
	if status, out := f.do(t, "GET", "/ui/api/overview", "", ""); status != 200 || !strings.Contains(out, `"ready":false`) {
		t.Errorf("overview before Attach: %d %s", status, out)
	}
}

func TestStaticAndRedirect(t *testing.T) {
	f := newFixture(t, Config{}, true)
	res, err := http.Get(f.srv.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), "delayq console") {
		t.Fatalf("/ui/: %d", res.StatusCode)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP = %q", csp)
	}
	for _, a := range []string{"/ui/app.js", "/ui/style.css"} {
		if status, _ := f.do(t, "GET", a, "", ""); status != 200 {
			t.Errorf("%s: %d", a, status)
		}
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = c.Get(f.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/ui/" {
		t.Errorf("/: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if status, _ := f.do(t, "GET", "/ui/api/nothing", "", ""); status != 404 {
		t.Errorf("unknown API: %d", status)
	}
}

func TestTaskStates(t *testing.T) {
	f := newFixture(t, Config{PreviewBytes: 8}, true)
	at := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli()
	ctx := context.Background()
	put := func(tk payload.Task) {
		tk.ID = payload.TaskID(tk.Name)
		if err := f.store.Put(ctx, []payload.Task{tk}); err != nil {
			t.Fatal(err)
		}
	}
	put(payload.Task{Name: "pending", Topic: "orders", ExecAt: at, Key: []byte("k"), Value: []byte("hello, world")})
	put(payload.Task{Name: "done", Topic: "orders", ExecAt: at, Value: []byte{0xff, 0xfe}})
	put(payload.Task{Name: "cancelled", Topic: "orders", ExecAt: at})
	put(payload.Task{Name: "cancelled", ExecAt: at, Cancel: true})
	for _, n := range []string{"pending", "cancelled", "orphan"} {
		f.ix.pending[zset.Entry{ID: payload.TaskID(n), ExecAt: at}] = true
	}
	for _, tc := range []struct{ id, at, state, has string }{
		{"pending", "2030-01-02T15:04:05Z", StatePending, `"text":"hello, w","truncated":true`},
		{"done", "1893596645000", StateDone, `"base64":"//4="`},
		{"cancelled", "1893596645000", StateCancelled, `"cancelled":true`},
		{"orphan", "1893596645000", StateOrphan, `"stored":false`},
		{"never", "1893596645000", StateUnknown, `"pending":false`},
	} {
		t.Run(tc.id, func(t *testing.T) {
			status, out := f.do(t, "GET", "/ui/api/task?id="+tc.id+"&at="+tc.at, "", "")
			if status != 200 || !strings.Contains(out, `"state":"`+tc.state+`"`) || !strings.Contains(out, tc.has) {
				t.Fatalf("%d %s; want state %q and %s", status, out, tc.state, tc.has)
			}
		})
	}
	if status, out := f.do(t, "GET", "/ui/api/task?id=&at=x", "", ""); status != 400 || !strings.Contains(out, "id is required; at") {
		t.Errorf("bad query: %d %s, want both problems", status, out)
	}
}

// "Cancel this task" on a replaced task: its row is under the replace's
// version id, which a cancel by id and due time never names (it marks the
// id's own row there, and the replace stays pending), so the console
// cancels it by id alone and says so. Other tasks, and a replace's old
// due time, are cancelled by id and due time.
func TestCancelReplaced(t *testing.T) {
	f := newFixture(t, Config{Write: true, Token: token}, true)
	ctx := context.Background()
	old := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli()
	now := old + 60_000
	recorded := int64(1_893_000_000_000)
	id := payload.TaskID("r-1")
	version := taskstate.VersionID(id, recorded)
	if err := f.store.Put(ctx, []payload.Task{
		{ID: id, Name: "r-1", Topic: "orders", ExecAt: old},
		{ID: id, Name: "r-1", ExecAt: old, Cancel: true}, // marked by the replace
		{ID: version, Name: "r-1", Topic: "orders", ExecAt: now, Value: []byte("new")},
		{ID: payload.TaskID("p-1"), Name: "p-1", Topic: "orders", ExecAt: now},
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.PutIDs(ctx, []payload.IDWrite{
		{ID: id, Name: "r-1", Submitted: old, At: now, Version: recorded},
		{ID: payload.TaskID("p-1"), Name: "p-1", Submitted: now},
	}); err != nil {
		t.Fatal(err)
	}
	f.ix.pending[zset.Entry{ID: version, ExecAt: now}] = true
	if status, out := f.do(t, "GET", "/ui/api/task?id=r-1", token, ""); status != 200 ||
		!strings.Contains(out, `"replaced":true`) || !strings.Contains(out, `"state":"pending"`) {
		t.Fatalf("task page of the replaced task: %d %s", status, out)
	}
	at := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
	for _, tc := range []struct{ name, body, sent, has string }{
		{"the replace: by id alone", `{"id":"r-1","at":"` + at(now) + `"}`, "r-1 by id alone", `"by_id":true`},
		{"the replaced due time: by id and due time", `{"id":"r-1","at":"` + at(old) + `"}`, "r-1@2030-01-02T15:04:05Z", `"sent":true`},
		{"not replaced: by id and due time", `{"id":"p-1","at":"` + at(now) + `"}`, "p-1@2030-01-02T15:05:05Z", `"sent":true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.cancel.sent = nil
			status, out := f.do(t, "POST", "/ui/api/task/cancel", token, tc.body)
			if status != 200 || !strings.Contains(out, tc.has) {
				t.Fatalf("%d %s, want %s", status, out, tc.has)
			}
			if got := strings.Join(f.cancel.sent, ","); got != tc.sent {
				t.Errorf("sent %q, want %q", got, tc.sent)
			}
		})
	}
}

func TestBucketize(t *testing.T) {
	now := time.Date(2026, 11, 22, 14, 5, 30, 0, time.UTC)
	min := func(m int) int64 { return now.Truncate(time.Minute).Add(time.Duration(m) * time.Minute).UnixMilli() }
	seg := func(start int64, n int64) zset.SegmentCount {
		return zset.SegmentCount{Start: start, End: start + 60000, Pending: n}
	}
	v := bucketize(now, []zset.SegmentCount{
		seg(min(-3), 4),        // overdue
		seg(min(0), 1),         // this minute
		seg(min(59), 2),        // last minute bucket
		seg(min(60), 8),        // beyond the hour, still today
		seg(min(60*24*2), 16),  // the day after tomorrow
		seg(min(60*24*40), 32), // later than 30 days
		seg(min(5), 0),         // empty
	})
	if v.Total != 63 || v.Overdue != 4 || v.Later != 32 || v.Segments != 7 {
		t.Errorf("total %d overdue %d later %d segments %d", v.Total, v.Overdue, v.Later, v.Segments)
	}
	if v.Minutes[0].Pending != 5 || v.Minutes[59].Pending != 2 || len(v.Minutes) != 60 {
		t.Errorf("minutes[0]=%d minutes[59]=%d", v.Minutes[0].Pending, v.Minutes[59].Pending)
	}
	if v.Minutes[0].Start != min(0) {
		t.Errorf("first minute starts %d, want %d", v.Minutes[0].Start, min(0))
	}
	if v.Days[0].Pending != 4+1+2+8 || v.Days[2].Pending != 16 || len(v.Days) != 30 {
		t.Errorf("days[0]=%d days[2]=%d", v.Days[0].Pending, v.Days[2].Pending)
	}
	if got := time.UnixMilli(v.Days[1].Start).UTC(); !got.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day 1 starts %v", got)
	}
}

func TestBacklogCached(t *testing.T) {
	f := newFixture(t, Config{BacklogTTL: time.Hour}, true)
	for range 3 {
		if status, out := f.do(t, "GET", "/ui/api/backlog", "", ""); status != 200 {
			t.Fatalf("%d %s", status, out)
		}
	}
	if f.ix.calls != 1 {
		t.Errorf("Backlog called %d times in one TTL, want 1", f.ix.calls)
	}
}

func TestQuantile(t *testing.T) {
	h := histogram{bounds: []float64{0.1, 1, 10, math.Inf(1)}, counts: []float64{50, 90, 100, 100}, count: 100}
	for _, tc := range []struct{ q, want float64 }{{0.5, 0.1}, {0.25, 0.05}, {0.7, 0.55}, {0.99, 9.1}} {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q%.2f = %v, want %v", tc.q, got, tc.want)
		}
	}
	tail := histogram{bounds: []float64{1, math.Inf(1)}, counts: []float64{0, 5}, count: 5}
	if got := tail.quantile(0.99); got != 1 {
		t.Errorf("all above the last bound: %v, want that bound", got)
	}
	if !math.IsNaN((histogram{}).quantile(0.5)) {
		t.Error("empty histogram: want NaN")
	}
}

func TestOverviewRatesAndProbes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	f := newFixture(t, Config{Now: clock, Window: time.Minute}, true)
	accepted := prometheus.NewCounter(prometheus.CounterOpts{Name: metricAccepted})
	lateness := prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricLateness, Buckets: []float64{0.1, 1, 10}})
	failed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricFailed}, []string{"reason"})
	f.reg.MustRegister(accepted, lateness, failed)
	accepted.Add(100)
	lateness.Observe(5) // before the window
	if status, out := f.do(t, "GET", "/ui/api/overview", "", ""); status != 200 || strings.Contains(out, `"rates"`) {
		t.Fatalf("first sample: %d %s, want no rates yet", status, out)
	}
	now = now.Add(time.Minute)
	accepted.Add(600)
	failed.WithLabelValues("contract").Add(3)
	for range 10 {
		lateness.Observe(0.05)
	}
	status, out := f.do(t, "GET", "/ui/api/overview", "", "")
	for _, want := range []string{`"accepted":10`, `"accepted":700`, `"contract":3`, `"lateness_since":"window"`, `"lateness_p99":0.099`,
		`"name":"hbase","up":false,"error":"connection refused"`, `"name":"redis","up":true`} {
		if !strings.Contains(out, want) {
			t.Errorf("overview lacks %s: %d %s", want, status, out)
		}
	}
}

// The first overview a page asks for already has rates: since the
// console started (its first sample), not "–" until a second refresh.
func TestOverviewRatesOnFirstRequest(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	f := newFixture(t, Config{Now: func() time.Time { return now }, Window: time.Minute}, true)
	accepted := prometheus.NewCounter(prometheus.CounterOpts{Name: metricAccepted})
	f.reg.MustRegister(accepted)
	now = now.Add(5 * time.Minute) // later than 2 windows: kept samples would be gone
	accepted.Add(600)
	status, out := f.do(t, "GET", "/ui/api/overview", "", "")
	for _, want := range []string{`"rates":{`, `"accepted":2,`, `"window":300`} {
		if status != 200 || !strings.Contains(out, want) {
			t.Errorf("first overview lacks %s: %d %s", want, status, out)
		}
	}
}

func TestSamplerBounded(t *testing.T) {
	s := sampler{window: time.Minute}
	at := time.Unix(0, 0)
	for i := range 10_000 {
		s.base(sample{at: at.Add(time.Duration(i) * 100 * time.Millisecond)})
	}
	if n := len(s.kept); n > 26 {
		t.Errorf("kept %d samples, want about 24", n)
	}
}

func TestPreviewCutsWholeRunes(t *testing.T) {
	c := &Console{cfg: Config{PreviewBytes: 4}}
	p := c.preview([]byte("aé€b")) // a(1) é(2) €(3): a cut at 4 splits €
	if p.Text != "aé" || !p.Truncated || p.Len != 7 {
		t.Errorf("preview = %+v", p)
	}
	if p := c.preview(nil); !p.Null {
		t.Errorf("nil = %+v", p)
	}
}

// fakeHealth is delayd's probe state as the console reads it.
type fakeHealth []Status

func (h fakeHealth) Dependencies() []Status { return h }
