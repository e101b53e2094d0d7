package payload_test

import (
	"testing"

	"github.com/delayq/delayq/payload"
	"github.com/delayq/delayq/payload/payloadtest"
)

func TestMemory(t *testing.T) {
	payloadtest.Run(t, func(*testing.T) payload.Store { return payload.NewMemory() })
}

func TestMemoryCopies(t *testing.T) {
	m := payload.NewMemory()
	tk := payload.Task{ID: 1, Name: "1", Topic: "t", ExecAt: 5, Key: []byte("k")}
	if err := m.Put(t.Context(), []payload.Task{tk}); err != nil {
		t.Fatal(err)
	}
	tk.Key[0] = 'x'
	got, _ := m.Get(t.Context(), []payload.Ref{tk.Ref()})
	if string(got[0].Key) != "k" {
		t.Error("Put kept the caller's slice")
	}
	got[0].Key[0] = 'y'
	again, _ := m.Get(t.Context(), []payload.Ref{tk.Ref()})
	if string(again[0].Key) != "k" {
		t.Error("Get returned the stored slice")
	}
	if m.Len() != 1 {
		t.Errorf("Len = %d, want 1", m.Len())
	}
}
