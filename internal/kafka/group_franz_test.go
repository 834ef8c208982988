package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// On franz-go a claim's start retries a refused fetch of its committed
// offset: the claim starts at the partition's start and gets every record,
// none lost to the fetching kgo did meanwhile.
func TestFranzClaimStartIsRetried(t *testing.T) {
	env := kafkatest.Kfake(t, embeddedDefaults)
	topic, group := kafkatest.Topic(t), kafkatest.GroupID(t)
	kafkatest.CreateTopic(t, env, topic, 1)
	var recs []kafka.Record
	for i := range 5 {
		recs = append(recs, kafka.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "%d", i)})
	}
	kafkatest.Produce(t, env, recs...)

	// The member's first OffsetFetch (the claim's start) is refused.
	var refused atomic.Int32
	env.Cluster().ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.OffsetFetchRequest)
		if r.Group != group && (len(r.Groups) != 1 || r.Groups[0].Group != group) {
			return nil, nil, false
		}
		refused.Add(1)
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.Version = r.Version
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		if r.Version >= 8 {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = group
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	cfg := groupConfig(env, group, topic)
	cfg.Client = kafka.ClientFranz
	got := make(chan kafka.Record, 16)
	member(t, cfg, kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
		require.Equal(t, int64(0), c.InitialOffset())
		for r := range c.Records() {
			got <- r
		}
		return nil
	}))
	for i := range 5 {
		select {
		case r := <-got:
			require.Equal(t, int64(i), r.Offset)
		case <-time.After(waitFor):
			t.Fatalf("%d records of 5 after the refused fetch", i)
		}
	}
	require.Equal(t, int32(1), refused.Load())
}
