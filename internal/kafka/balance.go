package kafka

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
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
// Each assignment the leader hands out carries every member's data as the
// leader read it for that generation (as Kafka Streams' AssignmentInfo
// carries every host's endpoint): Apache Kafka describes a rebalancing
// group's members with their last assignment but without their
// subscriptions, so the addresses stay readable from the assignments
// ([GroupMember.Peers]) while the group rebalances — every member of the
// last completed generation, a newly joined owner too. A group so large
// that they would add more than maxPeersBytes to a generation gets none.
//
// A copartitionStrategy is stateful (the generation): one per group
// member, never shared.
type copartitionStrategy struct {
	sets       [][]string
	memberData []byte
	onAssign   func(generation int32)
	generation atomic.Int32
	// replicas configures standbys and warm-ups (plan_standby.go).
	replicas ReplicaConfig
	// log, if set, receives the leader's plans at Debug level.
	log *slog.Logger

	// assigned is the assignment user data of each member of the
	// generation the leader planned last (encodeAssignment: every member's
	// data, the member's replicas), set by Plan and read by AssignmentData
	// right after it.
	mu       sync.Mutex
	assigned map[string][]byte
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
	peers := make(map[string][]byte, len(members))
	txnIDs := make([]string, 0, len(members))
	for id, meta := range members {
		sub := decodeSubscription(meta.UserData)
		peers[id] = sub.memberData
		txnIDs = append(txnIDs, sub.txnID)
		pm := newPlanMember(meta.Topics, len(meta.OwnedPartitions), sub, meta.Version, meta.GenerationID)
		for _, op := range meta.OwnedPartitions {
			if op != nil {
				pm.owned[op.Topic] = append(pm.owned[op.Topic], op.Partitions...)
			}
		}
		in[id] = pm
	}
	enc := encodePeers(peers)
	if len(enc)*len(members) > maxPeersBytes {
		enc = nil // a group too large: the addresses come from subscriptions only
	}
	a := computeAssignment(s.sets, in, topics, s.replicas.settings())
	txnIDs = txnIDsOf(txnIDs, len(members))
	assigned := make(map[string][]byte, len(members))
	for id := range members {
		assigned[id] = encodeAssignment(enc, a.standby[id], a.warmup[id], txnIDs...)
		if s.log != nil {
			s.log.Debug("weir: assignor plan", "member", id, "settings", fmt.Sprintf("%+v", s.replicas.settings()), "owned", in[id].owned, "lags", in[id].lags,
				"assigned", a.plan[id], "standby", a.standby[id], "warmup", a.warmup[id])
		}
	}
	s.mu.Lock()
	s.assigned = assigned
	s.mu.Unlock()
	// Every member gets an assignment, one with no partitions too: sarama
	// sends none to a member absent from the plan, and its replicas (a
	// new member's warm-ups, say) would not reach it.
	plan := sarama.BalanceStrategyPlan{}
	for id := range members {
		plan[id] = map[string][]int32{}
	}
	for id, byTopic := range a.plan {
		for t, ps := range byTopic {
			plan.Add(id, t, ps...)
		}
	}
	return plan, nil
}

// AssignmentData implements sarama.BalanceStrategy: every assignment of
// the generation Plan just planned carries the data of all its members
// and the member's standby and warm-up tasks (encodeAssignment).
func (s *copartitionStrategy) AssignmentData(member string, _ map[string][]int32, _ int32) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.assigned[member], nil
}

// SubscriptionUserData implements sarama.SubscriptionUserDataBalanceStrategy.
func (s *copartitionStrategy) SubscriptionUserData([]string) ([]byte, error) {
	sub := subscription{generation: s.generation.Load(), memberData: s.memberData, txnID: s.replicas.Departures.TransactionalID}
	if s.replicas.Lags != nil {
		sub.lags = s.replicas.Lags()
	}
	if s.replicas.Sizes != nil {
		sub.sizes = s.replicas.Sizes()
	}
	return encodeSubscription(sub), nil
}

// OnAssignment implements sarama.OnAssignmentBalanceStrategy.
func (s *copartitionStrategy) OnAssignment(as *sarama.ConsumerGroupMemberAssignment, generationID int32) {
	var a memberAssignment
	if as != nil {
		a = decodeAssignment(as.UserData)
	}
	if s.replicas.OnAssigned != nil {
		s.replicas.OnAssigned(a.standby, a.warmup)
	}
	s.replicas.Departures.members(a.txnIDs)
	s.generation.Store(generationID)
	if s.onAssign != nil {
		s.onAssign(generationID)
	}
}

// userDataVersion prefixes the subscription user data: version byte, then
// the generation as a big-endian int32, then the member data (any length,
// possibly none).
const userDataVersion = 1

// (userdata.go encodes version 2, with the member's task lags).
func encodeUserData(generation int32, memberData []byte) []byte {
	b := make([]byte, 5, 5+len(memberData))
	b[0] = userDataVersion
	binary.BigEndian.PutUint32(b[1:], uint32(generation))
	return append(b, memberData...)
}

// decodeMemberData returns the member data of subscription user data
// (version 1 or 2), nil for anything it does not know.
func decodeMemberData(b []byte) []byte { return decodeSubscription(b).memberData }

// decodeUserData returns the generation of subscription user data
// (version 1 or 2), -1 for anything it does not know.
func decodeUserData(b []byte) int32 { return decodeSubscription(b).generation }

// maxPeersBytes bounds what the addresses add to a generation's
// assignments in all (each carries every member's, so they grow with the
// square of the group's size): the coordinator stores the assignments in
// one record of __consumer_offsets, at most 1 MiB by default. About 50
// members with 80-byte ids and addresses fit.
const maxPeersBytes = 256 << 10

// peersVersion prefixes the assignment user data: version byte, then per
// member (sorted by id) its id and its data, each as a uvarint length and
// the bytes.
const peersVersion = 1

// encodePeers encodes the member data of a generation's members, by id.
func encodePeers(peers map[string][]byte) []byte {
	b := []byte{peersVersion}
	for _, id := range slices.Sorted(maps.Keys(peers)) {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
		b = binary.AppendUvarint(b, uint64(len(peers[id])))
		b = append(b, peers[id]...)
	}
	return b
}

// decodePeers returns the member data by member id that assignment user
// data carries; nil for data it does not know (another assignor's, an
// older weir's, or truncated).
func decodePeers(b []byte) map[string][]byte {
	if len(b) > 0 && b[0] == assignmentVersion2 {
		return decodeAssignment(b).peers
	}
	if len(b) == 0 || b[0] != peersVersion {
		return nil
	}
	b = b[1:]
	out := map[string][]byte{}
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, false
		}
		v := b[k : k+int(n)]
		b = b[k+int(n):]
		return v, true
	}
	for len(b) > 0 {
		id, ok := next()
		if !ok {
			return nil
		}
		data, ok := next()
		if !ok {
			return nil
		}
		if len(data) == 0 {
			data = nil
		}
		out[string(id)] = data
	}
	return out
}
