package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
)

// The topics weir creates — the word count's repartition and changelog
// topics, and the dead-letter topic — get the replication factor and the
// topic configs the application asks for; the changelog stays compacted.
func TestInternalTopicsGetTheAskedSettings(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		kafkatest.CreateTopic(t, env, out, 2)
		appID := kafkatest.GroupID(t)
		inst := startInstance(t, wordCountTopology(t, in, out), env, appID,
			weir.WithReplicationFactor(1),
			weir.WithTopicConfig("retention.ms", "86400000"),
			weir.WithTopicConfig("max.message.bytes", "2000000"),
			weir.WithBadRecordPolicy(weir.DeadLetter))
		defer func() { require.NoError(t, inst.stop(t)) }()

		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
		require.NoError(t, err)
		defer cl.Close()
		topics := map[string]string{ // topic -> its cleanup.policy
			appID + "-words-repartition": "delete",
			appID + "-counts-changelog":  "compact",
			in + "-dlq":                  "delete",
		}
		require.Eventually(t, func() bool {
			for topic := range topics {
				if _, err := describeTopicConfigs(t.Context(), cl, topic); err != nil {
					return false
				}
			}
			return true
		}, 30*time.Second, 100*time.Millisecond, "the internal topics were never created")
		for topic, policy := range topics {
			configs, err := describeTopicConfigs(t.Context(), cl, topic)
			require.NoError(t, err)
			require.Equal(t, "86400000", configs["retention.ms"], topic)
			require.Equal(t, "2000000", configs["max.message.bytes"], topic)
			require.Equal(t, policy, configs["cleanup.policy"], topic)
			req := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, mt)
			resp, err := req.RequestWith(t.Context(), cl)
			require.NoError(t, err)
			for _, p := range resp.Topics[0].Partitions {
				require.Len(t, p.Replicas, 1, "%s/%d", topic, p.Partition)
			}
		}
	})
}

// describeTopicConfigs returns a topic's configs as the broker reports them.
func describeTopicConfigs(ctx context.Context, cl *kgo.Client, topic string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	res := resp.Resources[0]
	if res.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(res.ErrorCode)
	}
	out := map[string]string{}
	for _, c := range res.Configs {
		if c.Value != nil {
			out[c.Name] = *c.Value
		}
	}
	return out, nil
}

func TestNewValidatesTopicSettings(t *testing.T) {
	topo := wordCountTopology(t, "in", "out")
	base := []weir.Option{weir.WithBrokers("localhost:9092"), weir.WithApplicationID("a")}
	for _, tc := range []struct {
		name string
		opt  weir.Option
		want string
	}{
		{"replication factor 0", weir.WithReplicationFactor(0), "WithReplicationFactor: 0 is neither -1"},
		{"replication factor -2", weir.WithReplicationFactor(-2), "WithReplicationFactor: -2 is neither -1"},
		{"cleanup.policy", weir.WithTopicConfig("cleanup.policy", "delete"), `"cleanup.policy"`},
		{"empty key", weir.WithTopicConfig("", "x"), `topic config ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := weir.New(topo, append(base, tc.opt)...)
			require.ErrorIs(t, err, weir.ErrConfig)
			require.True(t, strings.Contains(err.Error(), tc.want), err.Error())
		})
	}
	for _, rf := range []int16{-1, 1, 3} {
		_, err := weir.New(topo, append(base, weir.WithReplicationFactor(rf))...)
		require.NoError(t, err, "replication factor %d", rf)
	}
}
