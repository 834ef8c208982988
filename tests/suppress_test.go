package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// A suppression buffer set to shut down when full stops Run with an error
// naming its store, even under the Skip policy: the record is not bad, the
// application cannot go on.
func TestSuppressBufferFullStopsRunWhateverThePolicy(t *testing.T) {
	for name, opts := range map[string][]weir.Option{
		"continuous":  nil,
		"micro-batch": {weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.Continuously()})},
	} {
		t.Run(name, func(t *testing.T) {
			env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
			in, out := kafkatest.Topic(t), kafkatest.Topic(t)
			kafkatest.CreateTopic(t, env, in, 1)
			kafkatest.CreateTopic(t, env, out, 1)
			kafkatest.Produce(t, env,
				kafka.Record{Topic: in, Partition: 0, Key: []byte("a"), Value: []byte("1"), Timestamp: time.UnixMilli(1000)},
				kafka.Record{Topic: in, Partition: 0, Key: []byte("b"), Value: []byte("1"), Timestamp: time.UnixMilli(1001)})

			b := topology.NewBuilder()
			buf := topology.BufferMaxRecords(1).ShutDownWhenFull()
			topology.NewTable(b, in, serde.String(), serde.String()).
				Suppress(topology.UntilTimeLimit(time.Hour, buf), topology.Materialized("held")).
				ToStream().To(out)
			topo, err := b.Build()
			require.NoError(t, err)

			opts = append(opts, weir.WithBadRecordPolicy(weir.Skip))
			err = runUntilError(t, topo, env.Brokers, kafkatest.GroupID(t), time.Minute, opts...)
			require.ErrorIs(t, err, topology.ErrSuppressBufferFull)
			require.ErrorContains(t, err, `store "held"`)
		})
	}
}
