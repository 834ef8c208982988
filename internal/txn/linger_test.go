package txn_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/txn"
)

// sendUntilHeld sends records "<prefix>-0", "<prefix>-1", … back to back
// until the session's adaptive linger holds more than 10, and returns them.
func (f *fixture) sendUntilHeld(t *testing.T, s *txn.Session, prefix string) []kafka.Record {
	t.Helper()
	var sent []kafka.Record
	for i := 0; ; i++ {
		r := kafka.Record{
			Topic: f.out, Partition: kafka.PartitionByKey,
			Key: fmt.Appendf(nil, "k%d", i%17), Value: fmt.Appendf(nil, "%s-%d", prefix, i),
		}
		require.NoError(t, s.Send(ctx(t), r))
		sent = append(sent, r)
		if _, held := txn.LingerState(s); held > 10 {
			return sent
		}
		// A loaded machine may pause the loop for longer than a window
		// now and then, so the test sends until it sees the holding.
		require.Less(t, i, 200_000, "records sent back to back were never held")
	}
}

// Records held by a loaded session join its transaction: Commit hands them
// over and waits for them.
func TestCommitHandsOverHeldRecords(t *testing.T) {
	t.Setenv(kafka.ClientEnv, string(kafka.ClientSarama)) // kgo batches by itself
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)
		require.NoError(t, s.Begin(ctx(t)))
		sent := f.sendUntilHeld(t, s, "held")
		require.NoError(t, s.Commit(ctx(t), f.offsets(1, 1), f.gm()))
		_, held := txn.LingerState(s)
		require.Zero(t, held, "held after a Commit")
		f.requireVisible(t, values(sent))
	})
}

// Records held when their transaction aborts are dropped: none of them
// leaks into the next transaction.
func TestAbortDropsHeldRecords(t *testing.T) {
	t.Setenv(kafka.ClientEnv, string(kafka.ClientSarama)) // kgo batches by itself
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t)
		require.NoError(t, s.Begin(ctx(t)))
		f.sendUntilHeld(t, s, "aborted")
		require.NoError(t, s.Abort(ctx(t)))
		_, held := txn.LingerState(s)
		require.Zero(t, held, "held after an Abort")

		next := f.records("next", 5)
		require.NoError(t, f.txn(t, s, next, f.offsets(1, 1)))
		f.requireVisible(t, values(next))
	})
}

// A session with a linger leaves the lingering to sarama: it holds nothing.
func TestLingerHoldsNothing(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		s := f.session(t, func(c *txn.Config) { c.Kafka.Tuning.Linger = time.Millisecond })
		require.NoError(t, s.Begin(ctx(t)))
		rs := f.records("linger", 500)
		send(t, s, rs)
		_, held := txn.LingerState(s)
		require.Zero(t, held)
		require.NoError(t, s.Commit(ctx(t), f.offsets(1, 1), f.gm()))
		f.requireVisible(t, values(rs))
	})
}
