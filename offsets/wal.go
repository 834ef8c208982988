package offsets

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// WAL is one namespace of a Log: the micro-batch write-ahead log (a plan
// per batch under offsets/, a commit per finished batch under commits/) and
// the continuous-mode epoch log (epochs/). Get one from Log.Namespace.
//
// A WAL is safe for concurrent use. Writes to it are serialised, each in
// one Badger transaction synced to disk before the call returns; reads see
// a consistent snapshot. Retention runs inside the write that triggers it.
type WAL struct {
	log  *Log
	name string
	// write holds one token while a write runs: a mutex that a context
	// can give up waiting for.
	write chan struct{}

	offsets, commits, epochs []byte // key prefixes
	// Lower bounds of the live records under each prefix (see lowMark).
	lowOffsets, lowCommits, lowEpochs lowMark
}

// trimBudget caps the records one write deletes for retention, to stay well
// inside Badger's transaction limits. When Retain shrinks between runs the
// backlog goes away over the next writes.
const trimBudget = 1000

// pageSize is how many records Batches and Epochs read per transaction.
const pageSize = 256

// Name returns the namespace's name.
func (w *WAL) Name() string { return w.name }

// WritePlan stores p as the plan of batch p.Batch, synced to disk, before
// the batch runs. Writing a plan identical to the stored one succeeds and
// changes nothing, so a replay may write its plan again. Otherwise the
// batch must follow the latest plan, which must be committed: the error
// wraps ErrConflict for a plan that differs from the stored plan of its
// batch, goes back or skips a batch, or would leave two batches pending
// (commit or DiscardPlan the pending one first). The first plan of an
// empty namespace may have any batch number. An invalid plan gives an error
// wrapping ErrInvalid. A plan's encoding must fit in one Badger
// transaction, about 1.2 MB: tens of thousands of partitions.
func (w *WAL) WritePlan(ctx context.Context, p Plan) error {
	val, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	return w.writeTxn(ctx, fmt.Sprintf("write plan %d", p.Batch), func(txn *badger.Txn) error {
		if stored, err := storedAs[Plan](txn, w.offsets, p.Batch, val, "plan"); stored || err != nil {
			return err
		}
		latest, found, err := last[Plan](txn, w.offsets)
		if err != nil {
			return err
		}
		if found {
			switch {
			case p.Batch < latest.Batch:
				return fmt.Errorf("%w: batch %d is before the latest planned batch %d", ErrConflict, p.Batch, latest.Batch)
			case p.Batch > latest.Batch+1:
				return fmt.Errorf("%w: batch %d skips batches after the latest planned batch %d", ErrConflict, p.Batch, latest.Batch)
			}
			committed, err := exists(txn, recordKey(w.commits, latest.Batch))
			if err != nil {
				return err
			}
			if !committed {
				return fmt.Errorf("%w: batch %d is still pending; commit or discard it before planning batch %d", ErrConflict, latest.Batch, p.Batch)
			}
		}
		return txn.Set(recordKey(w.offsets, p.Batch), val)
	})
}

// WriteCommit records, synced to disk, that batch c.Batch is done: its
// output and offsets are committed. The batch's plan must be stored (else
// the error wraps ErrNoPlan). Writing a commit identical to the stored one
// succeeds and changes nothing; a different one gives an error wrapping
// ErrConflict. The same transaction applies retention: plans and commits
// older than the latest Retain plans are deleted, except a plan without a
// commit.
func (w *WAL) WriteCommit(ctx context.Context, c Commit) error {
	val, err := c.MarshalBinary()
	if err != nil {
		return err
	}
	var onCommit func()
	err = w.writeTxn(ctx, fmt.Sprintf("write commit %d", c.Batch), func(txn *badger.Txn) error {
		planned, err := exists(txn, recordKey(w.offsets, c.Batch))
		if err != nil {
			return err
		}
		if !planned {
			return fmt.Errorf("%w %d", ErrNoPlan, c.Batch)
		}
		if stored, err := storedAs[Commit](txn, w.commits, c.Batch, val, "commit"); stored || err != nil {
			return err
		}
		if err := txn.Set(recordKey(w.commits, c.Batch), val); err != nil {
			return err
		}
		onCommit, err = w.trimBatches(txn)
		return err
	})
	if err == nil && onCommit != nil {
		onCommit()
	}
	return err
}

// DiscardPlan deletes the plan of a batch that has no commit: recovery's
// way to drop a stale plan before planning the batch afresh. Discarding a
// plan that is not stored succeeds; discarding a committed batch gives an
// error wrapping ErrConflict.
func (w *WAL) DiscardPlan(ctx context.Context, batch int64) error {
	if batch < 0 {
		return fmt.Errorf("%w: negative batch %d", ErrInvalid, batch)
	}
	return w.writeTxn(ctx, fmt.Sprintf("discard plan %d", batch), func(txn *badger.Txn) error {
		key := recordKey(w.offsets, batch)
		planned, err := exists(txn, key)
		if err != nil || !planned {
			return err
		}
		committed, err := exists(txn, recordKey(w.commits, batch))
		if err != nil {
			return err
		}
		if committed {
			return fmt.Errorf("%w: batch %d is committed", ErrConflict, batch)
		}
		return txn.Delete(key)
	})
}

// Plan returns the stored plan of a batch, and whether there is one.
func (w *WAL) Plan(batch int64) (Plan, bool, error) {
	if batch < 0 {
		return Plan{}, false, fmt.Errorf("%w: negative batch %d", ErrInvalid, batch)
	}
	var p Plan
	var found bool
	err := w.viewTxn(fmt.Sprintf("read plan %d", batch), func(txn *badger.Txn) (err error) {
		p, found, err = get[Plan](txn, w.offsets, batch)
		return err
	})
	return p, found, err
}

// LatestPlan returns the plan with the highest batch number, committed or
// not, and whether there is one.
func (w *WAL) LatestPlan() (Plan, bool, error) {
	return viewLast[Plan](w, "read latest plan", w.offsets)
}

// LatestCommit returns the commit with the highest batch number, and
// whether there is one.
func (w *WAL) LatestCommit() (Commit, bool, error) {
	return viewLast[Commit](w, "read latest commit", w.commits)
}

// Pending returns the latest plan if it has no commit: the batch that was
// planned, and perhaps ran, before a crash. Recovery decides from the
// committed offsets in Kafka whether to write its commit, run it again, or
// discard it (see the package documentation).
func (w *WAL) Pending() (Plan, bool, error) {
	var p Plan
	var pending bool
	err := w.viewTxn("read pending plan", func(txn *badger.Txn) error {
		latest, found, err := last[Plan](txn, w.offsets)
		if err != nil || !found {
			return err
		}
		committed, err := exists(txn, recordKey(w.commits, latest.Batch))
		if err != nil {
			return err
		}
		p, pending = latest, !committed
		return nil
	})
	if !pending {
		p = Plan{}
	}
	return p, pending, err
}

// Batches calls fn for every retained plan in batch order, with its commit
// or nil if the batch is pending. It reads the log in pages, each page in
// its own transaction, and calls fn outside them, so fn may call the WAL;
// writes made meanwhile may or may not be seen. It stops at the first
// error from fn or ctx and returns it.
func (w *WAL) Batches(ctx context.Context, fn func(Plan, *Commit) error) error {
	type entry struct {
		plan   Plan
		commit *Commit
	}
	withCommit := func(txn *badger.Txn, p Plan) (entry, error) {
		c, found, err := get[Commit](txn, w.commits, p.Batch)
		if err != nil || !found {
			return entry{plan: p}, err
		}
		return entry{plan: p, commit: &c}, nil
	}
	return scan[Plan](ctx, w, "list batches", w.offsets, w.lowOffsets.load(), withCommit,
		func(e entry) error { return fn(e.plan, e.commit) })
}

// trimBatches deletes, within txn, plans and commits older than the
// latest Retain plans, keeping plans that have no commit. It returns a
// function that raises the low marks, to call once txn has committed.
func (w *WAL) trimBatches(txn *badger.Txn) (func(), error) {
	oldest, found, err := keepFrom(txn, w.offsets, w.log.retain)
	if err != nil || !found {
		return nil, err
	}
	deleted, lowPlans, err := deleteBefore(txn, w.offsets, w.lowOffsets.load(), oldest, trimBudget, func(batch int64) (bool, error) {
		committed, err := exists(txn, recordKey(w.commits, batch))
		return !committed, err // keep pending plans
	})
	if err != nil {
		return nil, err
	}
	_, lowCommits, err := deleteBefore(txn, w.commits, w.lowCommits.load(), oldest, trimBudget-deleted, nil)
	if err != nil {
		return nil, err
	}
	return func() {
		w.lowOffsets.raise(lowPlans)
		w.lowCommits.raise(lowCommits)
	}, nil
}

// writeTxn runs fn in one synced read-write transaction while holding the
// namespace's write token. Errors that are not the package's own are
// wrapped with op.
func (w *WAL) writeTxn(ctx context.Context, op string, fn func(*badger.Txn) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("offsets: %s: %w", op, err)
	}
	select {
	case w.write <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("offsets: %s: %w", op, ctx.Err())
	}
	defer func() { <-w.write }()
	return wrapOp(op, w.log.update(fn))
}

// viewTxn runs fn in a read-only transaction.
func (w *WAL) viewTxn(op string, fn func(*badger.Txn) error) error {
	return wrapOp(op, w.log.view(fn))
}

// wrapOp names the operation in errors that do not come from this package;
// the package's own errors already say what went wrong.
func wrapOp(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, own := range []error{ErrClosed, ErrConflict, ErrCorrupt, ErrInvalid, ErrNoPlan} {
		if errors.Is(err, own) {
			return err
		}
	}
	return fmt.Errorf("offsets: %s: %w", op, err)
}
