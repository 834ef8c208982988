package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/sarama"
)

// GroupMember is one member of a consumer group as the group coordinator
// describes it: its id, the data it advertised (GroupConfig.MemberData) and
// the partitions assigned to it in the current generation.
type GroupMember struct {
	ID   string
	Data []byte
	// Reported: the coordinator reported the member's subscription, so
	// Data is what the member advertised (nil: nothing). Apache Kafka
	// reports subscriptions only while the group is stable; during a
	// rebalance (PreparingRebalance, CompletingRebalance) it lists the
	// members with their current assignment but without subscription, and
	// Data is unknown, not empty.
	Reported bool
	Assigned map[string][]int32
	// Peers is the data of every member of the generation the member's
	// assignment is of, by member id, as the leader's assignor read their
	// subscriptions and wrote them into each assignment; nil if the
	// assignment carries none (an empty one, none described, or a group
	// too large for every member's data in each assignment). It stays
	// readable while the group rebalances, when Data does not.
	Peers map[string][]byte
	// Standbys and Warmups are the tasks whose stores the member keeps
	// caught up without running them, as its assignment carries them
	// (WithStandbyReplicas, warm-ups before a task moves).
	Standbys, Warmups []TaskID
}

// GroupMembers describes the members of a weir consumer group (one whose
// members subscribe with weir's assignor). While the group rebalances the
// coordinator reports members without subscriptions (Reported false):
// Apache Kafka 4 with their assignment of the last generation, kfake
// without; a partition withheld by the cooperative protocol belongs to no
// member for a moment.
func (a *Admin) GroupMembers(ctx context.Context, group string) ([]GroupMember, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	descs, err := a.admin.DescribeConsumerGroups([]string{group})
	if err != nil {
		_ = a.client.RefreshCoordinator(group)
		return nil, fmt.Errorf("kafka: describe group %q: %w", group, err)
	}
	if len(descs) != 1 {
		return nil, fmt.Errorf("kafka: describe group %q: %d descriptions", group, len(descs))
	}
	d := descs[0]
	if d.Err != sarama.ErrNoError && !errors.Is(d.Err, sarama.ErrNoError) {
		return nil, fmt.Errorf("kafka: describe group %q: %w", group, d.Err)
	}
	out := make([]GroupMember, 0, len(d.Members))
	for id, m := range d.Members {
		gm := GroupMember{ID: id, Assigned: map[string][]int32{}}
		// weir's members offer one protocol, so the metadata is its
		// subscription whether or not the coordinator names the protocol
		// (it may not, mid-rebalance); others' user data decodes to nil.
		// A subscription that does not decode (not a weir member's) was
		// reported with no data.
		gm.Reported = len(m.MemberMetadata) > 0
		if meta, err := m.GetMemberMetadata(); err == nil && meta != nil {
			gm.Data = decodeMemberData(meta.UserData)
		}
		as, err := m.GetMemberAssignment()
		if err != nil {
			return nil, fmt.Errorf("kafka: group %q member %q: assignment: %w", group, id, err)
		}
		if as != nil {
			a := decodeAssignment(as.UserData)
			gm.Peers, gm.Standbys, gm.Warmups = a.peers, a.standby, a.warmup
			for t, ps := range as.Topics {
				gm.Assigned[t] = slices.Clone(ps)
			}
		}
		out = append(out, gm)
	}
	slices.SortFunc(out, func(a, b GroupMember) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
