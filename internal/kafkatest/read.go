package kafkatest

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkaverify"
)

// ReadCommitted reads a topic fully as a read_committed consumer sees it
// now: every partition from its log start up to its last stable offset,
// without aborted records and control records. Records come partition by
// partition, in offset order. It is the verifier's view of a topic
// (kafkaverify.ReadCommitted says how "fully" is exact). On kfake, which
// writes a transaction's markers before it answers EndTxn, it does not
// wait for open transactions to settle: one a test leaves open is left
// out at once.
func ReadCommitted(t testing.TB, env *Env, topic string) []kafka.Record {
	t.Helper()
	byPartition := ReadCommittedPartitions(t, env, topic)
	var out []kafka.Record
	for _, p := range slices.Sorted(maps.Keys(byPartition)) {
		out = append(out, byPartition[p]...)
	}
	return out
}

// ReadCommittedPartitions is ReadCommitted by partition.
func ReadCommittedPartitions(t testing.TB, env *Env, topic string) map[int32][]kafka.Record {
	t.Helper()
	cl := client(t, env)
	defer cl.Close()
	var out map[int32][]kafka.Record
	var err error
	if env.IsKfake() {
		out, err = kafkaverify.ReadCommittedWithin(ctx(t), cl, topic, 0)
	} else {
		out, err = kafkaverify.ReadCommitted(ctx(t), cl, topic)
	}
	require.NoError(t, err, "read %q", topic)
	return out
}

// ReadStable is kafkaverify.ReadStable: ReadCommittedPartitions for code
// without a test, through a client of its own.
func ReadStable(ctx context.Context, brokers []string, topic string) (map[int32][]kafka.Record, error) {
	return kafkaverify.ReadStable(ctx, brokers, topic)
}

// EndOffsets is kafkaverify.EndOffsets: the end offset of every partition
// of topic, the high watermark or with stable the last stable offset.
func EndOffsets(ctx context.Context, brokers []string, topic string, stable bool) (map[int32]int64, error) {
	return kafkaverify.EndOffsets(ctx, brokers, topic, stable)
}
