package kafka

import (
	"cmp"
	"maps"
	"slices"
)

// This file is the assignor's pure core: no sarama, no I/O. balance.go
// adapts it to sarama's BalanceStrategy.
//
// A task is one partition number of one co-partitioned set of topics (a
// topic in no set is a set of its own). Tasks, not partitions, are what the
// assignor distributes, so partition p of every topic of a set always lands
// on one member. The plan is
//
//  1. sticky: a task stays with its current owner if that owner can take
//     it (subscribes to all the set's topics);
//  2. complete: every other task goes to the least loaded eligible member;
//  3. balanced: tasks move from the most to the least loaded members until
//     loads differ by at most one (exactly, when subscriptions agree);
//  4. cooperative (KIP-429): a task moving away from a member that still
//     owns part of it is withheld from its new owner for this round. The
//     old owner sees it missing from its assignment, revokes it and rejoins
//     at once (sarama does this), and the next round hands the task over.
//     Nothing is ever owned by two members, and a task is never split.

// planMember is what the assignor knows of one member.
type planMember struct {
	// topics the member subscribes to.
	topics []string
	// owned are the partitions the member holds now, by topic, as it
	// reported them in its subscription (cooperative protocol).
	owned map[string][]int32
	// generation of that ownership, -1 if unknown. When two members claim
	// a partition, the higher generation wins.
	generation int32
	// lags are the member's lags of the tasks whose state it holds, as it
	// reported them (plan_standby.go); nil from members that report none.
	lags map[TaskID]int64
	// sizes are the changelog records of the stateful tasks the member
	// runs (plan_standby.go); nil from members that report none.
	sizes map[TaskID]int64
}

// newPlanMember returns a member's part of the plan from its
// subscription: the topics, room for the partitions it owns (their topic
// count), its user data, and the generation of that ownership that a
// subscription of version 2 or later carries, which wins over the user
// data's.
func newPlanMember(topics []string, owned int, sub subscription, version int16, generation int32) planMember {
	pm := planMember{
		topics:     topics,
		owned:      make(map[string][]int32, owned),
		generation: sub.generation,
		lags:       sub.lags,
		sizes:      sub.sizes,
	}
	if version >= 2 && generation >= 0 {
		pm.generation = generation
	}
	return pm
}

// planTask is partition number partition of set set.
type planTask struct {
	set       int
	partition int32
}

func (a planTask) compare(b planTask) int {
	if c := cmp.Compare(a.set, b.set); c != 0 {
		return c
	}
	return cmp.Compare(a.partition, b.partition)
}

type topicPartition struct {
	topic     string
	partition int32
}

// computePlan assigns the partitions of topics (topic -> partition ids) to
// the members, keeping the partitions of each co-partitioned set together.
// It returns member -> topic -> sorted partitions; members with nothing
// are absent. It is deterministic: the same input gives the same plan.
func computePlan(copartitioned [][]string, members map[string]planMember, topics map[string][]int32) map[string]map[string][]int32 {
	return computeAssignment(copartitioned, members, topics, replicaSettings{}).plan
}

// assignment is a plan with its replicas: member -> topic -> sorted
// partitions as computePlan returns it, and member -> sorted tasks of the
// standbys and warm-ups placed on it (members with none are absent).
type assignment struct {
	plan    map[string]map[string][]int32
	standby map[string][]TaskID
	warmup  map[string][]TaskID
}

// computeAssignment is computePlan with replicas placed as rs says
// (plan_standby.go).
func computeAssignment(copartitioned [][]string, members map[string]planMember, topics map[string][]int32, rs replicaSettings) assignment {
	ids := sortedKeys(members)
	plan := make(map[string]map[string][]int32)
	out := assignment{plan: plan, standby: map[string][]TaskID{}, warmup: map[string][]TaskID{}}
	if len(ids) == 0 {
		return out
	}
	subscribed := make(map[string]map[string]bool, len(ids))
	for _, id := range ids {
		subscribed[id] = make(map[string]bool)
		for _, t := range members[id].topics {
			subscribed[id][t] = true
		}
	}
	eligibleFor := func(set []string) []string {
		var out []string
		for _, id := range ids {
			if !slices.ContainsFunc(set, func(t string) bool { return !subscribed[id][t] }) {
				out = append(out, id)
			}
		}
		return out
	}

	// The sets, restricted to existing topics. A set no member can take
	// whole (subscriptions differ, say mid-deploy) falls apart into its
	// topics rather than going unassigned.
	var sets [][]string
	var eligible [][]string
	inSet := make(map[string]bool)
	addSet := func(set []string) {
		if e := eligibleFor(set); len(e) > 0 || len(set) == 1 {
			sets, eligible = append(sets, set), append(eligible, e)
			return
		}
		for _, t := range set {
			sets, eligible = append(sets, []string{t}), append(eligible, eligibleFor([]string{t}))
		}
	}
	for _, cs := range copartitioned {
		var set []string
		for _, t := range cs {
			if _, ok := topics[t]; ok && !inSet[t] {
				set = append(set, t)
				inSet[t] = true
			}
		}
		if len(set) > 0 {
			slices.Sort(set)
			addSet(set)
		}
	}
	for _, t := range sortedKeys(topics) {
		if !inSet[t] {
			addSet([]string{t})
		}
	}

	// The tasks of each set and the topics having each partition number.
	var tasks []planTask
	parts := make(map[planTask][]topicPartition)
	for si, set := range sets {
		for _, t := range set {
			for _, p := range topics[t] {
				k := planTask{si, p}
				if parts[k] == nil {
					tasks = append(tasks, k)
				}
				parts[k] = append(parts[k], topicPartition{t, p})
			}
		}
	}
	slices.SortFunc(tasks, planTask.compare)
	taskOf := make(map[topicPartition]planTask)
	for k, tps := range parts {
		for _, tp := range tps {
			taskOf[tp] = k
		}
	}

	// Current ownership. claimants keeps every claim (for withholding);
	// owner resolves conflicts by generation, then member id.
	claimants := make(map[topicPartition][]string)
	owner := make(map[topicPartition]string)
	for _, id := range ids {
		for t, ps := range members[id].owned {
			for _, p := range ps {
				tp := topicPartition{t, p}
				if _, ok := taskOf[tp]; !ok || slices.Contains(claimants[tp], id) {
					continue
				}
				claimants[tp] = append(claimants[tp], id)
				if cur, ok := owner[tp]; !ok || members[id].generation > members[cur].generation {
					owner[tp] = id
				}
			}
		}
	}
	prevOwner := make(map[planTask]string)
	for _, k := range tasks {
		count := make(map[string]int)
		for _, tp := range parts[k] {
			if id, ok := owner[tp]; ok {
				count[id]++
			}
		}
		best := ""
		for _, id := range sortedKeys(count) {
			if best == "" || count[id] > count[best] ||
				(count[id] == count[best] && members[id].generation > members[best].generation) {
				best = id
			}
		}
		if best != "" && slices.Contains(eligible[k.set], best) {
			prevOwner[k] = best
		}
	}

	taskID := func(k planTask) TaskID { return TaskID{Topic: sets[k.set][0], Partition: k.partition} }
	stateful := map[planTask]bool{}
	for _, k := range tasks {
		stateful[k] = slices.ContainsFunc(sets[k.set], func(t string) bool { return rs.stateful[t] })
	}
	lag := func(m string, k planTask) (int64, bool) {
		l, ok := members[m].lags[taskID(k)]
		return l, ok
	}
	// A member holding none of a task's state is behind by the whole
	// changelog, as its owner reported its size (Kafka Streams counts
	// such a client's lag as the changelogs' end offsets): a task whose
	// state is within the acceptable lag moves at once, without a
	// warm-up.
	size := map[TaskID]int64{}
	for _, id := range ids {
		for t, n := range members[id].sizes {
			size[t] = max(size[t], n)
		}
	}
	recovery := func(m string, k planTask) (int64, bool) {
		if l, ok := lag(m, k); ok {
			return l, true
		}
		n, ok := size[taskID(k)]
		return n, ok
	}
	caughtUp := func(k planTask, m string) bool {
		l, ok := recovery(m, k)
		return !stateful[k] || (ok && l <= rs.acceptableLag)
	}
	// Stateful and stateless tasks are balanced apart (as Kafka Streams
	// does), so that the stateless ones cannot even out the loads alone
	// while every stateful task stays put.
	var statefulTasks, statelessTasks []planTask
	for _, k := range tasks {
		if stateful[k] {
			statefulTasks = append(statefulTasks, k)
		} else {
			statelessTasks = append(statelessTasks, k)
		}
	}
	assigned := assignTasks(ids, statelessTasks, eligible, prevOwner) // all caught up
	maps.Copy(assigned, assignTasksPreferring(ids, statefulTasks, eligible, prevOwner, caughtUp))
	replicas := placeReplicas(replicaInput{ids: ids, tasks: tasks, eligible: eligible, prevOwner: prevOwner, stateful: stateful, lag: lag, recovery: recovery}, assigned, rs)
	for m, ks := range replicas.standby {
		for _, k := range ks {
			out.standby[m] = append(out.standby[m], taskID(k))
		}
	}
	for m, ks := range replicas.warmup {
		for _, k := range ks {
			out.warmup[m] = append(out.warmup[m], taskID(k))
		}
	}

	for _, k := range tasks {
		to, ok := assigned[k]
		if !ok {
			continue
		}
		// Withhold what another member still owns, and with it the rest of
		// the task that to does not hold yet, so that the task is never
		// split between two members.
		contested := slices.ContainsFunc(parts[k], func(tp topicPartition) bool {
			return slices.ContainsFunc(claimants[tp], func(id string) bool { return id != to })
		})
		// A stateful task withheld from its new owner is a warm-up there
		// meanwhile: it keeps its state caught up, and reports so at the
		// rejoin that hands the task over.
		if id := taskID(k); contested && stateful[k] && !slices.Contains(out.standby[to], id) && !slices.Contains(out.warmup[to], id) {
			out.warmup[to] = append(out.warmup[to], id)
		}
		for _, tp := range parts[k] {
			if contested && !slices.Contains(claimants[tp], to) {
				continue
			}
			if plan[to] == nil {
				plan[to] = make(map[string][]int32)
			}
			plan[to][tp.topic] = append(plan[to][tp.topic], tp.partition)
		}
	}
	for _, byTopic := range plan {
		for _, ps := range byTopic {
			slices.Sort(ps)
		}
	}
	for _, ids := range out.standby {
		slices.SortFunc(ids, TaskID.compare)
	}
	for _, ids := range out.warmup {
		slices.SortFunc(ids, TaskID.compare)
	}
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys[K interface{ ~string | ~int32 }, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// assignTasks maps each task to a member: sticky first, then least loaded,
// then moves from the most to the least loaded member while their loads
// differ by more than one and a task of the first may go to the second.
// Every move lowers the sum of squared loads, so the loop ends.
func assignTasks(ids []string, tasks []planTask, eligible [][]string, prevOwner map[planTask]string) map[planTask]string {
	return assignTasksPreferring(ids, tasks, eligible, prevOwner, nil)
}

// assignTasksPreferring is assignTasks where a balancing move takes, of the
// tasks the loaded member may give, the highest one prefer(task, to)
// holds for if any (a task the receiving member is caught up on, so that
// it moves at once and a warm-up is not wasted), else the highest.
func assignTasksPreferring(ids []string, tasks []planTask, eligible [][]string, prevOwner map[planTask]string, prefer func(planTask, string) bool) map[planTask]string {
	assigned := make(map[planTask]string, len(tasks))
	load := make(map[string]int, len(ids))
	for _, k := range tasks {
		if id, ok := prevOwner[k]; ok {
			assigned[k] = id
			load[id]++
		}
	}
	for _, k := range tasks {
		if _, ok := assigned[k]; ok || len(eligible[k.set]) == 0 {
			continue
		}
		best := slices.MinFunc(eligible[k.set], func(a, b string) int {
			return cmp.Or(cmp.Compare(load[a], load[b]), cmp.Compare(a, b))
		})
		assigned[k] = best
		load[best]++
	}

	byLoad := slices.Clone(ids)
	for moved := true; moved; {
		moved = false
		slices.SortStableFunc(byLoad, func(a, b string) int {
			return cmp.Or(cmp.Compare(load[b], load[a]), cmp.Compare(a, b))
		})
	search:
		for _, from := range byLoad {
			for i := len(byLoad) - 1; i >= 0; i-- {
				to := byLoad[i]
				if load[from]-load[to] <= 1 {
					break
				}
				// The highest task of from that to may take, preferred first.
				pick := -1
				for j := len(tasks) - 1; j >= 0; j-- {
					k := tasks[j]
					if assigned[k] == from && slices.Contains(eligible[k.set], to) {
						if pick < 0 {
							pick = j
						}
						if prefer == nil || prefer(k, to) {
							pick = j
							break
						}
					}
				}
				if pick >= 0 {
					assigned[tasks[pick]] = to
					load[from]--
					load[to]++
					moved = true
					break search
				}
			}
		}
	}
	return assigned
}
