package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

func TestAckedOffsetsKeepTheTrackedTopicsEnds(t *testing.T) {
	var a kafka.AckedOffsets
	a.Note("log", 0, 5) // not tracked yet
	_, ok := a.Next("log", 0)
	require.False(t, ok)

	a.Track("log")
	a.Note("log", 0, 5)
	a.Note("log", 0, 3) // an older acknowledgement never moves it back
	a.Note("log", 1, 9)
	a.Note("other", 0, 7)
	next, ok := a.Next("log", 0)
	require.True(t, ok)
	require.EqualValues(t, 6, next)
	next, _ = a.Next("log", 1)
	require.EqualValues(t, 10, next)
	_, ok = a.Next("other", 0)
	require.False(t, ok, "an untracked topic")
}

// The producer notes where its own records of a tracked topic end, once
// acknowledged, whoever else writes to the partition.
func TestProducerNotesItsOwnAckedOffsets(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 1)
		p := newProducer(t, env)
		p.Acked().Track(topic)
		rec := kafka.Record{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("v")}
		for range 3 {
			require.NoError(t, p.Send(ctx, rec))
		}
		require.NoError(t, p.Flush(ctx))
		kafkatest.Produce(t, env, rec, rec) // another writer's, after
		next, ok := p.Acked().Next(topic, 0)
		require.True(t, ok)
		require.EqualValues(t, 3, next)
	})
}
