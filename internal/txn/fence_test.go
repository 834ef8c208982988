package txn_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/txn"
)

// TestFenceAbortsAbandonedTransaction: a producer begins a transaction
// under an instance's transactional id, writes and is abandoned (as a
// SIGKILLed instance leaves it) with a transaction timeout far longer than
// the test waits; a second producer commits after it on the same
// partitions, invisible behind the open transaction. Fence, from a third
// party, makes the partitions' end move at once: the committed records
// become visible well under the transaction timeout and the abandoned ones
// never do. Fencing again is harmless, and the abandoned producer is
// fenced: its commit fails with ErrFenced.
func TestFenceAbortsAbandonedTransaction(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		f := setup(t, env)
		long := func(c *txn.Config) {
			c.TransactionTimeout = time.Minute
			c.SessionTimeout = 2 * time.Minute
		}
		dead := f.session(t, long)
		require.NoError(t, dead.Begin(ctx(t)))
		abandoned := f.records("abandoned", 10)
		send(t, dead, abandoned)
		f.waitWritten(t, int64(len(abandoned))) // on the broker, uncommitted

		other := f.session(t, long, func(c *txn.Config) { c.TransactionalID = f.txnID + "-other" })
		done := f.records("committed", 10)
		require.NoError(t, f.txn(t, other, done, f.offsets(1, 1)))
		require.Empty(t, f.visible(t), "the open transaction holds the last stable offset")

		start := time.Now()
		require.NoError(t, txn.Fence(ctx(t), f.config(long)))
		f.requireVisible(t, values(done), "the fence aborts the open transaction")
		took := time.Since(start)
		require.Less(t, took, 20*time.Second, "the end moved at the fence, not at the transaction timeout")
		t.Logf("visible %v after the fence began", took)

		require.NoError(t, txn.Fence(ctx(t), f.config(long)), "fencing twice")
		err := dead.Commit(ctx(t), f.offsets(5, 5), f.gm())
		require.ErrorIs(t, err, txn.ErrFenced, "the abandoned producer is fenced")
		f.requireVisible(t, values(done), "the abandoned records never become visible")
	})
}
