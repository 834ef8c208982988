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
// reads it back with the members' assignments (each of which carries
// every member's data), and OnAssignment sees each assignment's
// generation.
func TestGroupMembersAdvertiseData(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
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
				// every assignment carries both members' data
				if len(m.Peers) != 2 || string(m.Peers[ms[0].ID]) != string(ms[0].Data) || string(m.Peers[ms[1].ID]) != string(ms[1].Data) {
					return false
				}
			}
			return byData["10.0.0.1:8080"] == 2 && byData["10.0.0.2:8080"] == 2
		}, waitFor, 50*time.Millisecond, "both members with their data and two partitions each")
		require.Positive(t, <-gens, "OnAssignment got the generation")
	})
}

// Admin.Heartbeat tells a member of the group from one the coordinator
// does not know (a member removed after a stall looks like that).
func TestHeartbeatTellsAMemberThatIsGone(t *testing.T) {
	eachClient(t, func(t *testing.T, env *kafkatest.Env) {
		topic, group := kafkatest.Topic(t), kafkatest.GroupID(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		sessions := make(chan kafka.GroupMetadata, 1)
		member(t, groupConfig(env, group, topic), kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
			select {
			case sessions <- c.GroupMetadata():
			default:
			}
			for range c.Records() {
			}
			return nil
		}))
		var m kafka.GroupMetadata
		select {
		case m = <-sessions:
		case <-time.After(waitFor):
			t.Fatal("no claim")
		}
		admin, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer admin.Close()
		ctx := context.Background()
		require.NoError(t, admin.Heartbeat(ctx, m))

		gone := m
		gone.MemberID = "weir-no-such-member"
		err = admin.Heartbeat(ctx, gone)
		require.Error(t, err)
		require.True(t, kafka.MemberGone(err), "%v", err)
	})
}
