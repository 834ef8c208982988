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

// The exactly-once commit (step 6 of the package doc's walk): the open
// transaction ends with the epoch's offsets and the next begins. And what
// becomes of a transaction that fails: it is recovered (recover), and the
// records held for the next one are doomed (heldSends.fail) until the
// engine has rewound (heldSends.clear).

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
	// processing (exactly_once_send.go).
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
	err := t.sess.Commit(ctx, offs, s.GroupMetadata())
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

// outputsFirst: the transaction makes the outputs and the changelog
// records visible together, or neither.
func (t *txnOutput) outputsFirst(context.Context, *Phases, int) error { return nil }

// claimChangelogs: a replaced owner's records never commit, so there is
// nothing to claim.
func (t *txnOutput) claimChangelogs(context.Context, *Task, []statestore.Spec) error { return nil }

// behindFailed: the transaction is ended (recover); the records held and
// the Sends until the rewind belong to the epoch it rewinds. Nothing is
// kept.
func (t *txnOutput) behindFailed(_ context.Context, err error) bool {
	t.held.fail(err)
	return false
}

// dropHeld drops the records held since the cut.
func (t *txnOutput) dropHeld() { t.held.clear() }

// fail dooms the open transaction with err: the records held are dropped
// and every Send returns err until clear; waiting Sends wake.
func (h *heldSends) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil {
		h.err = err
	}
	h.drop()
	h.cond.Broadcast()
}

// clear forgets the records held and the doom, once the engine has
// rewound (under its exclusive barrier).
func (h *heldSends) clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.on, h.err = false, nil
	h.drop()
	h.cond.Broadcast()
}
