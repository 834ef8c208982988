package kafka

import (
	"fmt"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// TestAuthorizationErrorsNameTheACL: a refusal by the broker's authorizer
// says which ACL is missing, and a fetch refused that way is an
// error Run stops on, not one the group reports and retries.
func TestAuthorizationErrorsNameTheACL(t *testing.T) {
	fetch := &sarama.ConsumerError{Topic: "in", Partition: 2, Err: sarama.ErrTopicAuthorizationFailed}
	err := wrapConsumerError("app", fetch)
	require.ErrorIs(t, err, sarama.ErrTopicAuthorizationFailed)
	require.ErrorContains(t, err, `in/2`)
	require.ErrorContains(t, err, `an ACL granting Read on topic "in" is needed`)

	group := fmt.Errorf("join: %w", sarama.ErrGroupAuthorizationFailed)
	err = wrapConsumerError("app", group)
	require.ErrorIs(t, err, sarama.ErrGroupAuthorizationFailed)
	require.ErrorContains(t, err, `an ACL granting Read on group "app" is needed`)

	other := &sarama.ConsumerError{Topic: "in", Partition: 0, Err: sarama.ErrNotLeaderForPartition}
	require.NotContains(t, wrapConsumerError("app", other).Error(), "ACL")
	require.True(t, fatalGroupError(wrapConsumerError("app", group)))
}
