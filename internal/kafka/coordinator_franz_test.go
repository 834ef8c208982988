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

// A member on franz-go keeps its partitions while its group coordinator
// cannot answer (a coordinator's broker died and the cluster is moving the
// group): its heartbeats are refused for 4.5 s of its 6 s session — long
// past kgo's own retries, whose backoff grows to 4 s, but within the
// session the coordinator keeps for it — and its claim runs on, with no
// new assignment.
func TestFranzMemberKeepsPartitionsWhileCoordinatorMoves(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	env := kafkatest.Kfake(t, embeddedDefaults)
	topic, group := kafkatest.Topic(t), kafkatest.GroupID(t)
	kafkatest.CreateTopic(t, env, topic, 1)

	var assignments, claims, ended atomic.Int32
	cfg := groupConfig(env, group, topic)
	cfg.Client = kafka.ClientFranz
	cfg.OnAssignment = func(int32) { assignments.Add(1) }
	started := make(chan struct{}, 1)
	member(t, cfg, kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
		claims.Add(1)
		select {
		case started <- struct{}{}:
		default:
		}
		for range c.Records() {
		}
		ended.Add(1)
		return nil
	}))
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("no claim")
	}
	// Let the group settle (a heartbeat or two) before the coordinator
	// goes away.
	time.Sleep(time.Second)

	var refusing atomic.Bool
	var refused atomic.Int32
	refusing.Store(true)
	env.Cluster().ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		env.Cluster().KeepControl()
		r := req.(*kmsg.HeartbeatRequest)
		if r.Group != group || !refusing.Load() {
			return nil, nil, false
		}
		refused.Add(1)
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.Version = r.Version
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp, nil, true
	})
	time.Sleep(4500 * time.Millisecond)
	refusing.Store(false)
	// Heartbeats go through again; the member is still the group's.
	time.Sleep(3 * time.Second)

	require.Greater(t, refused.Load(), int32(3), "heartbeats refused")
	require.Equal(t, int32(0), ended.Load(), "the claim ended while the coordinator could not answer")
	require.Equal(t, int32(1), claims.Load(), "claims started")
	require.Equal(t, int32(1), assignments.Load(), "assignments")
}
