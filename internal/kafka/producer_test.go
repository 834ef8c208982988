package kafka_test

import (
	"context"
	"fmt"
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

func newProducer(t *testing.T, env *kafkatest.Env) *kafka.Producer {
	t.Helper()
	return newProducerOn(t, env, "")
}

// newProducerOn connects a Producer on client c ("" for the environment's
// choice, kafka.ResolveClient's).
func newProducerOn(t *testing.T, env *kafkatest.Env, c kafka.Client) *kafka.Producer {
	t.Helper()
	cfg := env.Config()
	cfg.Client = c
	p, err := kafka.NewProducer(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// clients are the clients the producer's tests run on, each in a subtest
// named after it.
var clients = []kafka.Client{kafka.ClientSarama, kafka.ClientFranz}

// forEachClient runs fn once per client.
func forEachClient(t *testing.T, fn func(t *testing.T, c kafka.Client)) {
	t.Helper()
	for _, c := range clients {
		t.Run(string(c), func(t *testing.T) { fn(t, c) })
	}
}

// bothClients runs fn per environment (kafkatest.Run) and client.
func bothClients(t *testing.T, fn func(t *testing.T, env *kafkatest.Env, c kafka.Client)) {
	t.Helper()
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		forEachClient(t, func(t *testing.T, c kafka.Client) { fn(t, env, c) })
	})
}

func TestProducerSendFlushReadBack(t *testing.T) {
	bothClients(t, func(t *testing.T, env *kafkatest.Env, c kafka.Client) {
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 4)
		p := newProducerOn(t, env, c)

		ts := time.UnixMilli(1_700_000_000_123)
		const n = 200
		for i := range n {
			require.NoError(t, p.Send(ctx, kafka.Record{
				Topic:     topic,
				Partition: kafka.PartitionByKey,
				Key:       fmt.Appendf(nil, "key-%d", i%17),
				Value:     fmt.Appendf(nil, "%d", i),
				Headers:   []kafka.Header{{Key: "i", Value: fmt.Appendf(nil, "%d", i)}},
				Timestamp: ts,
			}))
		}
		require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 3, Key: []byte{}, Value: []byte("explicit")}))
		require.NoError(t, p.Flush(ctx))

		got := kafkatest.ReadCommittedPartitions(t, env, topic)
		total := 0
		last := map[string]int{} // per key, values must come in send order
		for part, recs := range got {
			for _, r := range recs {
				total++
				if string(r.Value) == "explicit" {
					require.Equal(t, int32(3), part)
					require.NotNil(t, r.Key)
					require.Empty(t, r.Key)
					continue
				}
				want, err := kafka.PartitionForKey(r.Key, 4)
				require.NoError(t, err)
				require.Equal(t, want, part, "key %q", r.Key)
				require.Equal(t, ts, r.Timestamp)
				require.Equal(t, []kafka.Header{{Key: "i", Value: r.Value}}, r.Headers)
				var v int
				_, err = fmt.Sscan(string(r.Value), &v)
				require.NoError(t, err)
				if prev, ok := last[string(r.Key)]; ok {
					require.Greater(t, v, prev, "order of key %q", r.Key)
				}
				last[string(r.Key)] = v
			}
		}
		require.Equal(t, n+1, total)
	})
}

// TestProducerPartitionsLikeJavaClients checks weir's key partitioning
// against kgo's (an independent implementation of the Java partitioner).
func TestProducerPartitionsLikeJavaClients(t *testing.T) {
	bothClients(t, func(t *testing.T, env *kafkatest.Env, c kafka.Client) {
		ctx := t.Context()
		ours, theirs := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, ours, 7)
		kafkatest.CreateTopic(t, env, theirs, 7)
		p := newProducerOn(t, env, c)
		var recs []kafka.Record
		for i := range 50 {
			key := fmt.Appendf(nil, "user-%03d", i)
			require.NoError(t, p.Send(ctx, kafka.Record{Topic: ours, Partition: kafka.PartitionByKey, Key: key, Value: key}))
			recs = append(recs, kafka.Record{Topic: theirs, Partition: kafka.PartitionByKey, Key: key, Value: key})
		}
		require.NoError(t, p.Flush(ctx))
		kgoPartition := map[string]int32{}
		for _, r := range kafkatest.Produce(t, env, recs...) {
			kgoPartition[string(r.Key)] = r.Partition
		}
		for _, r := range kafkatest.ReadCommitted(t, env, ours) {
			require.Equal(t, kgoPartition[string(r.Key)], r.Partition, "key %q", r.Key)
		}
	})
}

func TestProducerReportsEveryDeliveryError(t *testing.T) {
	bothClients(t, func(t *testing.T, env *kafkatest.Env, c kafka.Client) {
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		p := newProducerOn(t, env, c)

		// Partition 5 of a 2-partition topic fails in the partitioner.
		for range 3 {
			require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 5, Value: []byte("x")}))
		}
		require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 1, Value: []byte("ok")}))
		err := p.Flush(ctx)
		var pe *kafka.PartitionError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, topic, pe.Topic)
		require.ErrorIs(t, err, kafka.ErrInvalidPartition)
		require.Equal(t, int32(5), pe.Partition)
		require.ErrorContains(t, err, "and 2 more delivery errors")
		require.NoError(t, p.Flush(ctx), "reported once")
		require.Len(t, kafkatest.ReadCommitted(t, env, topic), 1)
	})
}

func TestProducerBrokerRejection(t *testing.T) {
	forEachClient(t, func(t *testing.T, c kafka.Client) {
		env := kafkatest.Kfake(t, embeddedDefaults)
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		p := newProducerOn(t, env, c)
		require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 0, Value: []byte("warm up")}))
		require.NoError(t, p.Flush(ctx))

		h := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.InvalidRecord, Count: -1})
		require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 0, Value: []byte("rejected")}))
		err := p.Flush(ctx)
		var pe *kafka.PartitionError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, int32(0), pe.Partition)
		require.True(t, kafka.RecordRejected(err), "%v", err)
		if c == kafka.ClientSarama {
			require.ErrorIs(t, err, sarama.ErrInvalidRecord)
		} else {
			require.ErrorIs(t, err, kerr.InvalidRecord)
		}
		h.Remove()
	})
}

func TestProducerCloseAndCancel(t *testing.T) {
	forEachClient(t, func(t *testing.T, c kafka.Client) { testProducerCloseAndCancel(t, c) })
}

func testProducerCloseAndCancel(t *testing.T, c kafka.Client) {
	env := kafkatest.Kfake(t, embeddedDefaults)
	topic := kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, topic, 1)
	p := newProducerOn(t, env, c)

	require.NoError(t, p.Flush(t.Context()), "nothing sent")
	require.ErrorIs(t, p.Send(t.Context(), kafka.Record{Value: []byte("no topic")}), kafka.ErrConfig)

	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	// A cancelled send may still win the race into the buffer; either way
	// Flush must not wait for a record that was never sent.
	_ = p.Send(canceled, kafka.Record{Topic: topic, Partition: 0, Value: []byte("maybe")})
	require.NoError(t, p.Flush(t.Context()))

	require.NoError(t, p.Send(t.Context(), kafka.Record{Topic: topic, Partition: 0, Value: []byte("last")}))
	require.NoError(t, p.Close(), "close delivers what is buffered")
	require.NoError(t, p.Close(), "idempotent")
	require.ErrorIs(t, p.Send(t.Context(), kafka.Record{Topic: topic, Value: []byte("late")}), kafka.ErrClosed)
	recs := kafkatest.ReadCommitted(t, env, topic)
	require.Equal(t, "last", string(recs[len(recs)-1].Value))
}

// A partition that refuses writes for 15 s (NOT_ENOUGH_REPLICAS: its ISR
// shrank below min.insync.replicas while a broker restarts) delays the
// at-least-once producer's flush but does not fail it. Found by the long
// cluster run: a leader's outage outlived 12 s of retries, and the
// undelivered output stopped an at-least-once instance ("flush outputs:
// ... broken pipe").
func TestProducerRidesOutAFifteenSecondOutage(t *testing.T) {
	kafkatest.Long(t)
	forEachClient(t, func(t *testing.T, c kafka.Client) {
		env := kafkatest.Kfake(t, embeddedDefaults)
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		p := newProducerOn(t, env, c)
		h := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.NotEnoughReplicas, Count: -1})
		time.AfterFunc(15*time.Second, h.Remove)
		require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 0, Value: []byte("late")}))
		require.NoError(t, p.Flush(ctx))
		require.Len(t, kafkatest.ReadCommitted(t, env, topic), 1)
	})
}

// A record keyed the same way lands on the same partition whichever client
// wrote it: an application can move from one client to the other, and its
// co-partitioned topics stay co-partitioned.
func TestProducerClientsPartitionAlike(t *testing.T) {
	env := kafkatest.Kfake(t, embeddedDefaults)
	ctx := t.Context()
	topics := map[kafka.Client]string{}
	for _, c := range clients {
		topics[c] = kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topics[c], 12)
		p := newProducerOn(t, env, c)
		for i := range 300 {
			key := fmt.Appendf(nil, "k%d", i)
			require.NoError(t, p.Send(ctx, kafka.Record{Topic: topics[c], Partition: kafka.PartitionByKey, Key: key, Value: key}))
		}
		require.NoError(t, p.Flush(ctx))
	}
	where := map[kafka.Client]map[string]int32{}
	for _, c := range clients {
		where[c] = map[string]int32{}
		for _, r := range kafkatest.ReadCommitted(t, env, topics[c]) {
			where[c][string(r.Key)] = r.Partition
		}
		require.Len(t, where[c], 300)
	}
	require.Equal(t, where[kafka.ClientSarama], where[kafka.ClientFranz])
}

// The acknowledged offsets are noted on either client (the sarama one's
// test is TestProducerNotesItsOwnAckedOffsets, on the environment's).
func TestProducerAckedOnEitherClient(t *testing.T) {
	forEachClient(t, func(t *testing.T, c kafka.Client) {
		env := kafkatest.Kfake(t, embeddedDefaults)
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		p := newProducerOn(t, env, c)
		p.Acked().Track(topic)
		kafkatest.Produce(t, env, kafka.Record{Topic: topic, Partition: 1, Value: []byte("other's")})
		for i := range 5 {
			require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: int32(i % 2), Value: []byte("v")}))
		}
		require.NoError(t, p.SendWait(ctx, kafka.Record{Topic: topic, Partition: 0, Value: []byte("w")}))
		require.NoError(t, p.Flush(ctx))
		next, ok := p.Acked().Next(topic, 0)
		require.True(t, ok)
		require.EqualValues(t, 4, next)
		next, ok = p.Acked().Next(topic, 1)
		require.True(t, ok)
		require.EqualValues(t, 3, next)
	})
}

// The franz-go producer fails a record the cluster does not take within
// its delivery timeout (Kafka's delivery.timeout.ms, counted from Send,
// not from the record's timestamp, which is its event time) and reports it
// as a producer that gave up (BreakerOpen), so the runtime rewinds or
// looks the topic up.
func TestFranzProducerDeliveryTimeout(t *testing.T) {
	defer kafka.SetDeliveryTimeout(time.Second)()
	env := kafkatest.Kfake(t, embeddedDefaults)
	ctx := t.Context()
	topic := kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, topic, 1)
	p := newProducerOn(t, env, kafka.ClientFranz)
	old := time.Now().Add(-24 * time.Hour) // an event a day old is not late
	require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 0, Value: []byte("v"), Timestamp: old}))
	require.NoError(t, p.Flush(ctx))

	h := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.NotEnoughReplicas, Count: -1})
	defer h.Remove()
	require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 0, Value: []byte("never")}))
	err := p.Flush(ctx)
	var pe *kafka.PartitionError
	require.ErrorAs(t, err, &pe)
	require.True(t, kafka.BreakerOpen(err), "%v", err)
	require.False(t, kafka.RecordRejected(err))
}

// A partition's records keep their order, without duplicates, across
// retries: the leader refuses a few produce requests (NOT_LEADER) while
// records of one partition are in flight, and the partition holds them in
// send order, each once.
func TestProducerKeepsOrderAcrossRetries(t *testing.T) {
	forEachClient(t, func(t *testing.T, c kafka.Client) {
		env := kafkatest.Kfake(t, embeddedDefaults)
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		p := newProducerOn(t, env, c)
		require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 0, Value: []byte("-1")}))
		require.NoError(t, p.Flush(ctx))
		h := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: 3})
		defer h.Remove()
		const n = 2000
		for i := range n {
			require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: int32(i % 2), Value: fmt.Appendf(nil, "%d", i)}))
		}
		require.NoError(t, p.Flush(ctx))
		require.Equal(t, 3, h.Hits(), "the retries were exercised")
		for part, recs := range kafkatest.ReadCommittedPartitions(t, env, topic) {
			prev := -2
			for _, r := range recs {
				var v int
				_, err := fmt.Sscan(string(r.Value), &v)
				require.NoError(t, err)
				require.Greater(t, v, prev, "partition %d: %d after %d", part, v, prev)
				prev = v
			}
		}
		require.Len(t, kafkatest.ReadCommitted(t, env, topic), n+1, "each record once")
	})
}

// The largest record weir writes (CheckSize's bound) is delivered on
// either client: the franz-go producer's batch bound (MaxMessageBytes,
// counted by kgo with the batch's 61 bytes and its 4-byte length) holds it
// alone, because RecordSize counts every varint at its widest.
func TestProducerDeliversTheLargestRecord(t *testing.T) {
	forEachClient(t, func(t *testing.T, c kafka.Client) {
		env := kafkatest.Kfake(t, embeddedDefaults)
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		p := newProducerOn(t, env, c)
		r := kafka.Record{Topic: topic, Partition: 0, Key: []byte("k"), Headers: []kafka.Header{{Key: "h", Value: []byte("v")}}}
		r.Value = make([]byte, kafka.MaxRecordBytes-kafka.RecordSize(r))
		require.Equal(t, kafka.MaxRecordBytes, kafka.RecordSize(r))
		require.NoError(t, kafka.CheckSize(r))
		require.NoError(t, p.Send(ctx, r))
		require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 0, Value: []byte("small")}))
		require.NoError(t, p.Flush(ctx))
		require.Len(t, kafkatest.ReadCommitted(t, env, topic), 2)
	})
}
