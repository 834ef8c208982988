package kafkatest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkaverify"
)

// CreateTopic creates a topic with the broker's default replication factor
// and waits until every partition has a leader. On a real cluster the topic
// is deleted when the test ends.
func CreateTopic(t testing.TB, env *Env, name string, partitions int32, configs ...map[string]string) {
	t.Helper()
	CreateTopics(t, env, []string{name}, partitions, configs...)
}

// CreateTopics is CreateTopic for several topics of one shape, in one
// request: a test with hundreds of topics does not wait for the
// controller hundreds of times.
func CreateTopics(t testing.TB, env *Env, names []string, partitions int32, configs ...map[string]string) {
	t.Helper()
	if len(names) == 0 {
		return
	}
	cl := client(t, env)
	defer cl.Close()
	ctx := ctx(t)

	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(Timeout / time.Millisecond)
	for _, name := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = name
		rt.NumPartitions = partitions
		rt.ReplicationFactor = -1
		for _, cfg := range configs {
			for k, v := range cfg {
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name, c.Value = k, kmsg.StringPtr(v)
				rt.Configs = append(rt.Configs, c)
			}
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err, "create topics %q", names)
	require.Len(t, resp.Topics, len(names))
	for _, rt := range resp.Topics {
		require.NoError(t, kerr.ErrorForCode(rt.ErrorCode), "create topic %q", rt.Topic)
	}
	if !env.IsKfake() {
		t.Cleanup(func() { deleteTopics(env, names...) })
	}

	require.Eventually(t, func() bool {
		md := kmsg.NewPtrMetadataRequest()
		for _, name := range names {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(name)
			md.Topics = append(md.Topics, mt)
		}
		mresp, err := md.RequestWith(ctx, cl)
		if err != nil || len(mresp.Topics) != len(names) {
			return false
		}
		for _, mt := range mresp.Topics {
			if mt.ErrorCode != 0 || len(mt.Partitions) != int(partitions) {
				return false
			}
			for _, p := range mt.Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					return false
				}
			}
		}
		return true
	}, Timeout, 20*time.Millisecond, "topics %q have no leaders", names)
}

// DeleteTopicAtEnd deletes the topic when the test ends, on a real
// cluster (which every run shares); a kfake broker dies with the test.
func DeleteTopicAtEnd(t testing.TB, env *Env, name string) {
	if !env.IsKfake() {
		t.Cleanup(func() { deleteTopics(env, name) })
	}
}

func deleteTopics(env *Env, names ...string) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(env.Brokers...)}, env.ClientOpts...)...)
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = names
	for _, name := range names {
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	_, _ = req.RequestWith(ctx, cl)
}

// Produce writes records synchronously (idempotent, acks=all) and returns
// them with their partitions and offsets. A record's Partition >= 0 is
// used as is; kafka.PartitionByKey hashes the key with kgo's Kafka
// (murmur2) partitioner — independently of weir's own.
func Produce(t testing.TB, env *Env, records ...kafka.Record) []kafka.Record {
	t.Helper()
	cl := client(t, env, kgo.RecordPartitioner(mixedPartitioner{}), kgo.ProducerLinger(0))
	defer cl.Close()
	krs := make([]*kgo.Record, len(records))
	for i, r := range records {
		kr := &kgo.Record{
			Topic:     r.Topic,
			Partition: r.Partition,
			Key:       r.Key,
			Value:     r.Value,
			Timestamp: r.Timestamp,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		krs[i] = kr
	}
	res := cl.ProduceSync(ctx(t), krs...)
	require.NoError(t, res.FirstErr(), "produce")
	out := make([]kafka.Record, len(res))
	for i, pr := range res {
		out[i] = kafkaverify.FromKgo(pr.Record)
	}
	return out
}

// mixedPartitioner sends records with Partition >= 0 there and hashes the
// others' keys like the Java client (kgo's StickyKeyPartitioner).
type mixedPartitioner struct{}

// ForTopic implements kgo.Partitioner.
func (mixedPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return mixedTopicPartitioner{
		keyed:  kgo.StickyKeyPartitioner(nil).ForTopic(topic),
		manual: kgo.ManualPartitioner().ForTopic(topic),
	}
}

type mixedTopicPartitioner struct{ keyed, manual kgo.TopicPartitioner }

// RequiresConsistency implements kgo.TopicPartitioner.
func (m mixedTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return r.Partition >= 0 || m.keyed.RequiresConsistency(r)
}

// Partition implements kgo.TopicPartitioner.
func (m mixedTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return m.manual.Partition(r, n)
	}
	return m.keyed.Partition(r, n)
}
