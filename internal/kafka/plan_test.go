package kafka

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// sim plays the cooperative protocol around computePlan: every round all
// members report what they own, the leader plans, members take their new
// assignment (revoking what is missing). A round that revoked anything is
// followed by another, as sarama rejoins at once.
type sim struct {
	sets    [][]string
	topics  map[string][]int32
	members map[string]*simMember
	gen     int32
}

type simMember struct {
	topics []string
	owned  map[string][]int32
	gen    int32
}

func newSim(sets [][]string, topics map[string]int32) *sim {
	s := &sim{sets: sets, topics: map[string][]int32{}, members: map[string]*simMember{}}
	for t, n := range topics {
		for p := range n {
			s.topics[t] = append(s.topics[t], p)
		}
	}
	return s
}

func (s *sim) join(id string, topics ...string) {
	if len(topics) == 0 {
		topics = slices.Sorted(maps.Keys(s.topics))
	}
	s.members[id] = &simMember{topics: topics, owned: map[string][]int32{}, gen: -1}
}

func (s *sim) owner(tp topicPartition) []string {
	var out []string
	for id, m := range s.members {
		if slices.Contains(m.owned[tp.topic], tp.partition) {
			out = append(out, id)
		}
	}
	return out
}

// round runs one rebalance, checks its safety and reports whether any
// member revoked a partition.
func (s *sim) round(t *testing.T) bool {
	t.Helper()
	s.gen++
	in := map[string]planMember{}
	for id, m := range s.members {
		in[id] = planMember{topics: m.topics, owned: m.owned, generation: m.gen}
	}
	plan := computePlan(s.sets, in, s.topics)
	require.Equal(t, plan, computePlan(s.sets, in, s.topics), "deterministic")

	assignedTo := map[topicPartition]string{}
	for id, byTopic := range plan {
		require.Contains(t, s.members, id)
		for topic, ps := range byTopic {
			require.True(t, slices.IsSorted(ps))
			require.Contains(t, s.members[id].topics, topic, "%s got unsubscribed %s", id, topic)
			for _, p := range ps {
				tp := topicPartition{topic, p}
				_, dup := assignedTo[tp]
				require.False(t, dup, "%v assigned twice", tp)
				assignedTo[tp] = id
				if slices.Contains(s.members[id].owned[topic], p) {
					continue // kept, not added (a conflicting claim predates this round)
				}
				for _, other := range s.owner(tp) {
					require.Equal(t, id, other, "%v given to %s while %s still owns it", tp, id, other)
				}
			}
		}
	}
	s.requireNotSplit(t, assignedTo)

	revoked := false
	for id, m := range s.members {
		next := plan[id]
		for topic, ps := range m.owned {
			for _, p := range ps {
				if !slices.Contains(next[topic], p) {
					revoked = true
				}
			}
		}
		m.owned = map[string][]int32{}
		maps.Copy(m.owned, next)
		m.gen = s.gen
	}
	return revoked
}

// requireNotSplit checks that co-partitioned partitions sharing a number
// are never on two members (for the sets some member can take whole).
func (s *sim) requireNotSplit(t *testing.T, assignedTo map[topicPartition]string) {
	t.Helper()
	for _, set := range s.sets {
		whole := false
		for _, m := range s.members {
			whole = whole || !slices.ContainsFunc(set, func(topic string) bool { return !slices.Contains(m.topics, topic) })
		}
		if !whole {
			continue
		}
		for p := range int32(64) {
			holder := ""
			for _, topic := range set {
				if id, ok := assignedTo[topicPartition{topic, p}]; ok {
					if holder != "" {
						require.Equal(t, holder, id, "partition %d of %v split", p, set)
					}
					holder = id
				}
			}
		}
	}
}

// settle runs rounds until one revokes nothing; it returns the number of
// rounds and checks that everything is assigned.
func (s *sim) settle(t *testing.T) int {
	t.Helper()
	for i := 1; i <= 5; i++ {
		if !s.round(t) {
			for topic, ps := range s.topics {
				for _, p := range ps {
					require.Len(t, s.owner(topicPartition{topic, p}), 1, "%s/%d unassigned", topic, p)
				}
			}
			return i
		}
	}
	t.Fatal("no stable assignment after 5 rounds")
	return 0
}

// tasks counts the tasks (co-partitioned groups) each member owns, taking
// the lowest topic of each set as its representative.
func (s *sim) loads() map[string]int {
	out := map[string]int{}
	for id, m := range s.members {
		n := 0
		for topic, ps := range m.owned {
			if s.representative(topic) {
				n += len(ps)
			}
		}
		out[id] = n
	}
	return out
}

// ownedTasks returns the representative partitions each member owns.
func (s *sim) ownedTasks() map[string]map[topicPartition]bool {
	out := map[string]map[topicPartition]bool{}
	for id, m := range s.members {
		out[id] = map[topicPartition]bool{}
		for topic, ps := range m.owned {
			if s.representative(topic) {
				for _, p := range ps {
					out[id][topicPartition{topic, p}] = true
				}
			}
		}
	}
	return out
}

func (s *sim) representative(topic string) bool {
	for _, set := range s.sets {
		if slices.Contains(set, topic) {
			return slices.Min(set) == topic
		}
	}
	return true
}

func requireBalanced(t *testing.T, loads map[string]int) {
	t.Helper()
	vals := slices.Collect(maps.Values(loads))
	require.LessOrEqual(t, slices.Max(vals)-slices.Min(vals), 1, "unbalanced: %v", loads)
}

func TestPlanCoPartitionedAndBalanced(t *testing.T) {
	s := newSim([][]string{{"a", "b"}}, map[string]int32{"a": 4, "b": 4})
	s.join("m1")
	s.join("m2")
	require.Equal(t, 1, s.settle(t))
	require.Equal(t, map[string]int{"m1": 2, "m2": 2}, s.loads())
	for _, m := range s.members {
		require.Equal(t, m.owned["a"], m.owned["b"])
	}
}

func TestPlanIsSticky(t *testing.T) {
	s := newSim([][]string{{"a", "b"}}, map[string]int32{"a": 4, "b": 4})
	s.join("m1")
	s.join("m2")
	s.members["m1"].owned = map[string][]int32{"a": {1, 3}, "b": {1, 3}}
	s.members["m2"].owned = map[string][]int32{"a": {0, 2}, "b": {0, 2}}
	require.Equal(t, 1, s.settle(t))
	require.Equal(t, []int32{1, 3}, s.members["m1"].owned["a"])
	require.Equal(t, []int32{0, 2}, s.members["m2"].owned["b"])
}

func TestPlanMemberJoinsTwoPhase(t *testing.T) {
	s := newSim([][]string{{"a", "b"}}, map[string]int32{"a": 4, "b": 4})
	s.join("m1")
	s.settle(t)
	require.Equal(t, map[string]int{"m1": 4}, s.loads())

	s.join("m2")
	require.True(t, s.round(t), "first round revokes from m1")
	require.Equal(t, map[string]int{"m1": 2, "m2": 0}, s.loads(), "moving tasks are withheld")
	require.False(t, s.round(t), "second round hands them over")
	require.Equal(t, map[string]int{"m1": 2, "m2": 2}, s.loads())
	require.Equal(t, []int32{0, 1}, s.members["m1"].owned["a"], "m1 keeps what it had")
}

func TestPlanMemberLeaves(t *testing.T) {
	s := newSim([][]string{{"a", "b"}}, map[string]int32{"a": 6, "b": 6})
	s.join("m1")
	s.join("m2")
	s.join("m3")
	s.settle(t)
	before := map[string][]int32{}
	for id, m := range s.members {
		before[id] = m.owned["a"]
	}
	delete(s.members, "m3")
	require.Equal(t, 1, s.settle(t), "nothing to revoke: one round")
	requireBalanced(t, s.loads())
	for id, m := range s.members {
		for _, p := range before[id] {
			require.Contains(t, m.owned["a"], p, "%s kept its partitions", id)
		}
	}
}

func TestPlanSingletonsAndUnevenSets(t *testing.T) {
	// c is in no set; b has fewer partitions than a (Run rejects that for
	// a real group, but the plan must stay sane).
	s := newSim([][]string{{"a", "b"}}, map[string]int32{"a": 4, "b": 2, "c": 3})
	s.join("m1")
	s.join("m2")
	s.join("m3")
	s.settle(t)
	total := 0
	for _, m := range s.members {
		n := len(m.owned["a"]) + len(m.owned["c"])
		total += n
		require.LessOrEqual(t, n, 3)
		require.GreaterOrEqual(t, n, 2)
	}
	require.Equal(t, 7, total)
}

func TestPlanHeterogeneousSubscriptions(t *testing.T) {
	s := newSim([][]string{{"a", "b"}}, map[string]int32{"a": 2, "b": 2, "c": 2})
	s.join("m1", "a", "b")
	s.join("m2", "c")
	s.settle(t)
	require.Equal(t, map[string][]int32{"a": {0, 1}, "b": {0, 1}}, s.members["m1"].owned)
	require.Equal(t, map[string][]int32{"c": {0, 1}}, s.members["m2"].owned)
}

func TestPlanSetNoMemberCanTakeWholeFallsApart(t *testing.T) {
	s := newSim([][]string{{"a", "b"}}, map[string]int32{"a": 2, "b": 2})
	s.join("m1", "a")
	s.join("m2", "b")
	s.settle(t)
	require.Equal(t, map[string][]int32{"a": {0, 1}}, s.members["m1"].owned)
	require.Equal(t, map[string][]int32{"b": {0, 1}}, s.members["m2"].owned)
}

func TestPlanConflictingClaimsNewerGenerationWins(t *testing.T) {
	s := newSim([][]string{{"a", "b"}}, map[string]int32{"a": 2, "b": 2})
	s.join("m1")
	s.join("m2")
	s.members["m1"].owned = map[string][]int32{"a": {0}}
	s.members["m1"].gen = 3
	s.members["m2"].owned = map[string][]int32{"a": {0, 1}, "b": {1}}
	s.members["m2"].gen = 7
	// round checks that a/0 is never handed to anyone while both claim it
	s.settle(t)
	require.Equal(t, []int32{0}, s.members["m2"].owned["a"][:1], "newer claim kept")
	requireBalanced(t, s.loads())
}

func TestPlanNoMembersNoTopics(t *testing.T) {
	require.Empty(t, computePlan(nil, nil, map[string][]int32{"a": {0}}))
	require.Empty(t, computePlan(nil, map[string]planMember{"m": {topics: []string{"a"}}}, nil))
}

// TestPlanRandomChurn joins and removes members at random and checks, at
// every step, safety (round), completeness (settle), balance and that
// surviving members lose no more than balance requires.
func TestPlanRandomChurn(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			nParts := int32(1 + r.IntN(12))
			s := newSim([][]string{{"a", "b"}, {"c", "d", "e"}},
				map[string]int32{"a": nParts, "b": nParts, "c": 5, "d": 5, "e": 5, "f": int32(1 + r.IntN(4))})
			next := 0
			for step := range 12 {
				if len(s.members) == 0 || (len(s.members) < 6 && r.IntN(2) == 0) {
					next++
					s.join(fmt.Sprintf("m%02d", next))
				} else {
					ids := slices.Sorted(maps.Keys(s.members))
					delete(s.members, ids[r.IntN(len(ids))])
					if len(s.members) == 0 {
						continue
					}
				}
				before, owned := s.loads(), s.ownedTasks()
				s.settle(t)
				after, nowOwned := s.loads(), s.ownedTasks()
				requireBalanced(t, after)
				// A surviving member gives tasks away only to come down to
				// its new load: stickiness.
				for id := range s.members {
					if _, survived := before[id]; !survived {
						continue
					}
					lost := 0
					for k := range owned[id] {
						if !nowOwned[id][k] {
							lost++
						}
					}
					require.LessOrEqual(t, lost, max(0, before[id]-after[id]), "step %d member %s", step, id)
				}
			}
		})
	}
}

func TestStrategyPlanReadsSubscriptions(t *testing.T) {
	s := newCopartitionStrategy([][]string{{"a", "b"}}, nil, nil)
	require.Equal(t, BalanceStrategyName, s.Name())
	require.Equal(t, []sarama.RebalanceProtocol{sarama.RebalanceProtocolCooperative}, s.SupportedProtocols())

	ud, err := s.SubscriptionUserData(nil)
	require.NoError(t, err)
	require.Equal(t, int32(-1), decodeUserData(ud))
	s.OnAssignment(nil, 9)
	ud, _ = s.SubscriptionUserData(nil)
	require.Equal(t, int32(9), decodeUserData(ud))
	require.Equal(t, int32(-1), decodeUserData([]byte{7, 0, 0, 0, 1}), "unknown version")

	members := map[string]sarama.ConsumerGroupMemberMetadata{
		"old": {Version: 1, Topics: []string{"a", "b"}, UserData: encodeUserData(4, nil),
			OwnedPartitions: []*sarama.OwnedPartition{{Topic: "a", Partitions: []int32{0, 1}}, {Topic: "b", Partitions: []int32{0, 1}}}},
		"new": {Version: 1, Topics: []string{"a", "b"}},
	}
	plan, err := s.Plan(members, map[string][]int32{"a": {0, 1}, "b": {0, 1}})
	require.NoError(t, err)
	// one task moves to "new"; it is withheld this round
	require.Len(t, plan["old"]["a"], 1)
	require.Equal(t, plan["old"]["a"], plan["old"]["b"])
	require.Empty(t, plan["new"])
}

// Every assignment the leader hands out carries every member's data of
// the generation, so that a member's address stays readable from the
// assignments while the group rebalances.
func TestStrategyAssignmentsCarryEveryMembersData(t *testing.T) {
	s := newCopartitionStrategy(nil, nil, nil)
	members := map[string]sarama.ConsumerGroupMemberMetadata{
		"a":    {Version: 1, Topics: []string{"t"}, UserData: encodeUserData(3, []byte("10.0.0.1:80"))},
		"b":    {Version: 1, Topics: []string{"t"}, UserData: encodeUserData(-1, []byte("10.0.0.2:80"))},
		"bare": {Version: 1, Topics: []string{"t"}, UserData: encodeUserData(-1, nil)},
	}
	plan, err := s.Plan(members, map[string][]int32{"t": {0, 1, 2}})
	require.NoError(t, err)
	want := map[string][]byte{"a": []byte("10.0.0.1:80"), "b": []byte("10.0.0.2:80"), "bare": nil}
	for id, topics := range plan {
		ud, err := s.AssignmentData(id, topics, 4)
		require.NoError(t, err)
		require.Equal(t, want, decodePeers(ud), id)
	}
	big := map[string]sarama.ConsumerGroupMemberMetadata{}
	for i := range 100 {
		big[fmt.Sprintf("member-%03d-0123456789abcdef0123456789abcdef", i)] = sarama.ConsumerGroupMemberMetadata{
			Version: 1, Topics: []string{"t"}, UserData: encodeUserData(-1, []byte("10.0.0.100:8080"))}
	}
	plan, err = s.Plan(big, map[string][]int32{"t": {0, 1, 2}})
	require.NoError(t, err)
	for id, topics := range plan {
		ud, err := s.AssignmentData(id, topics, 5)
		require.NoError(t, err)
		require.Nil(t, ud, "a group this large gets no addresses in its assignments")
	}
	require.Nil(t, decodePeers(nil))
	require.Nil(t, decodePeers([]byte{9, 1, 'a', 0}), "unknown version")
	require.Nil(t, decodePeers(encodePeers(want)[:5]), "truncated")
}
