package kafka

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// owning returns a member that owns the partitions of topic t.
func owning(t string, ps ...int32) planMember {
	return planMember{topics: []string{"t", "s"}, owned: map[string][]int32{t: ps}, generation: 3}
}

func fresh() planMember { return planMember{topics: []string{"t", "s"}, generation: -1} }

func withLags(m planMember, lag int64, ps ...int32) planMember {
	m.lags = map[TaskID]int64{}
	for _, p := range ps {
		m.lags[TaskID{"t", p}] = lag
	}
	return m
}

func withSizes(m planMember, size int64, ps ...int32) planMember {
	m.sizes = map[TaskID]int64{}
	for _, p := range ps {
		m.sizes[TaskID{"t", p}] = size
	}
	return m
}

func parts(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// ownerOf returns task t-p's owner in a.
func ownerOf(a assignment, p int32) string {
	for m, byTopic := range a.plan {
		if slices.Contains(byTopic["t"], p) {
			return m
		}
	}
	return ""
}

// copiesOf returns the members holding a standby of t-p.
func copiesOf(a assignment, p int32) []string {
	var out []string
	for m, ids := range a.standby {
		if slices.Contains(ids, TaskID{"t", p}) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

var statefulT = map[string]bool{"t": true}

// settle runs the cooperative rounds: each member then owns what the last
// round gave it, until a round changes nothing (a task moving is withheld
// for one round while its old owner revokes it).
func settle(t *testing.T, members map[string]planMember, topics map[string][]int32, rs replicaSettings) assignment {
	t.Helper()
	for range 5 {
		a := computeAssignment(nil, members, topics, rs)
		changed := false
		for id, m := range members {
			owned := a.plan[id]
			if owned == nil {
				owned = map[string][]int32{}
			}
			for _, tp := range []string{"t", "s"} {
				if !slices.Equal(owned[tp], m.owned[tp]) {
					changed = true
				}
			}
			m.owned = owned
			members[id] = m
		}
		if !changed {
			return a
		}
	}
	t.Fatal("the plan did not settle in 5 rounds")
	return assignment{}
}

// Standbys by count: n copies of each stateful task, none on its owner,
// never two on one member, the members' loads within one of each other;
// more copies than other members gives one per other member.
func TestStandbysByCount(t *testing.T) {
	for _, tc := range []struct {
		members, partitions, n int
		perTask                int
	}{
		{members: 3, partitions: 6, n: 1, perTask: 1},
		{members: 3, partitions: 6, n: 2, perTask: 2},
		{members: 3, partitions: 6, n: 5, perTask: 2},
		{members: 4, partitions: 7, n: 1, perTask: 1},
		{members: 5, partitions: 12, n: 2, perTask: 2},
		{members: 1, partitions: 4, n: 1, perTask: 0},
	} {
		t.Run(fmt.Sprintf("%dmembers_%dpartitions_n%d", tc.members, tc.partitions, tc.n), func(t *testing.T) {
			members := map[string]planMember{}
			for i := range tc.members {
				members[fmt.Sprintf("m%d", i)] = fresh()
			}
			topics := map[string][]int32{"t": parts(int32(tc.partitions)), "s": parts(int32(tc.partitions))}
			a := computeAssignment(nil, members, topics, replicaSettings{standbys: tc.n, stateful: statefulT})
			load := map[string]int{}
			for p := range int32(tc.partitions) {
				copies := copiesOf(a, p)
				require.Len(t, copies, tc.perTask, "task %d", p)
				require.NotContains(t, copies, ownerOf(a, p), "never on the owner")
				for _, m := range copies {
					load[m]++
				}
			}
			for m := range members {
				require.NotContains(t, a.standby[m], TaskID{"s", 0}, "stateless tasks have no standbys")
			}
			if tc.perTask > 0 {
				lo, hi := tc.partitions, 0
				for m := range members {
					lo, hi = min(lo, load[m]), max(hi, load[m])
				}
				require.LessOrEqual(t, hi-lo, 1, "spread evenly: %v", load)
			}
			require.Empty(t, a.warmup, "nothing moves, nothing warms up")
		})
	}
}

// Standbys stay where the task's state is (members reporting a lag for
// it) as long as that keeps the copies spread.
func TestStandbysAreSticky(t *testing.T) {
	members := map[string]planMember{
		"a": withLags(owning("t", 0, 1), 50, 2, 3),
		"b": withLags(owning("t", 2, 3), 50, 4, 5),
		"c": withLags(owning("t", 4, 5), 50, 0, 1),
	}
	topics := map[string][]int32{"t": parts(6)}
	rs := replicaSettings{standbys: 1, maxWarmups: 2, acceptableLag: 100, stateful: statefulT}
	a := computeAssignment(nil, members, topics, rs)
	want := map[int32]string{0: "c", 1: "c", 2: "a", 3: "a", 4: "b", 5: "b"}
	for p, m := range want {
		require.Equal(t, []string{m}, copiesOf(a, p), "task %d", p)
	}
	// A standby whose member now owns the task moves elsewhere.
	members["d"] = fresh()
	a = computeAssignment(nil, members, topics, rs)
	for p := range int32(6) {
		require.Len(t, copiesOf(a, p), 1)
		require.NotContains(t, copiesOf(a, p), ownerOf(a, p))
	}
}

// Warm-ups (KIP-441): a task the plan moves to a member that is not
// caught up stays with its owner while that member warms it up, at most
// maxWarmups at once; a caught-up member takes its tasks at once; a
// stateless task moves at once.
func TestWarmupsHoldTasksUntilCaughtUp(t *testing.T) {
	topics := map[string][]int32{"t": parts(6), "s": parts(2)}
	old := planMember{topics: []string{"t", "s"}, owned: map[string][]int32{"t": parts(6), "s": parts(2)}, generation: 3}
	rs := replicaSettings{maxWarmups: 2, acceptableLag: 10_000, stateful: statefulT}

	t.Run("scale_out_holds", func(t *testing.T) {
		a := settle(t, map[string]planMember{"a": old, "b": fresh()}, topics, rs)
		require.Equal(t, parts(6), a.plan["a"]["t"], "every stateful task stays with its owner")
		require.NotEmpty(t, a.plan["b"]["s"], "stateless tasks move at once")
		require.Len(t, a.warmup["b"], 2, "at most maxWarmups")
		require.Empty(t, a.warmup["a"])
	})
	t.Run("caught_up_moves", func(t *testing.T) {
		b := withLags(fresh(), 9_000, 3, 4, 5) // what the warm-ups restored
		first := computeAssignment(nil, map[string]planMember{"a": old, "b": b}, topics, rs)
		require.Empty(t, first.plan["b"]["t"], "withheld while a revokes them")
		require.Equal(t, []TaskID{{"t", 3}, {"t", 4}, {"t", 5}}, first.warmup["b"], "b keeps them warm meanwhile")
		a := settle(t, map[string]planMember{"a": old, "b": b}, topics, rs)
		require.Equal(t, []int32{3, 4, 5}, a.plan["b"]["t"], "the balanced plan takes the caught-up tasks")
		require.Empty(t, a.warmup)
	})
	// A member holding none of a task's state is behind by the task's
	// size, as its owner reports it (Kafka Streams' end offset sums): a
	// store within the acceptable lag moves at once, a larger one warms up
	// first. Before sizes were reported, every task moving to a fresh
	// member became a warm-up, and a fresh group probed dozens of times.
	t.Run("small_state_moves_at_once", func(t *testing.T) {
		small := withSizes(old, 500, parts(6)...)
		a := settle(t, map[string]planMember{"a": small, "b": fresh()}, topics, rs)
		require.Len(t, a.plan["b"]["t"], 3, "balanced at once")
		require.Empty(t, a.warmup)
	})
	t.Run("large_state_warms_up", func(t *testing.T) {
		large := withSizes(old, 50_000, parts(6)...)
		a := settle(t, map[string]planMember{"a": large, "b": fresh()}, topics, rs)
		require.Equal(t, parts(6), a.plan["a"]["t"])
		require.Len(t, a.warmup["b"], 2)
	})
	t.Run("a_reported_lag_counts_before_the_size", func(t *testing.T) {
		small := withSizes(old, 500, parts(6)...)
		b := withLags(fresh(), 20_000, parts(6)...) // old copies, far behind
		a := settle(t, map[string]planMember{"a": small, "b": b}, topics, rs)
		require.Equal(t, parts(6), a.plan["a"]["t"])
		require.Len(t, a.warmup["b"], 2)
	})
	t.Run("lag_above_threshold_holds", func(t *testing.T) {
		b := withLags(fresh(), 10_001, 3, 4, 5)
		a := computeAssignment(nil, map[string]planMember{"a": old, "b": b}, topics, rs)
		require.Empty(t, a.plan["b"]["t"])
		require.Len(t, a.warmup["b"], 2)
	})
	t.Run("stateless_tasks_do_not_even_out_the_loads", func(t *testing.T) {
		topics := map[string][]int32{"t": parts(6), "s": parts(6)}
		old := planMember{topics: []string{"t", "s"}, owned: map[string][]int32{"t": parts(6), "s": parts(6)}, generation: 3}
		a := settle(t, map[string]planMember{"a": old, "b": fresh()}, topics, rs)
		require.Equal(t, parts(6), a.plan["a"]["t"])
		require.Len(t, a.plan["b"]["s"], 3, "stateless tasks balance on their own")
		require.Len(t, a.warmup["b"], 2, "and the stateful ones still need to move: warm-ups")
		b := withLags(fresh(), 0, a.warmup["b"][0].Partition, a.warmup["b"][1].Partition, 5)
		b.owned = a.plan["b"]
		a = settle(t, map[string]planMember{"a": {topics: old.topics, owned: a.plan["a"], generation: 4}, "b": b}, topics, rs)
		require.Len(t, a.plan["b"]["t"], 3, "the caught-up tasks move")
	})
	t.Run("max_warmups_across_members", func(t *testing.T) {
		topics := map[string][]int32{"t": parts(12)}
		old := owning("t", parts(12)...)
		for _, max := range []int{1, 2, 3} {
			rs := rs
			rs.maxWarmups = max
			a := computeAssignment(nil, map[string]planMember{"a": old, "b": fresh(), "c": fresh()}, topics, rs)
			require.Equal(t, parts(12), a.plan["a"]["t"])
			require.Equal(t, max, len(a.warmup["b"])+len(a.warmup["c"]), "max %d", max)
		}
	})
	t.Run("warmups_off_moves_at_once", func(t *testing.T) {
		rs := rs
		rs.maxWarmups = 0
		a := settle(t, map[string]planMember{"a": old, "b": fresh()}, topics, rs)
		require.NotEmpty(t, a.plan["b"]["t"])
		require.Equal(t, 4, len(a.plan["b"]["t"])+len(a.plan["b"]["s"]), "balanced at once")
	})
	t.Run("a_standby_is_the_warmup", func(t *testing.T) {
		rs := rs
		rs.standbys = 1
		a := computeAssignment(nil, map[string]planMember{"a": old, "b": fresh()}, topics, rs)
		require.Equal(t, parts(6), a.plan["a"]["t"])
		require.Len(t, a.standby["b"], 3, "b is the standby of every task")
		require.Len(t, a.warmup["b"], 3, "the standbys of the tasks meant for b are its warm-ups, beyond maxWarmups")
	})
}

// A task whose owner left goes to the member caught up on it (its
// standby), not to the one the balanced plan names.
func TestOrphanedTaskGoesToItsStandby(t *testing.T) {
	topics := map[string][]int32{"t": parts(4)}
	rs := replicaSettings{standbys: 1, maxWarmups: 2, acceptableLag: 100, stateful: statefulT}
	members := map[string]planMember{
		"b": withLags(owning("t", 0, 1), 7, 2, 3), // a's standby
		"c": withLags(fresh(), 3, 0, 1),           // b's standby
	}
	a := computeAssignment(nil, members, topics, rs)
	require.Equal(t, parts(4), a.plan["b"]["t"], "a's tasks resume on their standby b")
	require.Equal(t, []TaskID{{"t", 0}, {"t", 1}}, a.standby["c"])
	require.Equal(t, []TaskID{{"t", 2}, {"t", 3}}, a.warmup["c"], "c, which the balanced plan named, warms them up")

	// The next round moves two tasks to c, which is caught up on 0 and 1
	// only: those are the ones the balancing takes, and nothing is held.
	members = map[string]planMember{
		"b": withLags(owning("t", 0, 1, 2, 3), 0),
		"c": withLags(fresh(), 3, 0, 1, 2, 3),
	}
	a = settle(t, members, topics, rs)
	require.Len(t, a.plan["c"]["t"], 2)
	require.Len(t, a.plan["b"]["t"], 2)
	require.Empty(t, a.warmup)
}

func TestUserDataRoundTrip(t *testing.T) {
	sub := subscription{generation: 7, memberData: []byte("10.0.0.1:80"), lags: map[TaskID]int64{{"a", 0}: 0, {"b", 3}: 12345}}
	require.Equal(t, sub, decodeSubscription(encodeSubscription(sub)))
	sized := sub
	sized.sizes = map[TaskID]int64{{"a", 0}: 4096}
	require.Equal(t, sized, decodeSubscription(encodeSubscription(sized)))
	require.Equal(t, encodeSubscription(sub), encodeSubscription(sized)[:len(encodeSubscription(sub))], "sizes follow the lags, which earlier decoders read alone")
	require.Equal(t, subscription{generation: 4, memberData: []byte("x")}, decodeSubscription(encodeUserData(4, []byte("x"))), "version 1")
	require.Equal(t, subscription{generation: -1}, decodeSubscription(encodeSubscription(sub)[:12]), "truncated")
	require.Equal(t, subscription{generation: -1}, decodeSubscription([]byte{9, 0, 0, 0, 1}), "unknown version")
	require.Equal(t, []byte("10.0.0.1:80"), decodeMemberData(encodeSubscription(sub)))
	require.Equal(t, int32(7), decodeUserData(encodeSubscription(sub)))

	peers := encodePeers(map[string][]byte{"m1": []byte("h:1"), "m2": nil})
	b := encodeAssignment(peers, []TaskID{{"a", 1}}, []TaskID{{"b", 2}, {"b", 3}})
	require.Equal(t, memberAssignment{
		peers: map[string][]byte{"m1": []byte("h:1"), "m2": nil}, standby: []TaskID{{"a", 1}}, warmup: []TaskID{{"b", 2}, {"b", 3}},
	}, decodeAssignment(b))
	require.Equal(t, map[string][]byte{"m1": []byte("h:1"), "m2": nil}, decodePeers(b))
	require.Equal(t, memberAssignment{standby: []TaskID{{"a", 1}}}, decodeAssignment(encodeAssignment(nil, []TaskID{{"a", 1}}, nil)))
	require.Nil(t, encodeAssignment(nil, nil, nil))
	require.Equal(t, memberAssignment{}, decodeAssignment(b[:len(b)-2]), "truncated")
	require.Equal(t, memberAssignment{peers: decodePeers(peers)}, decodeAssignment(peers), "version 1")
}

// Whatever the members report, the copies end up spread within one of
// each other, one per task, never on the owner (fixed seeds: the plan is
// deterministic, so each case replays).
func TestStandbysSpreadWhateverTheLags(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 2 + rng.IntN(4)
		np := int32(n * (1 + rng.IntN(3)))
		members := map[string]planMember{}
		for i := range n {
			m := fresh()
			m.lags = map[TaskID]int64{}
			for p := range np {
				if rng.IntN(2) == 0 {
					m.lags[TaskID{"t", p}] = int64(rng.IntN(50))
				}
			}
			members[fmt.Sprintf("m%d", i)] = m
		}
		for p := range np { // balanced owners
			id := fmt.Sprintf("m%d", int(p)%n)
			m := members[id]
			if m.owned == nil {
				m.owned = map[string][]int32{}
			}
			m.owned["t"] = append(m.owned["t"], p)
			m.generation = 3
			members[id] = m
		}
		a := computeAssignment(nil, members, map[string][]int32{"t": parts(np)}, replicaSettings{standbys: 1, maxWarmups: 2, acceptableLag: 100, stateful: statefulT})
		load := map[string]int{}
		for p := range np {
			copies := copiesOf(a, p)
			require.Len(t, copies, 1, "seed %d task %d", seed, p)
			require.NotEqual(t, ownerOf(a, p), copies[0], "seed %d", seed)
			load[copies[0]]++
		}
		lo, hi := int(np), 0
		for m := range members {
			lo, hi = min(lo, load[m]), max(hi, load[m])
		}
		require.LessOrEqual(t, hi-lo, 1, "seed %d: %v", seed, load)
	}
}

// The sarama adapter: every member is in the plan, one without partitions
// too, and its assignment data names its warm-ups; the lags members
// report reach the plan.
func TestStrategyCarriesReplicas(t *testing.T) {
	s := newCopartitionStrategy(nil, nil, nil)
	s.replicas = ReplicaConfig{MaxWarmups: 2, AcceptableLag: 100, StatefulTopics: []string{"t"}}
	owner := sarama.ConsumerGroupMemberMetadata{Version: 3, Topics: []string{"t"}, GenerationID: 4,
		UserData:        encodeSubscription(subscription{generation: 4, lags: map[TaskID]int64{{"t", 0}: 0, {"t", 1}: 0}}),
		OwnedPartitions: []*sarama.OwnedPartition{{Topic: "t", Partitions: []int32{0, 1}}}}
	newcomer := sarama.ConsumerGroupMemberMetadata{Version: 3, Topics: []string{"t"}, GenerationID: -1,
		UserData: encodeSubscription(subscription{generation: -1})}
	plan, err := s.Plan(map[string]sarama.ConsumerGroupMemberMetadata{"a": owner, "b": newcomer}, map[string][]int32{"t": {0, 1}})
	require.NoError(t, err)
	require.Equal(t, []int32{0, 1}, plan["a"]["t"], "held with its owner")
	require.Contains(t, plan, "b", "in the plan without partitions")
	ud, err := s.AssignmentData("b", plan["b"], 5)
	require.NoError(t, err)
	require.Equal(t, []TaskID{{"t", 1}}, decodeAssignment(ud).warmup)

	var got []TaskID
	s.replicas.OnAssigned = func(_, warmup []TaskID) { got = warmup }
	s.OnAssignment(&sarama.ConsumerGroupMemberAssignment{UserData: ud}, 5)
	require.Equal(t, []TaskID{{"t", 1}}, got)
}
