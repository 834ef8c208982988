package tests

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
)

// Under the Fail policy (the default) a bad record stops Run, in both
// modes, with the error App.Run documents: a *processor.RecordError naming
// the record's topic, partition and offset, wrapping the cause.
func TestFailPolicyStopsRunWithTheRecordError(t *testing.T) {
	for name, opts := range map[string][]weir.Option{
		"continuous":  nil,
		"micro-batch": {weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.Continuously()})},
	} {
		t.Run(name, func(t *testing.T) {
			env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
			in, out := kafkatest.Topic(t), kafkatest.Topic(t)
			kafkatest.CreateTopic(t, env, in, 1)
			kafkatest.CreateTopic(t, env, out, 1)
			produceLines(t, env, in, 0, 3, []string{"alpha", "beta"}, map[string]int64{})
			kafkatest.Produce(t, env, kafka.Record{Topic: in, Partition: 0, Key: []byte("p"),
				Value: []byte("alpha poison"), Timestamp: time.UnixMilli(2_000_000)})

			err := runUntilError(t, poisonWordCount(t, in, out), env.Brokers, kafkatest.GroupID(t), time.Minute, opts...)
			var re *processor.RecordError
			require.True(t, errors.As(err, &re), "%v", err)
			require.Equal(t, processor.DeserializationError, re.Kind)
			require.Equal(t, in, re.Topic)
			require.Equal(t, int32(0), re.Partition)
			require.Equal(t, int64(3), re.Offset, "the poison line follows the three good ones")
			require.ErrorIs(t, err, serde.ErrDeserialize)
		})
	}
}
