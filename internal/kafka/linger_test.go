package kafka_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"
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
		if _, held := kafka.LingerState(p); held > maxHeld {
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

// lingeringProducer returns a producer of a new topic of partitions
// partitions, given records back to back (sendFast) until it holds more
// than 10, and the number given.
//
// The first 100 records are flushed before: a new topic's first produce
// may be answered with a retriable error while its leaders settle, and
// sarama fails a batch that retries while the producer closes ("in
// process of shutting down", reported by Close; seen on Kafka 4.4).
func lingeringProducer(t *testing.T, env *kafkatest.Env, partitions int32) (p *kafka.Producer, topic string, n int) {
	t.Helper()
	topic = kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, topic, partitions)
	p = newProducerOn(t, env, kafka.ClientSarama) // the adaptive linger is sarama's producer's
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
		p, topic, n := lingeringProducer(t, env, 4)
		require.NoError(t, p.Flush(t.Context()))
		_, held := kafka.LingerState(p)
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
		p := newProducerOn(t, env, kafka.ClientSarama)
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
func TestProducerLingerEndsAfterAPause(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		p, topic, n := lingeringProducer(t, env, 2)
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
		p, topic, n := lingeringProducer(t, env, 4)
		require.NoError(t, p.Close())
		requireAllInOrder(t, env, topic, n)
	})
}

// loadedLinger returns an AdaptiveLinger that is holding — given 100 records
// back to back within a window — and five records it holds.
func loadedLinger(t *testing.T) (*kafka.AdaptiveLinger, []*sarama.ProducerMessage) {
	t.Helper()
	refuse := func(*sarama.ProducerMessage) error { return errors.New("not now") }
	for range 1000 {
		h := kafka.NewAdaptiveLinger(func() {})
		t.Cleanup(h.Stop)
		// The first 100 start the first window.
		for range 200 {
			h.Add(&sarama.ProducerMessage{}, refuse)
		}
		if on, _ := h.State(); !on {
			continue // the loop was paused for longer than a window
		}
		h.Drop() // the record that saw the load
		var held []*sarama.ProducerMessage
		for i := range 5 {
			if m := (&sarama.ProducerMessage{Metadata: i}); h.Add(m, refuse) {
				held = append(held, m)
			}
		}
		if len(held) == 5 {
			return h, held
		}
		// A pause of more than two windows ended the holding.
	}
	t.Fatal("records given back to back never loaded the linger")
	return nil, nil
}

// While a hand-over waits for room in sarama's input, records given go on
// being taken — held behind the ones handed over, so that one caller's
// records keep their order — rather than waiting for it.
func TestLingerTakesRecordsDuringAHandOver(t *testing.T) {
	h, first := loadedLinger(t)
	var sent []*sarama.ProducerMessage
	blocked, release := make(chan struct{}), make(chan struct{})
	send := func(m *sarama.ProducerMessage) error {
		if len(sent) == 0 {
			close(blocked)
			<-release
		}
		sent = append(sent, m)
		return nil
	}
	handed := make(chan error)
	// The window ends with 5 records given: the load is over.
	go func() { handed <- h.Tick(send) }()
	<-blocked

	later := &sarama.ProducerMessage{Metadata: "later"}
	added := make(chan bool)
	go func() { added <- h.Add(later, send) }()
	select {
	case held := <-added:
		require.True(t, held, "a record given during a hand-over was not held behind it")
	case <-time.After(10 * time.Second):
		t.Fatal("Add waited for a hand-over")
	}
	on, n := h.State()
	require.False(t, on, "the window ended with 5 records: holding should end")
	require.Equal(t, 1, n)

	close(release)
	require.NoError(t, <-handed)
	require.NoError(t, h.Hand(send))
	require.Equal(t, append(first, later), sent)
	// Nothing held, no hand-over: a record goes straight to the caller.
	require.False(t, h.Add(&sarama.ProducerMessage{}, send))
}

// A hand-over that fails keeps the records it did not hand over, first.
func TestLingerKeepsWhatAFailedHandOverLeft(t *testing.T) {
	h, first := loadedLinger(t)
	var sent []*sarama.ProducerMessage
	fail := errors.New("closing")
	err := h.Hand(func(m *sarama.ProducerMessage) error {
		if len(sent) == 2 {
			return fail
		}
		sent = append(sent, m)
		return nil
	})
	require.ErrorIs(t, err, fail)
	_, n := h.State()
	require.Equal(t, 3, n)
	require.NoError(t, h.Hand(func(m *sarama.ProducerMessage) error { sent = append(sent, m); return nil }))
	require.Equal(t, first, sent)
	require.Equal(t, 0, h.Drop())
}
