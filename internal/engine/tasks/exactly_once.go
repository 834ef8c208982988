package tasks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
	"github.com/weirstream/weir/statestore"
)

// txnOutput makes every record tasks write part of one open transaction,
// and Commit end it together with the consumer offsets (docs/design.md §6): begin →
// outputs, changelog and dead-letter records → offsets with the live group
// metadata → commit, then begin the next.
type txnOutput struct {
	rt   *Runtime
	sess *txn.Session
	// sent counts records sent into the open transaction.
	sent atomic.Int64
	// last are the offsets of the last committed transaction.
	last Positions
	// rewinds counts the rewinds since the last transaction that
	// committed, for their backoff; fatal is the error of an output no
	// retry delivers (see explainOutput), returned from then on.
	rewinds int
	fatal   error
	// held are the records sent while a transaction commits behind
	// processing (held.go).
	held *heldSends
	// beforeCommit, if set, runs before a transaction's commit (tests).
	beforeCommit func()
}

// EnableExactlyOnce switches the runtime to transactional output (the
// exactly-once committer, committer.go): a transactional producer with
// transactionalID ("<application>-<instance id>", stable across restarts
// so that a restart fences its own zombie), read_committed restore and
// group reads. Call it before Prepare; the engines then commit with
// Commit and survive ErrRewind.
func (r *Runtime) EnableExactlyOnce(ctx context.Context, transactionalID string) error {
	sess, err := txn.New(ctx, txn.Config{
		Kafka: r.cfg.Kafka, TransactionalID: transactionalID,
		SessionTimeout: r.cfg.SessionTimeout, Logger: r.log,
	})
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if err := sess.Begin(ctx); err != nil {
		_ = sess.Close()
		return fmt.Errorf("runtime: %w", err)
	}
	r.committer = &txnOutput{rt: r, sess: sess, last: Positions{}, held: newHeldSends(heldRecords, heldBytes)}
	r.readCommitted.Store(true)
	return nil
}

var _ committer = (*txnOutput)(nil)

// commit ends the open transaction with the offsets and opens the next
// (PhaseTxnCommit; commitTxn).
func (t *txnOutput) commit(ctx context.Context, positions Positions, s kafka.Session, ph *Phases) error {
	return t.rt.Timed(PhaseTxnCommit, &ph.TxnCommit, func() error { return t.commitTxn(ctx, positions, s) })
}

// commitTxn ends the open transaction with the offsets and opens the next. An
// epoch that sent nothing and whose offsets the last transaction committed
// (committed) keeps its transaction open; one that only moved offsets
// (its records were all filtered out) commits them.
func (t *txnOutput) commitTxn(ctx context.Context, positions Positions, s kafka.Session) error {
	if t.fatal != nil {
		// A transaction that cannot commit: no waiting for its records.
		return t.fatal
	}
	if err := t.held.failed(); err != nil {
		// A record held during the previous commit failed when sent: a
		// commit under the barrier ends the doomed transaction (CutBehind
		// has checked before a commit behind).
		err = t.recover(ctx, err)
		t.held.clear()
		return err
	}
	if s == nil || (t.sent.Load() == 0 && committed(positions, t.last)) {
		return nil
	}
	offs := make(map[txn.TopicPartition]int64, len(positions))
	for tp, next := range positions {
		offs[txn.TopicPartition(tp)] = next
	}
	if t.beforeCommit != nil {
		t.beforeCommit()
	}
	// The member does not rejoin its group while the offsets are on
	// their way, and they carry the generation it holds (kafka's rejoin
	// gate): a rebalance does not fence the epoch.
	gm, release := kafka.HoldGeneration(ctx, s)
	err := t.sess.Commit(ctx, offs, gm)
	release()
	if err == nil {
		t.last = maps.Clone(positions)
		t.sent.Store(0)
		t.rewinds = 0
		if err := t.sess.Begin(ctx); err != nil {
			return t.recover(ctx, err)
		}
		return nil
	}
	return t.recover(ctx, err)
}

// committed reports whether the last transaction committed every offset
// of positions. A claim that ends commits the positions of the claims
// still running: after the first, they are committed already, and a
// transaction of those offsets alone, right after the last one's EndTxn,
// waits out Kafka's CONCURRENT_TRANSACTIONS until its markers are
// written.
func committed(positions, last Positions) bool {
	for tp, next := range positions {
		if n, ok := last[tp]; !ok || n != next {
			return false
		}
	}
	return true
}

// recover applies docs/design.md §6 to a failed transaction: abortable → abort;
// fenced or indefinite → re-create the producer with the same id (the epoch
// bump aborts or completes what was in flight and fences it). Either way
// the work is redone from the committed offsets: ErrRewind. Fatal errors
// stop the application.
//
// A failure caused by an output no retry delivers (explainOutput: its
// topic does not exist, writing it is not authorized) is not rewound: the
// application would abort every epoch forever. It stops the application
// with an error naming the topic and the cause; the open transaction is
// aborted by Close. Rewinds in a row back off (rewindBackoff).
func (t *txnOutput) recover(ctx context.Context, cause error) error {
	if t.fatal != nil {
		return t.fatal
	}
	if err := t.rt.explainOutput(ctx, cause); err != nil {
		t.fatal = t.rt.failing(fmt.Errorf("runtime: transaction: %w", err))
		return t.fatal
	}
	if !rewindable(cause) && !errors.Is(cause, ErrRewind) {
		return fmt.Errorf("runtime: transaction: %w", cause)
	}
	if errors.Is(cause, txn.ErrAbortable) || errors.Is(cause, txn.ErrNoTransaction) {
		if err := t.sess.Abort(ctx); err != nil {
			t.rt.log.Warn("weir: abort failed; re-initializing the producer", "err", err)
			if err := t.sess.Reset(ctx); err != nil {
				return fmt.Errorf("runtime: reset after a failed abort: %w (transaction: %w)", err, cause)
			}
		}
	} else if err := t.sess.Reset(ctx); err != nil {
		return fmt.Errorf("runtime: reset: %w (transaction: %w)", err, cause)
	}
	// A rewind because the group moved on (a rebalance fenced the
	// epoch's offset commit) is cured by rejoining, which the engine does
	// at once; waiting would make this member join the rebalance late, its
	// rejoin would start another one, and that one would fence the other
	// members' epochs in turn — on a loaded three-broker cluster the group
	// then spends minutes rebalancing. So such a rewind neither waits nor
	// counts towards the backoff.
	if !kafka.GroupMoved(cause) {
		t.rewinds++
	}
	wait := rewindWait(t.rewinds, cause)
	if err := kafka.Pause(ctx, wait); err != nil {
		return fmt.Errorf("runtime: rewind: %w (transaction: %w)", err, cause)
	}
	if err := t.sess.Begin(ctx); err != nil {
		return fmt.Errorf("runtime: begin after a rewind: %w (transaction: %w)", err, cause)
	}
	t.last = Positions{}
	t.sent.Store(0)
	if t.rewinds > 1 {
		return fmt.Errorf("%w (%d in a row; retried after %v): %w", ErrRewind, t.rewinds, wait, cause)
	}
	return fmt.Errorf("%w: %w", ErrRewind, cause)
}

// rewindWait is the wait before a rewind, the n-th in a row, starts
// again: none if the group moved on (see recover), else rewindBackoff.
func rewindWait(n int, cause error) time.Duration {
	if kafka.GroupMoved(cause) {
		return 0
	}
	return rewindBackoff(n)
}

// rewindBackoff is the wait before the n-th rewind in a row starts again:
// none for the first (a lone abort is retried at once), then 100 ms
// doubling to 5 s, so that a condition that takes a while to heal (a
// partition without a leader, a broker restarting) is not hammered.
func rewindBackoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return min(100*time.Millisecond<<min(n-2, 6), 5*time.Second)
}

// rewindable reports errors a rewind survives.
func rewindable(err error) bool {
	return errors.Is(err, txn.ErrAbortable) || errors.Is(err, txn.ErrFenced) ||
		errors.Is(err, txn.ErrIndefinite)
}

// close aborts the open transaction (a clean stop) and closes the producer.
func (t *txnOutput) close(ctx context.Context) error {
	if err := t.sess.Abort(ctx); err != nil {
		// Nothing of an unfinished transaction is ever visible: the
		// coordinator aborts it when it times out, and the next start with
		// this transactional id fences and aborts it at once. So a failed
		// abort — typically of a session a stop interrupted while it
		// re-initialized — is logged, not returned.
		t.rt.log.Warn("weir: abort of the open transaction at close failed; the coordinator or the next start aborts it", "err", err)
	}
	return t.sess.Close()
}

// rewind ends the doomed transaction (recover) and drops the records held
// for the next one, which are the rewound epoch's.
func (t *txnOutput) rewind(ctx context.Context, cause error) error {
	err := t.recover(ctx, cause)
	t.held.clear()
	return err
}

// confirmMember: a replaced member's transaction is fenced (KIP-447), its
// changelog records never become visible.
func (t *txnOutput) confirmMember(context.Context, kafka.Session, int) error { return nil }

// outputsFirst: the transaction makes the outputs and the changelog
// records visible together, or neither.
func (t *txnOutput) outputsFirst(context.Context, *Phases, int) error { return nil }

// claimChangelogs: a replaced owner's records never commit, so there is
// nothing to claim.
func (t *txnOutput) claimChangelogs(context.Context, *Task, []statestore.Spec) error { return nil }

// acked reads the offsets the transaction's producers had acknowledged.
func (t *txnOutput) acked() *kafka.AckedOffsets { return t.sess.Acked() }

// positionsAlone: the Sends after the cut are held for the next
// transaction even in a stateless epoch.
func (t *txnOutput) positionsAlone() bool { return false }

// startCut fails the cut if a record held during the previous commit
// failed when sent: the open transaction is doomed.
func (t *txnOutput) startCut(context.Context) error { return t.held.failed() }

// changelogsAtCut: the changelog records go into the open transaction at
// the cut, whatever became of the outputs.
func (t *txnOutput) changelogsAtCut(context.Context, *Phases, int) (bool, error) { return true, nil }

// endCut holds the claims' Sends from here on for the next transaction
// (held.go).
func (t *txnOutput) endCut() { t.held.hold() }

// behindFailed: the transaction is ended (recover); the records held and
// the Sends until the rewind belong to the epoch it rewinds. Nothing is
// kept.
func (t *txnOutput) behindFailed(_ context.Context, err error) bool {
	t.held.fail(err)
	return false
}

// behindCommitted sends the records held during the commit into the new
// transaction, markersPause after the commit (PhaseHeldRelease). One that fails does not fail the epoch
// that committed: it dooms the next (startCut, or Commit).
func (t *txnOutput) behindCommitted(ctx context.Context) {
	err := t.rt.Timed(PhaseHeldRelease, nil, func() error {
		if d := markersPause(t.held.count()); d > 0 {
			_ = kafka.Pause(ctx, d) // a stop cuts it short; the release goes on as before
		}
		return t.release(ctx)
	})
	if err != nil {
		t.rt.log.Warn("weir: an output held during the commit failed; the next epoch rewinds", "err", err)
	}
}

// markersWait is how long a commit behind waits, once its transaction
// committed and the next began, before it sends the records held into the
// next one. The coordinator writes the committed transaction's markers
// after EndTxn returns, and a produce of the next transaction that reaches
// it meanwhile is refused with CONCURRENT_TRANSACTIONS: the broker retries
// it itself only after add.partitions.to.txn.retry.backoff.ms (20 ms by
// default), then the client after a metadata refresh. On Kafka 4.4 with
// 10 ms epochs, where transactions run back to back, a commit took 17–20
// ms without the wait and 8 ms with it (bench: weir-cont-eos-10ms). The
// records stay held meanwhile, as during the commit; the tasks go on.
// Only a commit that held few records waits (markersPause).
const markersWait = 3 * time.Millisecond

// dropHeld drops the records held since the cut.
func (t *txnOutput) dropHeld() { t.held.clear() }

// commitStopGrace bounds an exactly-once commit behind after a stop.
const commitStopGrace = 30 * time.Second

// stopGrace: a transaction's commit cut short would leave its outcome
// unknown and the records held for the next one unsent, so a stop lets it
// finish for up to commitStopGrace.
func (t *txnOutput) stopGrace() time.Duration { return commitStopGrace }

// holdsSends: the claims' Sends wait in the held records, a bounded
// buffer, while the transaction commits.
func (t *txnOutput) holdsSends() bool { return true }
