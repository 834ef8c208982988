package tasks

import "github.com/weirstream/weir/statestore"

// SetBeforeApply makes fn run before each state layer's Badger write; its
// error fails the write.
func SetBeforeApply(r *Runtime, fn func() error) { r.layers.beforeApply = fn }

// DBReader returns a reader of the Badger rows of a store partition,
// without the layers on their way there.
func DBReader(r *Runtime, store string, partition int32) (statestore.Store, error) {
	info, err := r.Store(store)
	if err != nil {
		return nil, err
	}
	return r.db.Reader(info.Spec, partition)
}

// SetBeforeTxnCommit makes fn run before each transaction's commit.
func SetBeforeTxnCommit(r *Runtime, fn func()) { r.committer.(*txnOutput).beforeCommit = fn }

// SetBeforeRestoreApply makes fn run before each restore batch's Badger
// write; its error fails the write.
func SetBeforeRestoreApply(r *Runtime, fn func() error) { r.beforeRestoreApply = fn }

// StoreCheckpoint returns the Badger checkpoint of a store partition.
func StoreCheckpoint(r *Runtime, store string, partition int32) (offset int64, ok bool, err error) {
	pos, ok, err := r.db.Checkpoint(store, partition)
	return pos.Offset, ok, err
}

// RestoreBatch is how many records one restore batch holds at most.
const RestoreBatch = restoreBatch

// DoomHeld dooms the open transaction as a held record that failed when
// sent does (heldSends.fail).
func DoomHeld(r *Runtime, err error) { r.committer.(*txnOutput).held.fail(err) }
