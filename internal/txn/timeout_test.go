package txn_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/internal/txn"
)

// delayEndTxn holds the EndTxn requests of txnID that arrive while hold
// returns true, until release is closed; then kfake processes them as
// usual (their connections are long gone). It returns how many it holds.
func delayEndTxn(t *testing.T, c *kfake.Cluster, txnID string, hold func() bool) (release func(), held *atomic.Int32) {
	t.Helper()
	ch := make(chan struct{})
	held = new(atomic.Int32)
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if r, ok := req.(*kmsg.EndTxnRequest); ok && r.TransactionalID == txnID && hold() {
			held.Add(1)
			c.SleepControl(func() { <-ch })
		}
		return nil, nil, false // the cluster answers
	})
	var closed atomic.Bool
	release = func() {
		if closed.CompareAndSwap(false, true) {
			close(ch)
		}
	}
	t.Cleanup(release)
	return release, held
}

// observeEndTxn counts the EndTxn requests of txnID kfake processes from
// now on.
func observeEndTxn(c *kfake.Cluster, txnID string) *kfake.FaultHandle {
	return c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TxnID: txnID, Observe: true, Count: -1})
}

// TestDelayedEndTxnIsFenced delays the first EndTxn of a commit past the
// request timeout. The client resends it on a new connection and the
// commit succeeds — but the first copy is still on its way. Released once
// the next transaction has records in the log, it must not commit them:
// the session re-initialized the producer (new epoch) before that
// transaction, or, on franz-go with transactions v2, the commit bumped
// the epoch. The "without re-init" subtest shows the copy does commit
// them otherwise on sarama (the Jepsen anomaly, without KIP-890 epoch
// bumps).
func TestDelayedEndTxnIsFenced(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		env.RequireKfake(t)
		for _, reinit := range []bool{true, false} {
			name := "with re-init"
			if !reinit {
				name = "without re-init"
			}
			t.Run(name, func(t *testing.T) {
				f := setup(t, env)
				s := f.session(t, func(c *txn.Config) {
					c.RequestTimeout = 500 * time.Millisecond
					if !reinit {
						txn.DisableReinit(c)
					}
				})
				one, two, three := f.records("one", 4), f.records("two", 4), f.records("three", 4)
				require.NoError(t, f.txn(t, s, one, f.offsets(1, 1)))

				var first atomic.Bool
				release, held := delayEndTxn(t, env.Cluster(), f.txnID, func() bool { return first.CompareAndSwap(false, true) })
				require.NoError(t, f.txn(t, s, two, f.offsets(2, 2)), "the resent EndTxn commits")
				require.Equal(t, int32(1), held.Load())
				require.NotZero(t, txn.ConnFailures(s))
				f.requireVisible(t, values(one, two))
				require.Equal(t, [2]int64{2, 2}, f.committed(t))

				require.NoError(t, s.Begin(ctx(t)))
				// Transactions v2 (KIP-890 part 2) bump the epoch at
				// every EndTxn: the delayed copy is fenced without a
				// re-initialization.
				_, v2 := txn.Franz(s)
				want := int64(1)
				if reinit && !v2 {
					want = 2
				}
				require.Equal(t, want, txn.Inits(s))
				before := f.written(t)
				send(t, s, three)
				f.waitWritten(t, before+int64(len(three))) // in the log, uncommitted

				obs := observeEndTxn(env.Cluster(), f.txnID)
				release()
				require.NoError(t, obs.Wait(ctx(t), 1), "the delayed EndTxn was processed")
				if reinit || v2 {
					f.requireVisible(t, values(one, two), "the delayed EndTxn was fenced")
				} else {
					f.requireVisible(t, values(one, two, three),
						"the delayed EndTxn committed the next transaction before its Commit")
				}
				require.NoError(t, s.Commit(ctx(t), f.offsets(3, 3), f.gm()))
				f.requireVisible(t, values(one, two, three))
				require.Equal(t, [2]int64{3, 3}, f.committed(t))
			})
		}
	})
}

// TestEndTxnTimeoutIsIndefinite delays every EndTxn past the request
// timeout until sarama gives up: Commit reports ErrIndefinite. Whether the
// delayed requests reach the broker before or after the producer is
// re-initialized, the engine's recovery — new epoch, read the committed
// offsets, redo if they did not move — leaves the transaction's records
// exactly once.
func TestEndTxnTimeoutIsIndefinite(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		env.RequireKfake(t)
		for _, landsFirst := range []bool{true, false} {
			name := "delayed commit lands, then new session"
			if !landsFirst {
				name = "new session, then delayed commit lands"
			}
			t.Run(name, func(t *testing.T) {
				f := setup(t, env)
				slow := func(c *txn.Config) {
					c.RequestTimeout = 300 * time.Millisecond
					txn.SetTxnRetry(c, 1, 10*time.Millisecond)
				}
				s := f.session(t, slow)
				one, two, three := f.records("one", 4), f.records("two", 4), f.records("three", 2)
				require.NoError(t, f.txn(t, s, one, f.offsets(1, 1)))

				var hold atomic.Bool
				hold.Store(true)
				release, held := delayEndTxn(t, env.Cluster(), f.txnID, hold.Load)
				err := f.txn(t, s, two, f.offsets(2, 2))
				require.ErrorIs(t, err, txn.ErrIndefinite)
				var ne net.Error
				require.True(t, errors.As(err, &ne) && ne.Timeout(), "cause: %v", err)
				require.Equal(t, int32(2), held.Load(), "sent, resent once, given up")
				hold.Store(false)
				require.ErrorIs(t, s.Begin(ctx(t)), txn.ErrIndefinite, "Reset comes first")

				obs := observeEndTxn(env.Cluster(), f.txnID)
				next := s
				if landsFirst {
					release()
					require.NoError(t, obs.Wait(ctx(t), 2))
					require.NoError(t, s.Reset(ctx(t)))
				} else {
					next = f.session(t) // a restart: New with the same id
					release()
					require.NoError(t, obs.Wait(ctx(t), 2), "the delayed EndTxns were processed (and fenced)")
				}

				// The engine's recovery: the stable offsets decide.
				switch got := f.committed(t); got {
				case [2]int64{2, 2}:
					require.True(t, landsFirst)
					f.requireVisible(t, values(one, two))
				case [2]int64{1, 1}:
					require.False(t, landsFirst)
					f.requireVisible(t, values(one))
					require.NoError(t, f.txn(t, next, two, f.offsets(2, 2)), "redo")
				default:
					t.Fatalf("committed offsets %v", got)
				}
				require.NoError(t, f.txn(t, next, three, f.offsets(3, 3)))
				f.requireVisible(t, values(one, two, three))
				require.Equal(t, [2]int64{3, 3}, f.committed(t))
			})
		}
	})
}

// TestCommitContextEnds ends Commit's context while EndTxn is held: Commit
// returns at once with ErrIndefinite, the abandoned call finishes in the
// background, and Reset decides the outcome.
func TestCommitContextEnds(t *testing.T) {
	run(t, func(t *testing.T, env *kafkatest.Env) {
		env.RequireKfake(t)
		f := setup(t, env)
		s := f.session(t) // 30 s request timeout: only ctx ends the wait
		one, two := f.records("one", 4), f.records("two", 4)
		require.NoError(t, f.txn(t, s, one, f.offsets(1, 1)))

		var hold atomic.Bool
		hold.Store(true)
		release, held := delayEndTxn(t, env.Cluster(), f.txnID, hold.Load)
		require.NoError(t, s.Begin(ctx(t)))
		send(t, s, two)
		short, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := s.Commit(short, f.offsets(2, 2), f.gm())
		require.ErrorIs(t, err, txn.ErrIndefinite)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(start), 5*time.Second)
		require.Equal(t, int32(1), held.Load())
		hold.Store(false)

		// Reset closes the old producer's client under the abandoned call,
		// which then fails fast; the new epoch aborts the transaction.
		require.NoError(t, s.Reset(ctx(t)))
		release()
		require.Equal(t, [2]int64{1, 1}, f.committed(t))
		f.requireVisible(t, values(one))
		require.NoError(t, f.txn(t, s, two, f.offsets(2, 2)))
		f.requireVisible(t, values(one, two))
		require.NoError(t, s.Close())
	})
}
