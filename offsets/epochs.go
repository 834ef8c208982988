package offsets

import (
	"bytes"
	"context"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// AppendEpoch appends e to the epoch log, synced to disk. Continuous mode
// calls it after the epoch's Kafka commit succeeded, so the log trails
// Kafka: it records progress for inspection and restarts, and Kafka's
// committed offsets stay the truth. e.Epoch must be greater than the
// latest epoch, else the error wraps ErrConflict; appending an epoch
// identical to the latest one succeeds and changes nothing, so a retried
// append is harmless. The same transaction deletes epochs older than the
// latest Retain.
func (w *WAL) AppendEpoch(ctx context.Context, e Epoch) error {
	val, err := e.MarshalBinary()
	if err != nil {
		return err
	}
	low := int64(-1)
	err = w.writeTxn(ctx, fmt.Sprintf("append epoch %d", e.Epoch), func(txn *badger.Txn) error {
		latest, found, err := last[Epoch](txn, w.epochs)
		if err != nil {
			return err
		}
		if found && e.Epoch <= latest.Epoch {
			if e.Epoch == latest.Epoch {
				latestVal, err := latest.MarshalBinary()
				if err != nil {
					return err
				}
				if bytes.Equal(latestVal, val) {
					return nil
				}
			}
			return fmt.Errorf("%w: epoch %d is not after the latest epoch %d", ErrConflict, e.Epoch, latest.Epoch)
		}
		if err := txn.Set(recordKey(w.epochs, e.Epoch), val); err != nil {
			return err
		}
		oldest, found, err := keepFrom(txn, w.epochs, w.log.retain)
		if err != nil || !found {
			return err
		}
		_, low, err = deleteBefore(txn, w.epochs, w.lowEpochs.load(), oldest, trimBudget, nil)
		return err
	})
	if err == nil && low >= 0 {
		w.lowEpochs.raise(low)
	}
	return err
}

// LatestEpoch returns the epoch with the highest number, and whether there
// is one.
func (w *WAL) LatestEpoch() (Epoch, bool, error) {
	return viewLast[Epoch](w, "read latest epoch", w.epochs)
}

// Epochs calls fn for every retained epoch in order. Like Batches, it reads
// in pages and calls fn outside any transaction; it stops at the first
// error from fn or ctx and returns it.
func (w *WAL) Epochs(ctx context.Context, fn func(Epoch) error) error {
	asIs := func(_ *badger.Txn, e Epoch) (Epoch, error) { return e, nil }
	return scan[Epoch](ctx, w, "list epochs", w.epochs, w.lowEpochs.load(), asIs, fn)
}
