// Package badgerstore keeps weir's state stores in Badger: one database per
// instance, under the instance's state directory, holding every store and
// partition of the instance's tasks with their changelog checkpoints.
//
// The stores implement the statestore interfaces (KeyValueStore,
// WindowStore, SessionStore) and meet their contracts, so processors run on
// them as on the in-memory stores; the tests run one table of contract tests
// against both, and against the staging overlays over both.
//
// # Usage
//
//	db, err := badgerstore.Open(filepath.Join(stateDir, "stores"), badgerstore.Options{Logger: logger})
//	if err != nil { ... }
//	defer db.Close()
//
//	// On assignment: open the task's stores, restore from the checkpoint.
//	s, err := db.Factory().Open(statestore.Spec{Name: "counts", Kind: statestore.KindKeyValue}, partition)
//	from, ok, err := db.Checkpoint("counts", partition) // !ok: wipe with DropPartition, restore from the start; else from from.Offset
//	overlay, err := statestore.NewStagedKeyValue(s.(statestore.KeyValueStore), 64<<20)
//
//	// Processors write the overlay; interactive queries read overlay.Base().
//	// After the Kafka transaction of an epoch commits:
//	staged, err := overlay.Changes()
//	changes := make([]badgerstore.Change, 0, len(staged))
//	for _, c := range staged {
//		changes = append(changes, badgerstore.Change{Store: "counts", Partition: partition,
//			Kind: statestore.KindKeyValue, Key: c.Key, Value: c.Value})
//	}
//	err = db.Apply(changes, map[badgerstore.StorePartition]badgerstore.Position{{Store: "counts", Partition: partition}: {Offset: nextOffset}})
//	overlay.Reset()
//	// After an abort: overlay.Reset() alone — nothing to wipe or restore.
//
// Apply writes the changes of every store of an epoch with their
// checkpoints in one Badger transaction, so committed state and checkpoints
// move together; DropPartition wipes a store partition whose checkpoint
// cannot be trusted; Stats and Get serve `weir inspect` (open the database
// with Options.ReadOnly for that).
//
// # Key layout
//
// Every key of a store partition starts with <store name> 0x00 <partition,
// 4 bytes big-endian>, then a tag: 'd' for data rows, 'x' for the expiry
// index of window and session stores. Keys starting with 0x00 hold the
// metadata: the layout version, one checkpoint and one kind record per store
// partition. Data rows are
//
//	key-value:  'd' key                            → value
//	window:     'd' esc(key) time(start)           → value
//	session:    'd' esc(key) time(start) time(end) → value
//
// and index rows 'x' time(start) esc(key) (window) and 'x' time(end) esc(key)
// time(start) (session). esc escapes 0x00 as 0x00 0xff and ends the key with
// 0x00 0x01, keeping byte order and making no escaped key a prefix of
// another; time is the Unix millisecond time, big-endian with the sign bit
// flipped, so negative times sort first. So Fetch is one range scan, FetchAll
// seeks over the windows out of range key by key, FindSessions scans one key
// up to latestStart in (start, end) order as the interface promises, and
// ExpireBefore is one scan of the index up to the cutoff.
//
// # Differences from the in-memory stores
//
// The contract tests pin the behaviour the two share. Where they differ it
// is by design:
//
//   - Close releases a handle and keeps the rows: reopening finds the state
//     (the in-memory Close drops it).
//   - ApproximateNumEntries counts keys over a snapshot, in time
//     proportional to the store's size; so does Stats.
//   - Badger limits keys to about 64 KB, after the prefix and escaping.
//   - The stores write through to Badger: a Put is a Badger transaction. An
//     engine stages an epoch in a statestore overlay and writes it with one
//     Apply.
//   - ExpireBefore deletes in chunks of atomic transactions; an interrupted
//     call leaves some windows to the next one. The window and session stores
//     implement statestore.ExpiryScanner, so a staging overlay's Changes lists
//     the deletes of a staged ExpireBefore.
//
// # Checkpoints and crashes
//
// A checkpoint is never ahead of the rows it covers:
//
//   - Apply writes changes and checkpoints in one transaction. A set too
//     large for one (about 15% of a memtable) is split: the changes go first
//     through a Badger WriteBatch, the checkpoints last in a transaction of
//     their own. A crash in between leaves rows newer than their checkpoint,
//     which restore rewrites with the same values from the changelog.
//   - DropPartition deletes the checkpoint first, then the rows; a crash in
//     between leaves rows without a checkpoint, which the engine wipes again.
//   - A store partition with no checkpoint must be wiped and restored from
//     the start of its changelog.
//
// # Badger options
//
// Open sizes Badger for a process that holds other things too: two 16 MB
// memtables (Options.MemTableSize), no block cache and no compression
// (tables are read from their memory map), values up to 1 MB kept in the
// LSM tree so no value log garbage collection is needed, 64 MB value log
// files, conflict detection off (writes are blind), Badger's metrics off,
// and its logging through log/slog. Writes are not fsynced unless
// Options.SyncWrites: losing the last writes in a crash loses their
// checkpoints with them, and restore replays the changelog.
//
// A DB, its factory and its stores are safe for concurrent use; iterators
// are not.
package badgerstore
