package kafka

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/IBM/sarama"
)

// BalanceStrategyName is the name under which weir's assignor joins a
// group. Every member of a weir application offers only this strategy.
const BalanceStrategyName = "weir-copartitioned"

// copartitionStrategy is weir's sarama.BalanceStrategy: tasks (one
// partition number of one co-partitioned set of topics) are spread over the
// members, balanced and sticky, under the cooperative rebalance protocol.
// The plan itself is computed by [computePlan].
//
// Why a strategy of its own: sarama's sticky and cooperative-sticky
// strategies balance partitions topic by topic, so partition p of two
// co-partitioned topics may land on two members, and a join of stream and
// table partition p would then see half its input.
//
// Why cooperative: sarama v1.61.1 lets a custom strategy take part in the
// cooperative protocol by implementing RebalanceProtocolBalanceStrategy. It
// then sends each member's owned partitions in the JoinGroup subscription
// (version >= 1, as protocolVersion >= 2.4), keeps retained claims running
// across rebalances, closes the Messages channel of a revoked claim only,
// and rejoins at once when a rebalance revoked anything. What it leaves to
// the strategy — as Java leaves it to the assignor — is to withhold a
// partition from its new owner until the old owner has released it;
// computePlan does that task by task. Only the cooperative protocol is
// declared: a group mixing weir with eager members is a configuration error
// rather than a silent downgrade to stop-the-world rebalances.
//
// Subscription user data carries the generation of the member's last
// assignment (as Java's CooperativeStickyAssignor does), so that claims of
// a member that missed a generation lose to current ones.
//
// After the generation comes the member's own data (GroupConfig.MemberData:
// the HTTP address interactive queries forward to), which any client reads
// back with [Admin.GroupMembers].
//
// A copartitionStrategy is stateful (the generation): one per group
// member, never shared.
type copartitionStrategy struct {
	sets       [][]string
	memberData []byte
	onAssign   func(generation int32)
	generation atomic.Int32
}

var (
	_ sarama.BalanceStrategy                     = (*copartitionStrategy)(nil)
	_ sarama.RebalanceProtocolBalanceStrategy    = (*copartitionStrategy)(nil)
	_ sarama.SubscriptionUserDataBalanceStrategy = (*copartitionStrategy)(nil)
	_ sarama.OnAssignmentBalanceStrategy         = (*copartitionStrategy)(nil)
)

func newCopartitionStrategy(sets [][]string, memberData []byte, onAssign func(int32)) *copartitionStrategy {
	s := &copartitionStrategy{sets: sets, memberData: memberData, onAssign: onAssign}
	s.generation.Store(-1)
	return s
}

// Name implements sarama.BalanceStrategy.
func (s *copartitionStrategy) Name() string { return BalanceStrategyName }

// SupportedProtocols implements sarama.RebalanceProtocolBalanceStrategy.
func (s *copartitionStrategy) SupportedProtocols() []sarama.RebalanceProtocol {
	return []sarama.RebalanceProtocol{sarama.RebalanceProtocolCooperative}
}

// Plan implements sarama.BalanceStrategy. It runs on the group leader.
func (s *copartitionStrategy) Plan(members map[string]sarama.ConsumerGroupMemberMetadata, topics map[string][]int32) (sarama.BalanceStrategyPlan, error) {
	in := make(map[string]planMember, len(members))
	for id, meta := range members {
		pm := planMember{
			topics:     meta.Topics,
			owned:      make(map[string][]int32, len(meta.OwnedPartitions)),
			generation: decodeUserData(meta.UserData),
		}
		if meta.Version >= 2 && meta.GenerationID >= 0 {
			pm.generation = meta.GenerationID
		}
		for _, op := range meta.OwnedPartitions {
			if op != nil {
				pm.owned[op.Topic] = append(pm.owned[op.Topic], op.Partitions...)
			}
		}
		in[id] = pm
	}
	plan := sarama.BalanceStrategyPlan{}
	for id, byTopic := range computePlan(s.sets, in, topics) {
		for t, ps := range byTopic {
			plan.Add(id, t, ps...)
		}
	}
	return plan, nil
}

// AssignmentData implements sarama.BalanceStrategy; assignments carry no
// user data.
func (s *copartitionStrategy) AssignmentData(string, map[string][]int32, int32) ([]byte, error) {
	return nil, nil
}

// SubscriptionUserData implements sarama.SubscriptionUserDataBalanceStrategy.
func (s *copartitionStrategy) SubscriptionUserData([]string) ([]byte, error) {
	return encodeUserData(s.generation.Load(), s.memberData), nil
}

// OnAssignment implements sarama.OnAssignmentBalanceStrategy.
func (s *copartitionStrategy) OnAssignment(_ *sarama.ConsumerGroupMemberAssignment, generationID int32) {
	s.generation.Store(generationID)
	if s.onAssign != nil {
		s.onAssign(generationID)
	}
}

// userDataVersion prefixes the subscription user data: version byte, then
// the generation as a big-endian int32, then the member data (any length,
// possibly none).
const userDataVersion = 1

func encodeUserData(generation int32, memberData []byte) []byte {
	b := make([]byte, 5, 5+len(memberData))
	b[0] = userDataVersion
	binary.BigEndian.PutUint32(b[1:], uint32(generation))
	return append(b, memberData...)
}

// decodeMemberData returns the member data of subscription user data, nil
// for anything it does not know.
func decodeMemberData(b []byte) []byte {
	if len(b) <= 5 || b[0] != userDataVersion {
		return nil
	}
	return b[5:]
}

// decodeUserData returns the generation, -1 for anything it does not know.
func decodeUserData(b []byte) int32 {
	if len(b) < 5 || b[0] != userDataVersion {
		return -1
	}
	return int32(binary.BigEndian.Uint32(b[1:5]))
}
