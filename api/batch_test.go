package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/find"
)

// SendAll records the batch as one write.
func (f *fakeClient) SendAll(_ context.Context, ms []kafka.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return f.down
	}
	f.sent = append(f.sent, ms...)
	f.batches++
	return nil
}

func batchBody(n int, edit func(i int, task map[string]any)) string {
	tasks := make([]map[string]any, n)
	for i := range tasks {
		tasks[i] = map[string]any{"topic": "orders", "id": fmt.Sprintf("b-%d", i), "after": "1h", "value": "v"}
		if edit != nil {
			edit(i, tasks[i])
		}
	}
	b, _ := json.Marshal(map[string]any{"tasks": tasks})
	return string(b)
}

func TestBatch(t *testing.T) {
	srv, f := newServer(t, Config{}, nil)
	code, out := do(t, srv, "POST", "/v1/tasks:batch", batchBody(MaxBatch, nil))
	if code != http.StatusCreated {
		t.Fatalf("batch of %d: %d %v", MaxBatch, code, out)
	}
	if len(f.sent) != MaxBatch || f.batches != 1 {
		t.Fatalf("%d messages in %d writes, want %d in 1", len(f.sent), f.batches, MaxBatch)
	}
	tasks := out["tasks"].([]any)
	if len(tasks) != MaxBatch || out["count"] != float64(MaxBatch) {
		t.Fatalf("answer lists %d tasks (count %v), want %d", len(tasks), out["count"], MaxBatch)
	}
	for i, m := range f.sent {
		id := fmt.Sprintf("b-%d", i)
		if header(m, payload.HeaderID) != id || tasks[i].(map[string]any)["id"] != id {
			t.Fatalf("task %d: written %q, answered %v; want %s in request order", i, header(m, payload.HeaderID), tasks[i], id)
		}
	}
}

func TestBatchRefusedWhole(t *testing.T) {
	srv, f := newServer(t, Config{}, nil)
	body := batchBody(10, func(i int, task map[string]any) {
		switch i {
		case 3:
			delete(task, "topic")
		case 7:
			task["topic"] = "delay-scan"
		}
	})
	code, out := do(t, srv, "POST", "/v1/tasks:batch", body)
	if code != http.StatusBadRequest || len(f.sent) != 0 {
		t.Fatalf("batch with 2 bad tasks: %d %v, %d written; want 400, none", code, out, len(f.sent))
	}
	refused := out["refused"].([]any)
	if len(refused) != 2 || refused[0].(map[string]any)["index"] != float64(3) || refused[1].(map[string]any)["index"] != float64(7) {
		t.Fatalf("refused %v, want indexes 3 and 7", refused)
	}
	if msg := out["error"].(string); !strings.Contains(msg, "2 of 10") || !strings.Contains(msg, "tasks[3]") || !strings.Contains(refused[1].(map[string]any)["error"].(string), "delay-scan") {
		t.Errorf("error %q, refused %v: want the count, the first index and each reason", msg, refused)
	}
	for _, c := range []struct{ name, body string }{
		{"empty", `{"tasks":[]}`},
		{"too many", batchBody(MaxBatch+1, nil)},
		{"not a list", `{"tasks":{}}`},
	} {
		if code, out := do(t, srv, "POST", "/v1/tasks:batch", c.body); code != http.StatusBadRequest {
			t.Errorf("%s: %d %v, want 400", c.name, code, out)
		}
	}
	f.down = errors.New("kafka down")
	if code, _ := do(t, srv, "POST", "/v1/tasks:batch", batchBody(2, nil)); code != http.StatusServiceUnavailable {
		t.Errorf("batch while Kafka is down: %d, want 503", code)
	}
}

// listStates answers State and List from a memory store.
type listStates struct {
	fakeStates
	m *payload.Memory
}

func (l listStates) List(ctx context.Context, q find.Query) (find.Page, error) {
	return find.List(ctx, l.m, q, time.Now())
}

func TestList(t *testing.T) {
	m := payload.NewMemory()
	at := time.Now().Add(time.Hour).UnixMilli()
	var tasks []payload.Task
	for i := range 25 {
		name := fmt.Sprintf("l-%02d", i)
		topic := "orders"
		if i%5 == 0 {
			topic = "mail"
		}
		tasks = append(tasks, payload.Task{ID: payload.TaskID(name), Name: name, Topic: topic, ExecAt: at + int64(i),
			Key: []byte(fmt.Sprintf("k%d", i%2)), Value: []byte("12345"), Headers: []payload.Header{{Key: "trace", Value: []byte("x")}}})
	}
	if err := m.Put(context.Background(), tasks); err != nil {
		t.Fatal(err)
	}
	srv, _ := newServer(t, Config{Token: "list-token-0123456789"}, listStates{m: m})
	auth := []string{"Authorization", "Bearer list-token-0123456789"}
	if code, _ := do(t, srv, "GET", "/v1/tasks", ""); code != http.StatusUnauthorized {
		t.Fatalf("list without the token: %d, want 401", code)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		code, out := do(t, srv, "GET", "/v1/tasks?topic=orders&key=k1&limit=3&cursor="+cursor, "", auth...)
		if code != http.StatusOK || pages > 10 {
			t.Fatalf("page %d: %d %v", pages, code, out)
		}
		for _, x := range out["tasks"].([]any) {
			lt := x.(map[string]any)
			if lt["state"] != "pending" || lt["topic"] != "orders" || lt["value_bytes"] != float64(5) || lt["headers"].(map[string]any)["trace"] != "x" {
				t.Errorf("listed %v", lt)
			}
			got = append(got, lt["id"].(string))
		}
		next, _ := out["next"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	want := "[l-01 l-03 l-07 l-09 l-11 l-13 l-17 l-19 l-21 l-23]"
	if fmt.Sprint(got) != want {
		t.Errorf("paged %v, want %s", got, want)
	}
	for _, q := range []string{"state=late", "limit=0", "limit=1001", "from=yesterday", "cursor=xyz", "from=10&to=5"} {
		if code, out := do(t, srv, "GET", "/v1/tasks?"+q, "", auth...); code != http.StatusBadRequest {
			t.Errorf("?%s: %d %v, want 400", q, code, out)
		}
	}
	srv, _ = newServer(t, Config{}, nil)
	if code, _ := do(t, srv, "GET", "/v1/tasks", ""); code != http.StatusNotImplemented {
		t.Errorf("list without a store: %d, want 501", code)
	}
}
