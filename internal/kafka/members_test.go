package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// Members advertise their data in their subscription; any admin client
// reads it back with the members' assignments, and OnAssignment sees each
// assignment's generation.
func TestGroupMembersAdvertiseData(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topic, group := kafkatest.Topic(t), kafkatest.GroupID(t)
		kafkatest.CreateTopic(t, env, topic, 4)
		hold := kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			for range c.Records() {
			}
			return nil
		})
		gens := make(chan int32, 16)
		a := groupConfig(env, group, topic)
		a.MemberData = []byte("10.0.0.1:8080")
		a.OnAssignment = func(g int32) {
			select {
			case gens <- g:
			default:
			}
		}
		b := groupConfig(env, group, topic)
		b.MemberData = []byte("10.0.0.2:8080")
		member(t, a, hold)
		member(t, b, hold)

		admin, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer admin.Close()
		require.Eventually(t, func() bool {
			ms, err := admin.GroupMembers(context.Background(), group)
			if err != nil || len(ms) != 2 {
				return false
			}
			byData := map[string]int{}
			for _, m := range ms {
				byData[string(m.Data)] = len(m.Assigned[topic])
			}
			return byData["10.0.0.1:8080"] == 2 && byData["10.0.0.2:8080"] == 2
		}, waitFor, 50*time.Millisecond, "both members with their data and two partitions each")
		require.Positive(t, <-gens, "OnAssignment got the generation")
	})
}
