package tenant

import (
	"strconv"
	"testing"
)

// fakeBase stands for payload.TaskID (external_test.go uses the real one).
func fakeBase(name string) uint64 { return uint64(len(name)) }

func TestID(t *testing.T) {
	for _, c := range []struct {
		name   string
		t1, n1 string
		t2, n2 string
		same   bool
	}{
		{"default keeps today's id", Default, "order-1", Default, "order-1", true},
		{"same tenant, same name", "a", "order-1", "a", "order-1", true},
		{"same name, two tenants", "a", "order-1", "b", "order-1", false},
		{"same name, a tenant and default", "a", "order-1", Default, "order-1", false},
		{"names differ", "a", "order-1", "a", "order-2", false},
		{"the separator: tenant a-b name c vs tenant a name b-c", "a-b", "c", "a", "b-c", false},
		{"a decimal name is hashed in a tenant", "a", "42", "b", "42", false},
	} {
		id1, id2 := ID(c.t1, c.n1, fakeBase), ID(c.t2, c.n2, fakeBase)
		if (id1 == id2) != c.same {
			t.Errorf("%s: ID(%q, %q) = %d, ID(%q, %q) = %d", c.name, c.t1, c.n1, id1, c.t2, c.n2, id2)
		}
	}
	if got := ID(Default, "order-1", fakeBase); got != 7 {
		t.Errorf("ID(default) = %d, want base's 7", got)
	}
	// Pinned (computed apart, with Python's hashlib): the id is stored;
	// it must never change.
	for _, c := range []struct {
		tenant, name string
		id           uint64
	}{{"a", "order-1", 5256097692569723981}, {"team-42", "42", 147304449630706654}} {
		if got := ID(c.tenant, c.name, fakeBase); got != c.id {
			t.Errorf("ID(%q, %q) = %d, want %d", c.tenant, c.name, got, c.id)
		}
	}
}

// TestIDSpread: a tenant's ids are 63-bit and distinct over many names
// and tenants (no collision among 200,000).
func TestIDSpread(t *testing.T) {
	seen := make(map[uint64]string, 200_000)
	for _, tn := range []string{"a", "b", "team-42", "x"} {
		for i := range 50_000 {
			name := strconv.Itoa(i)
			id := ID(tn, name, nil)
			if id > maxID {
				t.Fatalf("ID(%q, %q) = %d over 63 bits", tn, name, id)
			}
			if prev, dup := seen[id]; dup {
				t.Fatalf("ID(%q, %q) = ID of %s", tn, name, prev)
			}
			seen[id] = tn + "/" + name
		}
	}
}

func TestOwns(t *testing.T) {
	for _, c := range []struct {
		owner, caller string
		ok            bool
	}{
		{"a", "a", true}, {"a", "b", false}, {Default, "a", false}, {"a", Default, false}, {Default, Default, true},
	} {
		if Owns(c.owner, c.caller) != c.ok {
			t.Errorf("Owns(%q, %q) = %v", c.owner, c.caller, !c.ok)
		}
	}
}
