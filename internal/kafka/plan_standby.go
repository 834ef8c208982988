package kafka

import (
	"cmp"
	"slices"
)

// This file places the replicas of stateful tasks, after assignTasks has
// placed the active tasks (plan.go): pure, client-neutral, deterministic.
//
//  1. caught up first (KIP-441): a stateful task that the balanced plan
//     would move from its current owner to a member that is not caught up
//     (its reported lag above the acceptable recovery lag, or, when it
//     reports none, the task's size as its owner reports it — Kafka
//     Streams' end offset sum — or neither known) stays with its owner; the member it was meant for restores
//     it as a warm-up replica, at most maxWarmups of them in the group at
//     once. A stateful task without a current owner (its owner left) goes
//     to the most caught-up member that can take it, when the planned one
//     is not caught up: a standby takes over a dead owner's task, and the
//     planned member warms it up;
//  2. standbys (num.standby.replicas): n copies of each stateful task on
//     members other than its owner, never two on one member, sticky to the
//     members holding the task's state (those that report a lag for it) as
//     long as that keeps the counts even, then on the members holding the
//     fewest copies;
//  3. a warm-up whose member already holds a standby of the task is that
//     standby, named a warm-up (its member then asks for the probing
//     rebalance): it costs nothing of the warm-up budget.
//
// The follow-up (probing) rebalance is the members' to ask for: a member
// holding warm-ups rejoins once they are caught up, or at the latest
// after the probing interval, and this plan then moves the tasks.

// TaskID names one task on the wire and to the runtime: partition
// Partition of the co-partitioned set whose first topic (in sort order)
// is Topic. A topic in no set is a set of its own.
type TaskID struct {
	Topic     string
	Partition int32
}

func (a TaskID) compare(b TaskID) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Defaults of the replica settings, Kafka Streams' own.
const (
	// DefaultMaxWarmupReplicas is max.warmup.replicas' default.
	DefaultMaxWarmupReplicas = 2
	// DefaultAcceptableRecoveryLag is acceptable.recovery.lag's default.
	DefaultAcceptableRecoveryLag = 10_000
)

// replicaSettings are what the leader's plan places besides active tasks.
// The zero value places none and never holds a task back.
type replicaSettings struct {
	// standbys per stateful task.
	standbys int
	// maxWarmups in the group at once; 0 holds no task back.
	maxWarmups int
	// acceptableLag is the lag at or below which a member is caught up on
	// a task.
	acceptableLag int64
	// stateful reports a task whose set includes this topic as stateful.
	stateful map[string]bool
}

// replicaInput is what placeReplicas reads of one plan.
type replicaInput struct {
	ids       []string
	tasks     []planTask
	eligible  [][]string
	prevOwner map[planTask]string
	stateful  map[planTask]bool
	// lag reports the lag a member reported for a task (ok false: none).
	lag func(member string, k planTask) (int64, bool)
	// recovery is what a member would replay to run a task: its reported
	// lag, else the task's size as its owner reported it (ok false:
	// neither is known).
	recovery func(member string, k planTask) (int64, bool)
}

// replicaPlan is what placeReplicas adds to the active plan.
type replicaPlan struct {
	standby map[string][]planTask
	warmup  map[string][]planTask
}

// placeReplicas adjusts assigned (task -> member) for caught-up-ness and
// places the standbys and warm-ups, as the file's comment describes.
func placeReplicas(in replicaInput, assigned map[planTask]string, rs replicaSettings) replicaPlan {
	out := replicaPlan{standby: map[string][]planTask{}, warmup: map[string][]planTask{}}
	caughtUp := func(m string, k planTask) bool {
		if in.prevOwner[k] == m {
			return true
		}
		lag, ok := in.recovery(m, k)
		return ok && lag <= rs.acceptableLag
	}
	var wanted []planTask // held back: the member it was meant for warms it up
	wantedBy := map[planTask]string{}
	if rs.maxWarmups > 0 {
		for _, k := range in.tasks {
			to, ok := assigned[k]
			if !ok || !in.stateful[k] || caughtUp(to, k) {
				continue
			}
			if from, ok := in.prevOwner[k]; ok {
				assigned[k] = from
				wanted = append(wanted, k)
				wantedBy[k] = to
				continue
			}
			// No owner: the most caught-up eligible member, if any is.
			best, bestLag := "", int64(0)
			for _, m := range in.eligible[k.set] {
				if lag, ok := in.recovery(m, k); ok && lag <= rs.acceptableLag && (best == "" || lag < bestLag) {
					best, bestLag = m, lag
				}
			}
			if best != "" {
				// The planned member warms it up, to take it over later.
				assigned[k] = best
				wanted = append(wanted, k)
				wantedBy[k] = to
			}
		}
	}

	// Standbys: sticky pass, then least loaded.
	load := map[string]int{}
	holds := map[planTask]map[string]bool{}
	add := func(m string, k planTask) {
		if holds[k] == nil {
			holds[k] = map[string]bool{}
		}
		holds[k][m] = true
		load[m]++
		out.standby[m] = append(out.standby[m], k)
	}
	canHold := func(m string, k planTask) bool {
		return m != assigned[k] && !holds[k][m] && slices.Contains(in.eligible[k.set], m)
	}
	var stateful []planTask
	for _, k := range in.tasks {
		if _, ok := assigned[k]; ok && in.stateful[k] {
			stateful = append(stateful, k)
		}
	}
	if rs.standbys > 0 && len(in.ids) > 1 {
		limit := (len(stateful)*min(rs.standbys, len(in.ids)-1) + len(in.ids) - 1) / len(in.ids)
		for _, k := range stateful {
			var have []string
			for _, m := range in.ids {
				if _, ok := in.lag(m, k); ok && canHold(m, k) {
					have = append(have, m)
				}
			}
			slices.SortStableFunc(have, func(a, b string) int {
				la, _ := in.lag(a, k)
				lb, _ := in.lag(b, k)
				return cmp.Compare(la, lb)
			})
			for _, m := range have {
				if len(holds[k]) < rs.standbys && load[m] < limit {
					add(m, k)
				}
			}
		}
		for _, k := range stateful {
			for len(holds[k]) < rs.standbys {
				var cands []string
				for _, m := range in.ids {
					if canHold(m, k) {
						cands = append(cands, m)
					}
				}
				if len(cands) == 0 {
					break // fewer members than copies asked for
				}
				add(slices.MinFunc(cands, func(a, b string) int {
					return cmp.Or(cmp.Compare(load[a], load[b]), cmp.Compare(a, b))
				}), k)
			}
		}
	}

	// Even out: a copy moves from the member holding the most to one
	// holding the fewest that may hold it, while their counts differ by
	// more than one. Each move lowers the sum of squared counts, so the
	// loop ends.
	for moved := true; moved && rs.standbys > 0; {
		moved = false
		byLoad := slices.Clone(in.ids)
		slices.SortStableFunc(byLoad, func(a, b string) int { return cmp.Compare(load[b], load[a]) })
	search:
		for _, from := range byLoad {
			for i := len(byLoad) - 1; i >= 0 && load[from]-load[byLoad[i]] > 1; i-- {
				to := byLoad[i]
				for j, k := range out.standby[from] {
					if canHold(to, k) {
						out.standby[from] = slices.Delete(out.standby[from], j, j+1)
						delete(holds[k], from)
						load[from]--
						add(to, k)
						moved = true
						break search
					}
				}
			}
		}
	}

	// Warm-ups, within the budget; a standby already there becomes one
	// (the same copy, so that its member asks for the probing rebalance
	// too) at no cost.
	budget := rs.maxWarmups
	for _, k := range wanted {
		to := wantedBy[k]
		if holds[k][to] {
			out.standby[to] = slices.DeleteFunc(out.standby[to], func(s planTask) bool { return s == k })
			if len(out.standby[to]) == 0 {
				delete(out.standby, to)
			}
			out.warmup[to] = append(out.warmup[to], k)
			continue
		}
		if budget == 0 {
			break
		}
		budget--
		out.warmup[to] = append(out.warmup[to], k)
	}
	return out
}

// ReplicaConfig configures the replicas of stateful tasks a group places
// (see the top of this file). The zero value places none and moves every
// task at once.
type ReplicaConfig struct {
	// Standbys is the number of standby copies of each stateful task
	// (num.standby.replicas).
	Standbys int
	// MaxWarmups bounds the warm-up replicas in the group at once
	// (max.warmup.replicas); 0 turns warm-ups off: a task moves at once.
	MaxWarmups int
	// AcceptableLag is the lag at or below which a member is caught up on
	// a task (acceptable.recovery.lag).
	AcceptableLag int64
	// StatefulTopics are the topics whose tasks hold logged state.
	StatefulTopics []string
	// Lags, if set, returns this member's lag of each task whose state it
	// holds (0 for those it runs); it is read at each join.
	Lags func() map[TaskID]int64
	// Sizes, if set, returns the size of each stateful task this member
	// runs: the changelog records a member holding none of its state
	// would restore. It is read at each join; the leader counts a member
	// that reports no lag for a task as behind by its size.
	Sizes func() map[TaskID]int64
	// OnAssigned, if set, receives the standby and warm-up tasks of each
	// assignment this member receives (none: nil slices).
	OnAssigned func(standby, warmup []TaskID)
	// Departures exchanges the members' transactional ids (departed.go).
	Departures Departures
	// Probe, when it delivers, makes this member rejoin the group, which
	// starts a rebalance (the probing rebalance of a member whose warm-ups
	// caught up). Partitions it owns are released and claimed again.
	Probe <-chan struct{}
}

// settings returns the leader's placement settings.
func (rc ReplicaConfig) settings() replicaSettings {
	rs := replicaSettings{standbys: max(rc.Standbys, 0), maxWarmups: max(rc.MaxWarmups, 0), acceptableLag: max(rc.AcceptableLag, 0)}
	if len(rc.StatefulTopics) > 0 {
		rs.stateful = map[string]bool{}
		for _, t := range rc.StatefulTopics {
			rs.stateful[t] = true
		}
	}
	return rs
}
