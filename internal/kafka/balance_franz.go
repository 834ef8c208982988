package kafka

import (
	"fmt"
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franzBalancer is weir's assignor as a kgo.GroupBalancer: the plan of
// [computePlan] (co-partitioned tasks, sticky, balanced, cooperative), the
// subscription user data of [encodeUserData] and the peers of
// [encodePeers] in every assignment — byte for byte what the sarama
// strategy ([copartitionStrategy]) sends, so that members of either
// client can share a group (a rolling change of client) and
// [Admin.GroupMembers] reads both.
//
// It declares the cooperative protocol only, as the sarama strategy does.
// Subscriptions are kmsg.ConsumerMemberMetadata version 2 (owned
// partitions and the generation they are of) with [encodeSubscription]'s
// user data (the member's data and its task lags); assignments are
// version 0 with [encodeAssignment]'s user data (the peers, the member's
// standby and warm-up tasks), as the sarama strategy writes them. Every
// member gets an assignment, one without partitions too, so that a new
// member's warm-ups reach it.
//
// A franzBalancer is one member's, never shared.
type franzBalancer struct {
	sets       [][]string
	memberData []byte
	// replicas configures standbys and warm-ups (plan_standby.go).
	replicas ReplicaConfig
	log      *slog.Logger
}

var _ kgo.GroupBalancer = (*franzBalancer)(nil)

func newFranzBalancer(sets [][]string, memberData []byte, replicas ReplicaConfig, log *slog.Logger) *franzBalancer {
	return &franzBalancer{sets: sets, memberData: memberData, replicas: replicas, log: log}
}

// ProtocolName implements kgo.GroupBalancer.
func (b *franzBalancer) ProtocolName() string { return BalanceStrategyName }

// IsCooperative implements kgo.GroupBalancer.
func (b *franzBalancer) IsCooperative() bool { return true }

// JoinGroupMetadata implements kgo.GroupBalancer: the topics, the
// partitions the member owns and their generation, and the user data
// (generation and member data) the sarama strategy sends.
func (b *franzBalancer) JoinGroupMetadata(topics []string, current map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 2
	meta.Topics = topics
	sub := subscription{generation: generation, memberData: b.memberData, txnID: b.replicas.Departures.TransactionalID}
	if b.replicas.Lags != nil {
		sub.lags = b.replicas.Lags()
	}
	if b.replicas.Sizes != nil {
		sub.sizes = b.replicas.Sizes()
	}
	meta.UserData = encodeSubscription(sub)
	meta.Generation = generation
	for _, t := range sortedKeys(current) {
		owned := kmsg.NewConsumerMemberMetadataOwnedPartition()
		owned.Topic = t
		owned.Partitions = current[t]
		meta.OwnedPartitions = append(meta.OwnedPartitions, owned)
	}
	return meta.AppendTo(nil)
}

// ParseSyncAssignment implements kgo.GroupBalancer. It is called once per
// assignment this member receives: the standby and warm-up tasks its user
// data carries go to ReplicaConfig.OnAssigned.
func (b *franzBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	parts, err := kgo.ParseConsumerSyncAssignment(assignment)
	if err != nil {
		return nil, err
	}
	var as kmsg.ConsumerMemberAssignment
	var a memberAssignment
	if len(assignment) > 0 && as.ReadFrom(assignment) == nil {
		a = decodeAssignment(as.UserData)
	}
	if b.replicas.OnAssigned != nil {
		b.replicas.OnAssigned(a.standby, a.warmup)
	}
	b.replicas.Departures.members(a.txnIDs)
	return parts, nil
}

// MemberBalancer implements kgo.GroupBalancer. It runs on the group
// leader.
func (b *franzBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	mb := &franzMemberBalancer{b: b, in: make(map[string]planMember, len(members)), peers: make(map[string][]byte, len(members))}
	topics := make(map[string]struct{})
	for _, m := range members {
		if _, dup := mb.in[m.MemberID]; dup {
			continue // a broker listing a member twice: keep the first
		}
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			return nil, nil, fmt.Errorf("kafka: member %q: subscription: %w", m.MemberID, err)
		}
		sub := decodeSubscription(meta.UserData)
		pm := newPlanMember(meta.Topics, len(meta.OwnedPartitions), sub, meta.Version, meta.Generation)
		for _, op := range meta.OwnedPartitions {
			pm.owned[op.Topic] = append(pm.owned[op.Topic], op.Partitions...)
		}
		for _, t := range meta.Topics {
			topics[t] = struct{}{}
		}
		mb.in[m.MemberID] = pm
		mb.peers[m.MemberID] = sub.memberData
		mb.txnIDs = append(mb.txnIDs, sub.txnID)
		mb.order = append(mb.order, m.MemberID)
	}
	return mb, topics, nil
}

// franzMemberBalancer is one generation's balancing on the leader.
type franzMemberBalancer struct {
	b     *franzBalancer
	in    map[string]planMember
	peers map[string][]byte
	order []string
	// txnIDs are the members' transactional ids (txnIDsOf sorts them).
	txnIDs []string
}

// Balance implements kgo.GroupMemberBalancer: computePlan over every
// partition of topics (topic -> partition count).
func (mb *franzMemberBalancer) Balance(topics map[string]int32) kgo.IntoSyncAssignment {
	parts := make(map[string][]int32, len(topics))
	for t, n := range topics {
		ps := make([]int32, n)
		for i := range ps {
			ps[i] = int32(i)
		}
		parts[t] = ps
	}
	peers := encodePeers(mb.peers)
	if len(peers)*len(mb.in) > maxPeersBytes {
		peers = nil // a group too large: the addresses come from subscriptions only
	}
	settings := mb.b.replicas.settings()
	a := computeAssignment(mb.b.sets, mb.in, parts, settings)
	txnIDs := txnIDsOf(mb.txnIDs, len(mb.order))
	data := make(map[string][]byte, len(mb.order))
	for _, id := range mb.order {
		data[id] = encodeAssignment(peers, a.standby[id], a.warmup[id], txnIDs...)
		if mb.b.log != nil {
			mb.b.log.Debug("weir: assignor plan", "member", id, "settings", fmt.Sprintf("%+v", settings), "owned", mb.in[id].owned,
				"lags", mb.in[id].lags, "assigned", a.plan[id], "standby", a.standby[id], "warmup", a.warmup[id])
		}
	}
	return franzPlan{plan: a.plan, members: mb.order, data: data}
}

// franzPlan is a computed plan, encoded for SyncGroup.
type franzPlan struct {
	plan    map[string]map[string][]int32
	members []string
	// data is each member's assignment user data (encodeAssignment).
	data map[string][]byte
}

// IntoSyncAssignment implements kgo.IntoSyncAssignment: one assignment per
// member, sorted by member id, each with its user data — a member without
// partitions too (its replicas), as the sarama strategy sends.
func (p franzPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	ids := slices.Sorted(slices.Values(p.members))
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(ids))
	for _, id := range ids {
		var as kmsg.ConsumerMemberAssignment
		for _, t := range sortedKeys(p.plan[id]) {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic = t
			at.Partitions = p.plan[id][t]
			as.Topics = append(as.Topics, at)
		}
		as.UserData = p.data[id]
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID = id
		sa.MemberAssignment = as.AppendTo(nil)
		out = append(out, sa)
	}
	return out
}
