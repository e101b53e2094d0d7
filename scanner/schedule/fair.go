package schedule

// Fair picks what a step releases of the ready tasks of several tenants
// (or any groups: group names them), up to budget, in fair shares across
// the groups (issue 39's fair release; the scanner does not call it yet).
//
// ready holds the tasks ready in the step, in due order within each group
// (lowest exec_at first; across groups any order). Each group gets its
// share by water-filling, the round robin of a deficit round robin with
// equal quanta: budget / groups each, the part a group with fewer ready
// tasks leaves going to the others in the same way, until the budget or
// the tasks run out. What is left, fewer slots than groups, goes one each
// to the groups next in name order after after (cyclic), the group that
// had the last such slot; Fair returns the new one for the next step. So:
//
//   - within a group due order holds: its picks are a prefix of its ready
//     tasks;
//   - each group with ready tasks gets at least min(its ready tasks,
//     budget / groups), however many another group has (a burst does not
//     hold back another group's tasks);
//   - no budget is left unused while a task is ready;
//   - nothing starves: with fewer slots than groups, the odd slots go
//     round the groups in name order, step after step.
//
// The picks are returned in the order of ready (with ready in global due
// order, they go out in due order).
func Fair[T any](ready []T, group func(T) string, budget int, after string) (picked []T, last string) {
	if budget <= 0 || len(ready) == 0 {
		return nil, after
	}
	if len(ready) <= budget {
		return ready, after
	}
	members := map[string][]int{}
	for i, t := range ready {
		g := group(t)
		members[g] = append(members[g], i)
	}
	names := make([]string, 0, len(members))
	for g := range members {
		names = append(names, g)
	}
	sortNames(names)
	shares, last := Shares(names, func(g string) int { return len(members[g]) }, budget, after)
	take := make([]bool, len(ready))
	for k, g := range names {
		for _, i := range members[g][:shares[k]] {
			take[i] = true
		}
	}
	picked = make([]T, 0, budget)
	for i, t := range ready {
		if take[i] {
			picked = append(picked, t)
		}
	}
	return picked, last
}

// Shares divides budget among the groups names (sorted) with ready(g)
// tasks each as Fair does, and returns each group's share and the last
// group that had an odd slot (after when none had).
func Shares(names []string, ready func(string) int, budget int, after string) ([]int, string) {
	shares := make([]int, len(names))
	left := make([]int, len(names))
	active := 0
	for k, g := range names {
		left[k] = ready(g)
		if left[k] > 0 {
			active++
		}
	}
	for budget > 0 && active > 0 && budget >= active {
		each := budget / active
		for k := range names {
			n := min(each, left[k])
			if n == 0 {
				continue
			}
			shares[k] += n
			left[k] -= n
			budget -= n
			if left[k] == 0 {
				active--
			}
		}
	}
	if budget == 0 || active == 0 {
		return shares, after
	}
	// Fewer slots than groups: one each, in name order after after.
	start := 0
	for start < len(names) && names[start] <= after {
		start++
	}
	last := after
	for j := range names {
		k := (start + j) % len(names)
		if budget == 0 {
			break
		}
		if left[k] > 0 {
			shares[k]++
			left[k]--
			budget--
			last = names[k]
		}
	}
	return shares, last
}

// sortNames sorts names in place (insertion sort: the groups are the
// tenants with ready tasks, a few dozen; the package imports only time).
func sortNames(names []string) {
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && names[j] < names[j-1]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
}
