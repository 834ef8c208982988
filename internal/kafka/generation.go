package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"
)

// InGeneration reports whether m's member is still in its group in m's
// generation: false when the coordinator no longer knows the member
// (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) or the group has moved to a newer
// generation (ILLEGAL_GENERATION); true when the heartbeat is accepted or
// the group is rebalancing from that generation (REBALANCE_IN_PROGRESS).
// Other answers, and a coordinator that cannot be reached, are errors. It
// is one Heartbeat request; unlike Heartbeat, an older generation is an
// answer, not success: a task acquired in it must not take a newer
// owner's writer generation (engine/tasks).
func (a *Admin) InGeneration(ctx context.Context, m GroupMetadata) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("kafka: heartbeat: %w", err)
	}
	req := &sarama.HeartbeatRequest{
		Version: groupRequestVersion(4, 3, 2),
		GroupId: m.GroupID, GenerationId: m.GenerationID, MemberId: m.MemberID,
	}
	if m.InstanceID != "" {
		req.GroupInstanceId = &m.InstanceID
	}
	coord, err := a.client.Coordinator(m.GroupID)
	if err != nil {
		_ = a.client.RefreshCoordinator(m.GroupID)
		return false, fmt.Errorf("kafka: heartbeat: coordinator of group %q: %w", m.GroupID, err)
	}
	resp, err := coord.Heartbeat(req)
	if err != nil {
		_ = a.client.RefreshCoordinator(m.GroupID)
		return false, fmt.Errorf("kafka: heartbeat: %w", err)
	}
	switch {
	case errors.Is(resp.Err, sarama.ErrNoError), errors.Is(resp.Err, sarama.ErrRebalanceInProgress):
		return true, nil
	case errors.Is(resp.Err, sarama.ErrUnknownMemberId), errors.Is(resp.Err, sarama.ErrFencedInstancedId),
		errors.Is(resp.Err, sarama.ErrIllegalGeneration):
		return false, nil
	case errors.Is(resp.Err, sarama.ErrNotCoordinatorForConsumer):
		_ = a.client.RefreshCoordinator(m.GroupID)
	}
	return false, fmt.Errorf("kafka: heartbeat: %w", resp.Err)
}
