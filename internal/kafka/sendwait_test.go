package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// SendWait's records and Flush's are apart: a failure of a record sent
// with Send is not SendWait's, and stays for the next Flush (before, a
// task's changelog marker flushed the producer and could take another
// task's failed output, so that output's epoch committed); a failure of a
// record sent with SendWait is SendWait's alone.
func TestSendWaitReportsItsOwnRecordsOnly(t *testing.T) {
	bothClients(t, func(t *testing.T, env *kafkatest.Env, c kafka.Client) {
		ctx := t.Context()
		topic := kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, topic, 2)
		p := newProducerOn(t, env, c)

		// Partition 5 of a 2-partition topic fails in the partitioner.
		require.NoError(t, p.Send(ctx, kafka.Record{Topic: topic, Partition: 5, Value: []byte("send")}))
		require.NoError(t, p.SendWait(ctx,
			kafka.Record{Topic: topic, Partition: 0, Value: []byte("a")},
			kafka.Record{Topic: topic, Partition: 1, Value: []byte("b")}))
		require.ErrorIs(t, p.Flush(ctx), kafka.ErrInvalidPartition, "the Send's failure is the next Flush's")

		err := p.SendWait(ctx,
			kafka.Record{Topic: topic, Partition: 1, Value: []byte("c")},
			kafka.Record{Topic: topic, Partition: 5, Value: []byte("sendwait")})
		var pe *kafka.PartitionError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, topic, pe.Topic)
		require.ErrorIs(t, err, kafka.ErrInvalidPartition)
		require.NoError(t, p.Flush(ctx), "SendWait's failure is not Flush's")
		require.Len(t, kafkatest.ReadCommitted(t, env, topic), 3)
	})
}
