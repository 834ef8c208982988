package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

// A topic the metadata names but whose configs the answering broker does
// not know yet — on a cluster, a topic another instance has just created,
// asked of a broker that has not caught up with the metadata — is asked
// again, not reported missing: the chaos suite's disk faults restarted an
// instance on the three-broker cluster, whose preflight then failed with
// `describe configs of topic "…-repartition": … does not exist on this
// broker` and the instance exited for good. Failed before the fix.
func TestTopicFactsAsksAgainForConfigsOfATopicNotYetKnown(t *testing.T) {
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	topic := kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, topic, 2)
	a, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	defer a.Close()
	f := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeConfigs}, Resource: topic, Err: kerr.UnknownTopicOrPartition, Count: 2})
	defer f.Remove()
	facts, err := a.TopicFacts(t.Context(), []string{topic}, []string{topic})
	require.NoError(t, err)
	require.Equal(t, kafka.TopicFacts{Partitions: 2, CleanupPolicy: "delete"}, facts[topic])
}
