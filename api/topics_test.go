package api

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/delayq/delayq/topicctl"
)

// topicRoutes are the routes of topics.go (TestOpenAPIMatchesRoutes).
var topicRoutes = []string{
	"GET /v1/topics",
	"POST /v1/topics/{topic}/pause", "POST /v1/topics/{topic}/resume",
	"PUT /v1/topics/{topic}/rate", "DELETE /v1/topics/{topic}/rate",
	"PUT /v1/topics/{topic}/expire-after", "DELETE /v1/topics/{topic}/expire-after",
}

func topicsIn(t *testing.T, m map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	ts, _ := m["topics"].([]any)
	for _, x := range ts {
		tm := x.(map[string]any)
		out[tm["topic"].(string)] = tm
	}
	return out
}

// The topic routes change topicctl's state in Redis and answer the
// topics after the change; bad input is a 400 that changes nothing.
func TestTopicRoutes(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	tc, err := topicctl.New(rdb, topicctl.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := newServer(t, Config{Topics: tc}, nil)

	code, m := do(t, srv, "POST", "/v1/topics/orders/pause", "")
	if ts := topicsIn(t, m); code != 200 || ts["orders"]["state"] != "paused" {
		t.Fatalf("pause: %d %v", code, m)
	}
	code, m = do(t, srv, "PUT", "/v1/topics/mail/rate", `{"per_second":500}`)
	if ts := topicsIn(t, m); code != 200 || ts["mail"]["state"] != "limited" || ts["mail"]["per_second"] != 500.0 {
		t.Fatalf("rate: %d %v", code, m)
	}
	code, m = do(t, srv, "PUT", "/v1/topics/mail/expire-after", `{"expire_after":"10m"}`)
	if ts := topicsIn(t, m); code != 200 || ts["mail"]["expire_after"] != "10m0s" {
		t.Fatalf("expire-after: %d %v", code, m)
	}
	code, m = do(t, srv, "POST", "/v1/topics/*/pause", "")
	if ts := topicsIn(t, m); code != 200 || m["all_paused"] != true || ts["mail"]["state"] != "paused" {
		t.Fatalf("pause all: %d %v", code, m)
	}
	code, m = do(t, srv, "POST", "/v1/topics/*/resume", "")
	if ts := topicsIn(t, m); code != 200 || m["all_paused"] != false || ts["orders"] != nil || ts["mail"]["state"] != "limited" {
		t.Fatalf("resume all: %d %v", code, m)
	}
	if code, m = do(t, srv, "DELETE", "/v1/topics/mail/rate", ""); code != 200 || topicsIn(t, m)["mail"]["state"] != "active" {
		t.Fatalf("delete rate: %d %v", code, m)
	}
	for _, bad := range []struct{ method, path, body string }{
		{"POST", "/v1/topics/delay-input/pause", ""},
		{"POST", "/v1/topics/bad%20name/pause", ""},
		{"PUT", "/v1/topics/mail/rate", `{"per_second":-1}`},
		{"PUT", "/v1/topics/mail/rate", `{}`},
		{"PUT", "/v1/topics/*/rate", `{"per_second":5}`},
		{"PUT", "/v1/topics/mail/expire-after", `{"expire_after":"soon"}`},
	} {
		if code, m := do(t, srv, bad.method, bad.path, bad.body); code != 400 || m["error"] == "" {
			t.Errorf("%s %s %s: %d %v, want 400 with a reason", bad.method, bad.path, bad.body, code, m)
		}
	}
	if code, m = do(t, srv, "GET", "/v1/topics", ""); code != 200 || len(topicsIn(t, m)) != 1 {
		t.Fatalf("list: %d %v (want mail only: its expiry)", code, m)
	}

	none, _ := newServer(t, Config{}, nil)
	if code, _ := do(t, none, "GET", "/v1/topics", ""); code != 501 {
		t.Errorf("without controls: %d, want 501", code)
	}
}
