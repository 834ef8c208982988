package kafka_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// A franz-go claim the member lost (its heartbeat answered
// UNKNOWN_MEMBER_ID) does not take the membership the member rejoins
// with: a transactional offset commit of the lost claim's work, made
// after the rejoin (an engine whose batch was still running), carries the
// membership it lost and the broker fences it. Carrying the live one
// committed offsets for partitions other members had been processing
// meanwhile, and the member's next epochs from its stale position:
// duplicates (chaos seed 731530, kafka micro-batch exactly-once).
func TestFranzLostClaimKeepsItsMembership(t *testing.T) {
	env := kafkatest.Kfake(t, embeddedDefaults)
	topic, group := kafkatest.Topic(t), kafkatest.GroupID(t)
	kafkatest.CreateTopic(t, env, topic, 1)
	admin, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })

	cfg := groupConfig(env, group, topic)
	cfg.Client = kafka.ClientFranz
	claims := make(chan kafka.Claim, 4)
	member(t, cfg, kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
		claims <- c
		for range c.Records() {
		}
		return nil
	}))
	next := func() kafka.Claim {
		t.Helper()
		select {
		case c := <-claims:
			return c
		case <-time.After(waitFor):
			t.Fatal("no claim")
			return nil
		}
	}
	inGeneration := func(m kafka.GroupMetadata) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		in, err := admin.InGeneration(ctx, m)
		require.NoError(t, err)
		return in
	}
	first := next()
	lostAs := first.GroupMetadata()
	require.True(t, inGeneration(lostAs))

	// The coordinator answers the member's next heartbeat UNKNOWN_MEMBER_ID:
	// kgo calls onLost and joins again.
	var refused atomic.Bool
	env.Cluster().ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.HeartbeatRequest)
		if r.Group != group || r.MemberID != lostAs.MemberID || refused.Swap(true) {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.Version = r.Version
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	second := next()
	live := second.GroupMetadata()
	require.True(t, inGeneration(live))
	require.Greater(t, live.GenerationID, lostAs.GenerationID)

	got := first.GroupMetadata()
	require.Equal(t, lostAs, got, "the lost claim took the member's new membership")
	require.False(t, inGeneration(got))
	require.Equal(t, lostAs.GenerationID, first.GenerationID())
	require.Equal(t, lostAs.MemberID, first.MemberID())
}
