package kafka_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// sendFast sends n records keyed k0…k16 with values from+0…from+n-1 as fast
// as Send returns, and reports the most records it saw held at once.
func sendFast(t *testing.T, p *kafka.Producer, topic string, from, n int) (maxHeld int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		require.NoError(t, p.Send(t.Context(), kafka.Record{
			Topic: topic, Partition: kafka.PartitionByKey,
			Key: fmt.Appendf(nil, "k%d", i%17), Value: strconv.AppendInt(nil, int64(i), 10),
		}))
		if _, held := kafka.HoldState(p); held > maxHeld {
			maxHeld = held
		}
	}
	return maxHeld
}

// requireAllInOrder reads topic back and requires the values 0…n-1, each
// key's in the order sent.
func requireAllInOrder(t *testing.T, env *kafkatest.Env, topic string, n int) {
	t.Helper()
	seen := make([]bool, n)
	for _, recs := range kafkatest.ReadCommittedPartitions(t, env, topic) {
		last := map[string]int{}
		for _, r := range recs {
			v, err := strconv.Atoi(string(r.Value))
			require.NoError(t, err)
			require.False(t, seen[v], "value %d twice", v)
			seen[v] = true
			if prev, ok := last[string(r.Key)]; ok {
				require.Greater(t, v, prev, "order of key %q", r.Key)
			}
			last[string(r.Key)] = v
		}
	}
	for v, ok := range seen {
		require.True(t, ok, "value %d missing", v)
	}
}

// holdingProducer returns a producer of a new topic of partitions
// partitions, given records back to back (sendFast) until it holds more
// than 10, and the number given.
//
// The first 100 records are flushed before: a new topic's first produce
// may be answered with a retriable error while its leaders settle, and
// sarama fails a batch that retries while the producer closes ("in
// process of shutting down", reported by Close; seen on Kafka 4.4).
func holdingProducer(t *testing.T, env *kafkatest.Env, partitions int32) (p *kafka.Producer, topic string, n int) {
	t.Helper()
	topic = kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, topic, partitions)
	p, err := kafka.NewProducer(env.Config())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	n = 100
	sendFast(t, p, topic, 0, n)
	require.NoError(t, p.Flush(t.Context()))
	for {
		// A loaded machine may pause the loop for longer than a window
		// now and then, so the test sends until it sees the holding.
		n += 100
		if sendFast(t, p, topic, n-100, 100) > 10 {
			return p, topic, n
		}
		require.Less(t, n, 200_000, "records sent back to back were never held")
	}
}

// A loaded producer holds records (the adaptive linger); a Flush hands
// them over and waits for them, in order.
func TestProducerHoldsUnderLoad(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		p, topic, n := holdingProducer(t, env, 4)
		require.NoError(t, p.Flush(t.Context()))
		_, held := kafka.HoldState(p)
		require.Zero(t, held, "held after a Flush")
		requireAllInOrder(t, env, topic, n)
	})
}

// A trickle is never held: records given fewer than 100 in 5 ms go to
// sarama at once.
func TestProducerDoesNotHoldATrickle(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		p := newProducer(t, env)
		const n = 150
		for i := range n {
			require.Zero(t, sendFast(t, p, topic, i, 1), "record %d held at 1 record a millisecond", i)
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, p.Flush(t.Context()))
		requireAllInOrder(t, env, topic, n)
	})
}

// The holding ends with the load: after a pause, a record goes at once.
func TestProducerHoldEndsAfterAPause(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		p, topic, n := holdingProducer(t, env, 2)
		require.NoError(t, p.Flush(t.Context()))
		time.Sleep(50 * time.Millisecond)
		require.Zero(t, sendFast(t, p, topic, n, 1), "a record after a 50 ms pause was held")
		require.NoError(t, p.Flush(t.Context()))
		requireAllInOrder(t, env, topic, n+1)
	})
}

// Close hands over the records still held: none is lost.
func TestProducerCloseSendsHeldRecords(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		p, topic, n := holdingProducer(t, env, 4)
		require.NoError(t, p.Close())
		requireAllInOrder(t, env, topic, n)
	})
}
