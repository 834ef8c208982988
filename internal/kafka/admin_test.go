package kafka_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

func TestAdmin(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		ctx := t.Context()
		a, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer a.Close()

		topic := kafkatest.Topic(t)
		kafkatest.DeleteTopicAtEnd(t, env, topic)
		spec := kafka.TopicSpec{Name: topic, Partitions: 3, Config: map[string]string{"cleanup.policy": "compact"}}
		require.NoError(t, a.EnsureTopics(ctx, []kafka.TopicSpec{spec}))
		require.NoError(t, a.EnsureTopics(ctx, []kafka.TopicSpec{spec}), "existing topic, same count")

		spec.Partitions = 5
		err = a.EnsureTopics(ctx, []kafka.TopicSpec{spec})
		require.ErrorIs(t, err, kafka.ErrPartitionMismatch)
		require.ErrorContains(t, err, "has 3 partitions, want 5")

		counts, err := a.PartitionCounts(ctx, []string{topic})
		require.NoError(t, err)
		require.Equal(t, map[string]int32{topic: 3}, counts)

		_, err = a.PartitionCounts(ctx, []string{topic, topic + "-missing"})
		require.ErrorIs(t, err, kafka.ErrUnknownTopic)
		_, err = a.EndOffsets(ctx, topic+"-missing", nil)
		require.ErrorIs(t, err, kafka.ErrUnknownTopic)

		var recs []kafka.Record
		for i := range 5 {
			recs = append(recs, kafka.Record{Topic: topic, Partition: 1, Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")})
		}
		kafkatest.Produce(t, env, recs...)

		ends, err := a.EndOffsets(ctx, topic, nil)
		require.NoError(t, err)
		require.Equal(t, map[int32]int64{0: 0, 1: 5, 2: 0}, ends)
		stable, err := a.StableOffsets(ctx, topic, []int32{1})
		require.NoError(t, err)
		require.Equal(t, map[int32]int64{1: 5}, stable)
		starts, err := a.StartOffsets(ctx, topic, nil)
		require.NoError(t, err)
		require.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, starts)

		committed, err := a.CommittedOffsets(ctx, kafkatest.GroupID(t), topic, nil)
		require.NoError(t, err)
		require.Equal(t, map[int32]int64{0: -1, 1: -1, 2: -1}, committed)

		require.NoError(t, a.Close())
		require.NoError(t, a.Close(), "idempotent")
	})
}

func TestAdminValidatesSpecs(t *testing.T) {
	env := kafkatest.Kfake(t, embeddedDefaults)
	a, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	defer a.Close()
	for _, spec := range []kafka.TopicSpec{
		{Name: "", Partitions: 1},
		{Name: "x", Partitions: 0},
		{Name: "x", Partitions: 1, ReplicationFactor: -2},
	} {
		require.ErrorIs(t, a.EnsureTopics(t.Context(), []kafka.TopicSpec{spec}), kafka.ErrConfig, "%+v", spec)
	}
}

func TestNewAdminRejectsBadConfig(t *testing.T) {
	_, err := kafka.NewAdmin(kafka.Config{})
	require.ErrorIs(t, err, kafka.ErrConfig)
	_, err = kafka.NewAdmin(kafka.Config{Brokers: []string{"127.0.0.1:1"}, SASL: &kafka.SASL{Mechanism: "GSSAPI", User: "u", Password: "p"}})
	require.ErrorIs(t, err, kafka.ErrConfig)
}

// A partition without a leader for longer than a few retries — a broker
// that died keeps its leaderships until the controller fences it, 9 s by
// default — delays EndOffsets, StableOffsets and ReadRange but does not
// fail them: a budget of 11 attempts, about 6.5 s, would let a killed
// leader stop the micro-batch planner and with it the application.
func TestOffsetsAndReadsRideOutALeaderElection(t *testing.T) {
	kafkatest.Long(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	ctx := t.Context()
	a, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	defer a.Close()
	topic := kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, topic, 1)
	kafkatest.Produce(t, env, kafka.Record{Topic: topic, Partition: 0, Value: []byte("v")})

	const down = 9 * time.Second
	for _, key := range []kmsg.Key{kmsg.ListOffsets, kmsg.Fetch} {
		t.Run(key.Name(), func(t *testing.T) {
			f := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{key}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: -1})
			time.AfterFunc(down, f.Remove)
			start := time.Now()
			if key == kmsg.ListOffsets {
				ends, err := a.StableOffsets(ctx, topic, []int32{0})
				require.NoError(t, err)
				require.Equal(t, int64(1), ends[0])
			} else {
				got, err := readRange(ctx, a, topic, 0, 0, 1, true)
				require.NoError(t, err)
				require.Len(t, got, 1)
			}
			require.GreaterOrEqual(t, time.Since(start), down-time.Second, "the fault was not in the way")
		})
	}
}

// An Admin whose controller (where sarama's cluster admin sends topic
// lookups and creations) is down — a killed broker stays the controller in
// the metadata until the cluster fences it — asks again after refreshing
// the metadata, and gets through once a live broker is named: an instance
// started while a broker is down does not exit with "runtime: source
// topics: ... connect: connection refused".
func TestAdminAsksAgainWhenTheControllerIsDown(t *testing.T) {
	live := sarama.NewMockBroker(t, 1)
	defer live.Close()
	dead := sarama.NewMockBroker(t, 2)
	deadAddr := dead.Addr()
	dead.Close() // connection refused from now on

	var keys []sarama.ApiVersionsResponseKey
	for k := range int16(80) {
		keys = append(keys, sarama.ApiVersionsResponseKey{ApiKey: k, MinVersion: 0, MaxVersion: 20})
	}
	metadata := func(controller int32) sarama.MockResponse {
		return sarama.NewMockMetadataResponse(t).
			SetBroker(live.Addr(), live.BrokerID()).
			SetBroker(deadAddr, 2).
			SetController(controller).
			SetLeader(mockTopic, 0, live.BrokerID())
	}
	// The first three metadata answers name the dead broker as the
	// controller, the rest the live one.
	live.SetHandlerByMap(map[string]sarama.MockResponse{
		"ApiVersionsRequest": sarama.NewMockApiVersionsResponse(t).SetApiKeys(keys),
		"MetadataRequest":    sarama.NewMockSequence(metadata(2), metadata(2), metadata(2), metadata(1)),
	})
	a, err := kafka.NewAdmin(kafka.Config{Brokers: []string{live.Addr()}, ClientID: "weir-test"})
	require.NoError(t, err)
	defer a.Close()
	counts, err := a.PartitionCounts(t.Context(), []string{mockTopic})
	require.NoError(t, err)
	require.Equal(t, int32(1), counts[mockTopic])
}

// A topic creation refused for a replication factor above the brokers
// registered — what a cluster answers while one of its brokers restarts —
// is asked again until it succeeds: an instance started while a broker
// is down does not exit ("Replication-factor is invalid ... only 2
// broker(s) are registered").
func TestEnsureTopicsRidesOutABrokerRestart(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	a, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	defer a.Close()
	topic := kafkatest.Topic(t)
	const down = 2 * time.Second
	f := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: topic, Err: kerr.InvalidReplicationFactor, Count: -1})
	time.AfterFunc(down, f.Remove)
	start := time.Now()
	require.NoError(t, a.EnsureTopics(t.Context(), []kafka.TopicSpec{{Name: topic, Partitions: 2}}))
	require.GreaterOrEqual(t, time.Since(start), down-100*time.Millisecond, "the fault was not in the way")
	counts, err := a.PartitionCounts(t.Context(), []string{topic})
	require.NoError(t, err)
	require.Equal(t, int32(2), counts[topic])
}

// EnsureTopics creates every missing topic in one CreateTopics request, as
// Kafka Streams creates its internal topics — a topology with hundreds of
// them starts in one round trip to the controller, not one per topic —
// and asks again only for the topics a retry can cure.
func TestEnsureTopicsCreatesInOneRequest(t *testing.T) {
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	a, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	defer a.Close()
	base := kafkatest.Topic(t)
	var specs []kafka.TopicSpec
	for i := range 40 {
		specs = append(specs, kafka.TopicSpec{Name: fmt.Sprintf("%s-%d", base, i), Partitions: 2})
	}
	var mu sync.Mutex
	var asked [][]string // the topics of each CreateTopics request, in order
	env.Cluster().ControlKey(kmsg.CreateTopics.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		var names []string
		for _, rt := range req.(*kmsg.CreateTopicsRequest).Topics {
			names = append(names, rt.Topic)
		}
		mu.Lock()
		asked = append(asked, names)
		mu.Unlock()
		return nil, nil, false // observed, handled by the cluster
	})
	flaky := specs[7].Name // refused for a while, as while a broker restarts
	f := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: flaky, Err: kerr.InvalidReplicationFactor, Count: 2})
	defer f.Remove()

	require.NoError(t, a.EnsureTopics(t.Context(), specs))
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	counts, err := a.PartitionCounts(t.Context(), names)
	require.NoError(t, err)
	require.Len(t, counts, len(specs))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, asked, 3, "one request for every topic, then one per refusal of the flaky one")
	require.ElementsMatch(t, names, asked[0])
	require.Equal(t, []string{flaky}, asked[1])
	require.Equal(t, []string{flaky}, asked[2])
}
