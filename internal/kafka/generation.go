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
	answer, err := a.heartbeat(ctx, m)
	switch {
	case err != nil:
		return false, err
	case errors.Is(answer, sarama.ErrNoError), errors.Is(answer, sarama.ErrRebalanceInProgress):
		return true, nil
	case errors.Is(answer, sarama.ErrUnknownMemberId), errors.Is(answer, sarama.ErrFencedInstancedId),
		errors.Is(answer, sarama.ErrIllegalGeneration):
		return false, nil
	}
	return false, fmt.Errorf("kafka: heartbeat: %w", answer)
}
