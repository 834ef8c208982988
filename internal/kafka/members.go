package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"

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
	d, err := a.describeGroup(ctx, group)
	if err != nil {
		return nil, err
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

// describeGroup reads group's description from its coordinator. A
// coordinator that died or moved — the connection broke (EOF, reset,
// refused) or it answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE —
// is looked up again at once and asked once more: the broken connection
// is closed first, since sarama keeps a broker's dead connection, which
// fails every later request with the same EOF until something closes it,
// and the group is found again (FindCoordinator) rather than after the
// client's next metadata refresh. While the cluster has not moved the
// group yet (the dead broker still leads its __consumer_offsets
// partition) the second try fails too, and the caller decides what to
// serve meanwhile.
//
// sarama takes no context: ctx is checked before each try, and a request
// already sent is bounded by the client's network timeouts.
func (a *Admin) describeGroup(ctx context.Context, group string) (*sarama.GroupDescription, error) {
	var err error
	for range 2 {
		if cerr := ctx.Err(); cerr != nil {
			if err != nil {
				return nil, err
			}
			return nil, cerr
		}
		var d *sarama.GroupDescription
		d, err = a.describeOnce(group)
		if err == nil {
			return d, nil
		}
		if !coordinatorGone(err) {
			return nil, err
		}
		// After the second failure too: the next call starts from the
		// coordinator as the cluster names it then.
		a.refindCoordinator(group, err)
	}
	return nil, err
}

// describeOnce sends one DescribeGroups request to group's coordinator as
// the client knows it.
func (a *Admin) describeOnce(group string) (*sarama.GroupDescription, error) {
	descs, err := a.admin.DescribeConsumerGroups([]string{group})
	if err != nil {
		return nil, fmt.Errorf("kafka: describe group %q: %w", group, err)
	}
	if len(descs) != 1 {
		return nil, fmt.Errorf("kafka: describe group %q: %d descriptions", group, len(descs))
	}
	d := descs[0]
	if d.Err != sarama.ErrNoError && !errors.Is(d.Err, sarama.ErrNoError) {
		return nil, fmt.Errorf("kafka: describe group %q: %w", group, d.Err)
	}
	return d, nil
}

// refindCoordinator forgets group's coordinator after err: it closes the
// connection a transport error broke (sarama reopens it on the next use)
// and asks the cluster for the coordinator again.
func (a *Admin) refindCoordinator(group string, err error) {
	if transportError(err) {
		if b, cerr := a.client.Coordinator(group); cerr == nil {
			_ = b.Close()
		}
	}
	_ = a.client.RefreshCoordinator(group)
}

// coordinatorGone reports whether err says the group's coordinator died
// or moved: a broken connection, or the broker's own word.
func coordinatorGone(err error) bool {
	return transportError(err) ||
		errors.Is(err, sarama.ErrNotCoordinatorForConsumer) ||
		errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable)
}

// transportError reports whether err is a connection's, not a broker's
// answer.
func transportError(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, sarama.ErrNotConnected) || errors.Is(err, sarama.ErrOutOfBrokers) ||
		errors.As(err, &ne)
}
