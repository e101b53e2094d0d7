package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/delayq/delayq/daemon"
	"github.com/delayq/delayq/e2e/e2etest"
)

// TestBatchAndList drives POST /v1/tasks:batch and GET /v1/tasks on the
// real stack (HBase as the store the listing scans): 1,000 tasks in one
// request are each delivered once; 10,000 pending tasks, submitted 1,000
// a request, page out of the listing each once, in due order.
func TestBatchAndList(t *testing.T) {
	const token = "e2e-list-token-0123456789"
	t.Setenv("DELAYQ_API_TOKEN", token)
	e := newEnv(t)
	apiAddr := e2etest.FreePort(t)
	e.Start("api", "--roles", "ingest,dispatcher,scanner,api", "--api", apiAddr)
	batchAndList(t, e, "http://"+apiAddr, token)
}

// TestEmbeddedBatchAndList: the same in embedded mode, where the memory
// store answers the listing.
func TestEmbeddedBatchAndList(t *testing.T) {
	apiAddr := e2etest.FreePort(t)
	e := embeddedEnv(t, func(c *daemon.Config) {
		c.Roles = append(slices.Clone(daemon.AllRoles), daemon.RoleAPI)
		c.API = apiAddr
	})
	batchAndList(t, e, "http://"+apiAddr, "")
}

func batchAndList(t *testing.T, e *e2etest.Env, base, token string) {
	const (
		batch   = 1000
		pending = 10_000
	)
	call := func(method, path string, body any, v any) int {
		t.Helper()
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, base+path, r)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %.200q", method, path, res.StatusCode, raw)
		}
		return res.StatusCode
	}
	e2etest.WaitFor(t, 30*time.Second, "the API to listen", func() bool {
		res, err := http.Get(base + "/v1/openapi.yaml")
		if err == nil {
			res.Body.Close()
		}
		return err == nil
	})
	topic, later := e.Topic("batch"), e.Topic("later")
	out := e.Collect(topic)
	type task = map[string]any
	submit := func(tasks []task) {
		t.Helper()
		var a struct {
			Count int    `json:"count"`
			Error string `json:"error"`
		}
		if code := call("POST", "/v1/tasks:batch", map[string]any{"tasks": tasks}, &a); code != http.StatusCreated || a.Count != len(tasks) {
			t.Fatalf("POST /v1/tasks:batch of %d: %d, count %d, %s", len(tasks), code, a.Count, a.Error)
		}
	}

	// 1,000 tasks in one request, due within 2 s of each other.
	start := time.Now()
	due := start.Add(4 * time.Second)
	var tasks []task
	for i := range batch {
		tasks = append(tasks, task{"topic": topic, "id": fmt.Sprintf("%s-b%04d", e.Run, i),
			"at": due.Add(time.Duration(i) * 2 * time.Millisecond).UnixMilli(), "value": fmt.Sprint(i)})
	}
	submit(tasks)
	t.Logf("batch of %d answered in %v", batch, time.Since(start).Round(time.Millisecond))

	// 10,000 pending tasks, due in an hour and a half over ten minutes.
	far := time.Now().Add(90 * time.Minute).UnixMilli()
	want := map[string]bool{}
	for b := range pending / batch {
		tasks = tasks[:0]
		for i := range batch {
			n := b*batch + i
			id := fmt.Sprintf("%s-p%05d", e.Run, n)
			want[id] = true
			tasks = append(tasks, task{"topic": later, "id": id, "key": fmt.Sprintf("k%d", n%10), "at": far + int64(n)*60})
		}
		submit(tasks)
	}

	// Each of the 1,000 delivered once. The waits are bounds for a loaded
	// machine (a busy loop on one of two cores, other packages beside).
	e2etest.WaitFor(t, 120*time.Second, "the batch delivered", func() bool { return out.Len() >= batch })
	time.Sleep(3 * time.Second) // a duplicate would show up here
	got := map[string]int{}
	for _, r := range out.Snapshot() {
		got[e2etest.Header(r.Msg, "delay-id")]++
	}
	if len(got) != batch || out.Len() != batch {
		t.Errorf("batch: %d deliveries of %d ids, want %d once each", out.Len(), len(got), batch)
	}

	// Paging: once ingest stored them all, every page together holds the
	// 10,000 once each, in due order.
	type page struct {
		Tasks []struct {
			ID   string `json:"id"`
			AtMs int64  `json:"at_ms"`
		} `json:"tasks"`
		Next     string `json:"next"`
		Examined int    `json:"examined"`
	}
	list := func() (ids []string, ats []int64, pages int) {
		cursor := ""
		for {
			q := url.Values{"topic": {later}, "limit": {"999"}, "cursor": {cursor}}
			var p page
			if code := call("GET", "/v1/tasks?"+q.Encode(), nil, &p); code != http.StatusOK {
				t.Fatalf("GET /v1/tasks: %d", code)
			}
			pages++
			for _, x := range p.Tasks {
				ids, ats = append(ids, x.ID), append(ats, x.AtMs)
			}
			if p.Next == "" || pages > 100 {
				return ids, ats, pages
			}
			cursor = p.Next
		}
	}
	var (
		ids   []string
		ats   []int64
		pages int
	)
	e2etest.WaitFor(t, 180*time.Second, "10,000 tasks listed", func() bool {
		ids, ats, pages = list()
		return len(ids) >= pending
	})
	listStart := time.Now()
	ids, ats, pages = list()
	t.Logf("listed %d tasks in %d pages in %v", len(ids), pages, time.Since(listStart).Round(time.Millisecond))
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("%s listed %d times, want once", id, seen[id])
		}
	}
	if len(ids) != pending || len(seen) != pending {
		t.Errorf("paging listed %d rows, %d distinct; want %d", len(ids), len(seen), pending)
	}
	if !slices.IsSorted(ats) {
		t.Error("listing not in due order")
	}
	// A key prefix narrows it: k3 is one task in ten.
	var p page
	if code := call("GET", "/v1/tasks?"+url.Values{"topic": {later}, "key": {"k3"}, "limit": {"1000"}}.Encode(), nil, &p); code != http.StatusOK || len(p.Tasks) != pending/10 {
		t.Errorf("key prefix k3: %d, %d tasks; want %d", code, len(p.Tasks), pending/10)
	}
}
