package console

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/topicctl"
)

// The topics API reads in any mode; its actions need --console-write and
// the token like every action, and refuse a name that is no business
// topic.
func TestTopicsAPI(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	tc, err := topicctl.New(rdb, topicctl.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const token = "topics-test-token-0123456789"
	serve := func(cfg Config, b Backends) *fixture {
		cfg.Gatherer = prometheus.NewRegistry()
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.Attach(b)
		f := &fixture{srv: httptest.NewServer(c.Handler())}
		t.Cleanup(f.srv.Close)
		return f
	}
	ro := serve(Config{}, Backends{Topics: tc})
	if status, out := ro.do(t, "POST", "/ui/api/topics/pause", "", `{"topic":"orders"}`); status != 403 {
		t.Errorf("read-only pause: %d %s", status, out)
	}
	rw := serve(Config{Write: true, Token: token}, Backends{Topics: tc})
	if status, _ := rw.do(t, "POST", "/ui/api/topics/pause", "", `{"topic":"orders"}`); status != 401 {
		t.Errorf("pause without the token: %d", status)
	}
	status, out := rw.do(t, "POST", "/ui/api/topics/pause", token, `{"topic":"orders"}`)
	if status != 200 || !strings.Contains(out, `"state":"paused"`) {
		t.Fatalf("pause: %d %s", status, out)
	}
	if status, out = rw.do(t, "POST", "/ui/api/topics/rate", token, `{"topic":"mail","per_second":20}`); status != 200 || !strings.Contains(out, `"per_second":20`) {
		t.Fatalf("rate: %d %s", status, out)
	}
	if status, out = ro.do(t, "GET", "/ui/api/topics", "", ""); status != 200 || !strings.Contains(out, `"topic":"orders"`) || !strings.Contains(out, `"state":"limited"`) {
		t.Errorf("list: %d %s", status, out)
	}
	for _, body := range []string{`{"topic":"delay-failed"}`, `{"topic":""}`, `{"topic":"mail","per_second":-1}`} {
		path := "/ui/api/topics/pause"
		if strings.Contains(body, "per_second") {
			path = "/ui/api/topics/rate"
		}
		if status, out := rw.do(t, "POST", path, token, body); status != 400 {
			t.Errorf("%s %s: %d %s, want 400", path, body, status, out)
		}
	}
	none := serve(Config{}, Backends{})
	if status, _ := none.do(t, "GET", "/ui/api/topics", "", ""); status != 501 {
		t.Errorf("without controls: %d, want 501", status)
	}
}
