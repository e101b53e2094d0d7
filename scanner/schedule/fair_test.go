package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/delayq/delayq/internal/modeltest"
)

// fairTask is a ready task of a tenant in the fair model.
type fairTask struct {
	tenant string
	exec   int64
	seq    int // arrival order within (tenant, exec): ties keep it
}

func byDue(a, b fairTask) int {
	if a.exec != b.exec {
		return int(a.exec - b.exec)
	}
	if a.tenant != b.tenant {
		return strings.Compare(a.tenant, b.tenant)
	}
	return a.seq - b.seq
}

// fairSim releases the tasks of several tenants, Fair's budget a step,
// and checks each step against the fair-release invariants.
type fairSim struct {
	rng     *rand.Rand
	tenants []string
	budget  int
	ready   []fairTask // due by now, global due order
	future  []fairTask // not due yet
	last    string
	waited  map[string]int // steps a tenant has had ready tasks and no pick
	out     map[string][]fairTask
	errs    []string
	pick    func([]fairTask, int, string) ([]fairTask, string)
}

func (s *fairSim) errorf(step int, format string, args ...any) {
	s.errs = append(s.errs, fmt.Sprintf("step %d: ", step)+fmt.Sprintf(format, args...))
}

// step releases at now: the tasks due by now are ready, Fair picks.
func (s *fairSim) step(i int, now int64) {
	k := 0
	for k < len(s.future) && s.future[k].exec <= now {
		k++
	}
	s.ready = append(s.ready, s.future[:k]...)
	s.future = s.future[k:] // due after every task ready before: ready stays in due order
	per := map[string][]fairTask{}
	for _, t := range s.ready {
		per[t.tenant] = append(per[t.tenant], t)
	}
	picked, last := s.pick(s.ready, s.budget, s.last)
	s.last = last
	got := map[string][]fairTask{}
	for _, t := range picked {
		got[t.tenant] = append(got[t.tenant], t)
	}
	s.checkStep(i, per, got, len(picked))
	taken := map[fairTask]bool{}
	for _, t := range picked {
		taken[t] = true
		s.out[t.tenant] = append(s.out[t.tenant], t)
	}
	s.ready = slices.DeleteFunc(s.ready, func(t fairTask) bool { return taken[t] })
}

func (s *fairSim) checkStep(i int, per, got map[string][]fairTask, picked int) {
	if want := min(s.budget, len(s.ready)); picked != want {
		s.errorf(i, "picked %d of %d ready with budget %d", picked, len(s.ready), s.budget)
	}
	share := s.budget / max(1, len(per))
	for tn, r := range per {
		g := got[tn]
		if len(g) > len(r) || !slices.Equal(g, r[:len(g)]) {
			s.errorf(i, "tenant %s: picks are not the first of its ready tasks (due order)", tn)
		}
		if len(g) < min(len(r), share) {
			s.errorf(i, "tenant %s: %d picked of %d ready; its share is %d of budget %d over %d tenants",
				tn, len(g), len(r), share, s.budget, len(per))
		}
		if len(g) == 0 {
			s.waited[tn]++
		} else {
			s.waited[tn] = 0
		}
		if bound := (len(s.tenants) + s.budget - 1) / s.budget; s.waited[tn] > bound {
			s.errorf(i, "tenant %s: ready for %d steps without a pick (bound %d)", tn, s.waited[tn], bound)
		}
	}
}

// generate: tenants with a few tasks spread over the due times, one or
// two of them with a burst of many tasks due at the same instant.
func (s *fairSim) generate() {
	n := 2 + s.rng.IntN(6)
	for k := range n {
		s.tenants = append(s.tenants, fmt.Sprintf("t%d", k))
	}
	s.budget = 1 + s.rng.IntN(40)
	seq := 0
	add := func(tn string, exec int64) {
		s.future = append(s.future, fairTask{tenant: tn, exec: exec, seq: seq})
		seq++
	}
	for _, tn := range s.tenants {
		for range s.rng.IntN(30) {
			add(tn, int64(s.rng.IntN(20)))
		}
	}
	for range 1 + s.rng.IntN(2) {
		tn, at := s.tenants[s.rng.IntN(n)], int64(s.rng.IntN(10))
		for range 100 + s.rng.IntN(300) {
			add(tn, at)
		}
	}
	slices.SortFunc(s.future, byDue)
	s.waited, s.out = map[string]int{}, map[string][]fairTask{}
}

func (s *fairSim) run() {
	total := len(s.future)
	steps := 0
	for now := int64(0); len(s.future) > 0 || len(s.ready) > 0; now++ {
		s.step(int(now), now)
		steps++
		if steps > 20+total/s.budget+1 {
			s.errorf(int(now), "%d tasks still ready: starved", len(s.ready))
			return
		}
	}
	for tn, o := range s.out {
		if !slices.IsSortedFunc(o, byDue) {
			s.errorf(steps, "tenant %s: released out of due order", tn)
		}
	}
}

func fairPick(ready []fairTask, budget int, after string) ([]fairTask, string) {
	return Fair(ready, func(t fairTask) string { return t.tenant }, budget, after)
}

// TestFairModel runs 200 seeded schedules of 2 to 7 tenants, a few tasks
// each and one or two bursts of 100 to 400 tasks due at one instant,
// released by Fair at a budget of 1 to 40 a step, and checks every step:
// all the budget is used while tasks are ready, within a tenant the picks
// are its first ready tasks (due order), each tenant with ready tasks gets
// at least min(its ready, budget / tenants ready), none waits more than
// ceil(tenants / budget) steps for a pick; and at the end everything is
// released, each tenant's in due order.
func TestFairModel(t *testing.T) {
	modeltest.Run(t, 200, func(seed uint64) error {
		s := &fairSim{rng: rand.New(rand.NewPCG(seed, 1)), pick: fairPick}
		s.generate()
		s.run()
		if len(s.errs) == 0 {
			return nil
		}
		return fmt.Errorf("%d tenants, budget %d:\n%s", len(s.tenants), s.budget, strings.Join(s.errs[:min(5, len(s.errs))], "\n"))
	})
}

// TestFairBurst: tenant a's burst of 10,000 tasks due at one instant and
// tenant b's 5 due at the same instant: b's 5 go out in the first step at
// a budget of 100, and all of a's go out, in due order, afterwards.
func TestFairBurst(t *testing.T) {
	var ready []fairTask
	for i := range 10_000 {
		ready = append(ready, fairTask{tenant: "a", exec: 1000, seq: i})
	}
	for i := range 5 {
		ready = append(ready, fairTask{tenant: "b", exec: 1000, seq: 10_000 + i})
	}
	slices.SortFunc(ready, byDue) // a's before b's: global due order puts b last
	picked, _ := fairPick(ready, 100, "")
	nb := 0
	for _, p := range picked {
		if p.tenant == "b" {
			nb++
		}
	}
	if len(picked) != 100 || nb != 5 {
		t.Fatalf("first step picked %d, %d of them b's; want 100 with all 5 of b's", len(picked), nb)
	}
}

func TestShares(t *testing.T) {
	for _, c := range []struct {
		name   string
		ready  []int
		budget int
		after  string
		want   []int
		last   string
	}{
		{"equal", []int{10, 10}, 10, "", []int{5, 5}, ""},
		{"a small group leaves its part", []int{1000, 2, 1000}, 12, "", []int{5, 2, 5}, ""},
		{"all fit", []int{3, 2}, 10, "", []int{3, 2}, ""},
		{"odd slot after the cursor", []int{10, 10, 10}, 4, "a", []int{1, 2, 1}, "b"},
		{"odd slots wrap", []int{10, 10, 10}, 5, "b", []int{2, 1, 2}, "a"},
		{"fewer slots than groups", []int{10, 10, 10}, 1, "c", []int{1, 0, 0}, "a"},
		{"empty groups get none", []int{0, 10, 0}, 3, "", []int{0, 3, 0}, ""},
		{"no budget", []int{10}, 0, "x", []int{0}, "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			names := []string{"a", "b", "c"}[:len(c.ready)]
			got, last := Shares(names, func(g string) int { return c.ready[g[0]-'a'] }, c.budget, c.after)
			if !slices.Equal(got, c.want) || last != c.last {
				t.Fatalf("Shares(%v, %d, after %q) = %v, %q; want %v, %q", c.ready, c.budget, c.after, got, last, c.want, c.last)
			}
		})
	}
}

func TestFairOrder(t *testing.T) {
	ready := []fairTask{{"b", 1, 0}, {"a", 2, 1}, {"a", 3, 2}, {"b", 4, 3}, {"a", 5, 4}, {"c", 6, 5}}
	for _, c := range []struct {
		budget int
		want   []fairTask
	}{
		{0, nil},
		{3, []fairTask{{"b", 1, 0}, {"a", 2, 1}, {"c", 6, 5}}},
		{4, []fairTask{{"b", 1, 0}, {"a", 2, 1}, {"a", 3, 2}, {"c", 6, 5}}},
		{10, ready},
	} {
		got, _ := fairPick(ready, c.budget, "")
		if !slices.Equal(got, c.want) {
			t.Errorf("budget %d: %v, want %v", c.budget, got, c.want)
		}
	}
}
