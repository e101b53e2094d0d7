package payload

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// Memory is an in-process Store for the embedded mode and tests. It keeps
// rows as the HBase store does (task columns and cancel marker apart) but
// never expires them. It is safe for concurrent use.
type Memory struct {
	mu   sync.RWMutex
	rows map[Ref]*memRow
	ids  map[uint64]IDState // id rows (idrow.go)
}

type memRow struct {
	task       *Task  // task columns, nil until a task put
	cancelled  bool   // cancel marker present
	cancelName string // the marker's value
}

var (
	_ Store   = (*Memory)(nil)
	_ IDStore = (*Memory)(nil)
)

// NewMemory returns an empty Memory store.
func NewMemory() *Memory {
	return &Memory{rows: make(map[Ref]*memRow), ids: make(map[uint64]IDState)}
}

// Put stores copies of tasks; a task with Cancel set stores only the cancel
// marker.
func (m *Memory) Put(ctx context.Context, tasks []Task) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, t := range tasks {
		if t.ExecAt < 0 {
			return fmt.Errorf("payload: task %q: negative exec_at %d", t.Name, t.ExecAt)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range tasks {
		r := m.rows[t.Ref()]
		if r == nil {
			r = &memRow{}
			m.rows[t.Ref()] = r
		}
		if t.Cancel {
			r.cancelled, r.cancelName = true, t.Name
			continue
		}
		c := t.clone()
		c.Cancel = false
		if len(c.Headers) == 0 {
			c.Headers = nil
		}
		r.task = &c
	}
	return nil
}

// Get returns copies of the rows at refs, nil where there is none.
func (m *Memory) Get(ctx context.Context, refs []Ref) ([]*Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]*Task, len(refs))
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, ref := range refs {
		if r := m.rows[ref]; r != nil {
			t := r.read(ref)
			out[i] = &t
		}
	}
	return out, nil
}

// Scan calls fn for each row with from <= ExecAt < to in (ExecAt, ID) order,
// on a snapshot taken when it starts.
func (m *Memory) Scan(ctx context.Context, from, to int64, fn func(Task) error) error {
	return m.ScanFrom(ctx, Ref{ExecAt: from}, to, fn)
}

// ScanFrom is Scan starting at the row from (included): every row with
// (ExecAt, ID) >= (from.ExecAt, from.ID) and ExecAt < to.
func (m *Memory) ScanFrom(ctx context.Context, from Ref, to int64, fn func(Task) error) error {
	var tasks []Task
	m.mu.RLock()
	for ref, r := range m.rows {
		if !ref.Before(from) && ref.ExecAt < to {
			tasks = append(tasks, r.read(ref))
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(tasks, func(a, b Task) int {
		return cmp.Or(cmp.Compare(a.ExecAt, b.ExecAt), cmp.Compare(a.ID, b.ID))
	})
	for _, t := range tasks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

// PutIDs writes id rows.
func (m *Memory) PutIDs(ctx context.Context, writes []IDWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range writes {
		s := m.ids[w.ID].Apply(w)
		m.ids[w.ID] = s
	}
	return nil
}

// GetIDs reads id rows.
func (m *Memory) GetIDs(ctx context.Context, ids []uint64) ([]IDState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]IDState, len(ids))
	m.mu.RLock()
	defer m.mu.RUnlock()
	for i, id := range ids {
		out[i] = m.ids[id]
	}
	return out, nil
}

// Len returns the number of rows (tasks and cancel markers).
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.rows)
}

// read returns a deep copy of the row as a Task.
func (r *memRow) read(ref Ref) Task {
	var t Task
	if r.task != nil {
		t = r.task.clone()
	} else {
		t = Task{Name: r.cancelName}
	}
	t.ID, t.ExecAt = ref.ID, ref.ExecAt
	t.Cancel = r.cancelled
	return t
}
