package badgerstore

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/weirstream/weir/statestore"
)

// Change is one write of a committed epoch or batch to one store partition,
// as Apply takes it: what a staging overlay's Changes returns, with the
// store named.
type Change struct {
	// Store and Partition name the store partition.
	Store     string
	Partition int32
	// Kind is the store's kind; it selects how Key is read.
	Kind statestore.Kind
	// Key is the store-level key: the key of a key-value store, the
	// statestore.EncodeWindowKey key of a window store, the
	// statestore.EncodeSessionKey key of a session store.
	Key []byte
	// Value is the new value; nil deletes.
	Value []byte
}

// StorePartition names one partition of one store.
type StorePartition struct {
	Store     string
	Partition int32
}

// Position is a store partition's changelog checkpoint: how far its
// committed state reflects its changelog.
type Position struct {
	// Offset is the changelog offset up to which the state reflects the
	// changelog — the engine picks the convention, such as the offset of
	// the next record to restore from.
	Offset int64
	// Writer is the highest writer generation among the changelog records
	// applied so far (0 if none carried one): a restore that goes on from
	// this checkpoint skips records of older writers (weir's runtime stamps
	// every changelog record with its task's generation, so that a replaced
	// owner's late records are not restored).
	Writer int32
}

// Apply writes changes and checkpoints: for each store partition in
// checkpoints, the position up to which its state now reflects the
// changelog. A later change of a key wins over an earlier one; store
// partitions that have no change may still get a checkpoint.
//
// Apply validates everything first and writes nothing if an argument is
// invalid (an error wrapping ErrInvalid, or statestore.ErrInvalidSession for
// an inverted session) or a store partition is recorded as another kind.
// It then writes everything in one Badger transaction, so after a crash
// either all of it is there or none. A set too large for one transaction
// (see DefaultMemTableSize) is split: the changes go first, through a
// Badger WriteBatch of several transactions, and the checkpoints last, in a
// transaction of their own, so a checkpoint is never ahead of its data. A
// crash in between leaves some changes of the set applied under the old
// checkpoints; restoring from them replays the changelog over those rows,
// which rewrites them with the same values, so the state is still exact.
func (db *DB) Apply(changes []Change, checkpoints map[StorePartition]Position) error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.release()
	if db.readOnly {
		return ErrReadOnly
	}
	data, kinds, err := changeOps(changes)
	if err != nil {
		return fmt.Errorf("badgerstore: apply: %w", err)
	}
	var marks []op
	for sp, kind := range kinds {
		mark, err := db.kindMark(sp, kind)
		if err != nil {
			return fmt.Errorf("badgerstore: apply: %w", err)
		}
		marks = append(marks, mark...)
	}
	ckpts := make([]op, 0, len(checkpoints))
	for sp, pos := range checkpoints {
		if err := validateName(sp.Store); err != nil {
			return fmt.Errorf("badgerstore: apply: checkpoint: %w", err)
		}
		if pos.Offset < 0 || pos.Writer < 0 {
			return fmt.Errorf("badgerstore: apply: %w: negative checkpoint %+v for store %q partition %d", ErrInvalid, pos, sp.Store, sp.Partition)
		}
		ckpts = append(ckpts, op{key: metaKey(metaCheckpoint, sp.Store, sp.Partition), value: encodePosition(pos)})
	}

	rows := append(marks, data...)
	err = db.commit(append(rows[:len(rows):len(rows)], ckpts...))
	if errors.Is(err, badger.ErrTxnTooBig) {
		db.logger.Debug("badgerstore: apply split over several transactions", "rows", len(rows), "checkpoints", len(ckpts))
		if err = db.writeBatch(rows); err == nil {
			err = db.write(ckpts)
		}
	}
	if err != nil {
		return fmt.Errorf("badgerstore: apply %d changes: %w", len(changes), err)
	}
	return nil
}

// changeOps validates changes and returns their row writes, a later change
// of a row replacing an earlier one in place, and the kind of each store
// partition they write.
// kindMark checks that the database holds sp's rows as a store of kind,
// or holds none yet: then it returns the op that records kind.
func (db *DB) kindMark(sp StorePartition, kind statestore.Kind) ([]op, error) {
	key := metaKey(metaKind, sp.Store, sp.Partition)
	recorded, ok, err := db.kindOf(key)
	switch {
	case err != nil:
		return nil, err
	case ok && recorded != kind:
		return nil, fmt.Errorf("%w: %s changes to store %q partition %d, which the database holds as a %s store",
			ErrInvalid, kind, sp.Store, sp.Partition, recorded)
	case !ok:
		return []op{{key: key, value: []byte{byte(kind)}}}, nil
	}
	return nil, nil
}

func changeOps(changes []Change) ([]op, map[StorePartition]statestore.Kind, error) {
	ops := make([]op, 0, 2*len(changes))
	kinds := make(map[StorePartition]statestore.Kind)
	prefixes := make(map[StorePartition][]byte)
	seen := make(map[string]int, len(changes)) // data key → position in ops
	for i, c := range changes {
		sp := StorePartition{c.Store, c.Partition}
		prefix, ok := prefixes[sp]
		if !ok {
			if err := validateName(c.Store); err != nil {
				return nil, nil, fmt.Errorf("change %d: %w", i, err)
			}
			prefix = partitionPrefix(c.Store, c.Partition)
			prefixes[sp] = prefix
			kinds[sp] = c.Kind
		} else if kinds[sp] != c.Kind {
			return nil, nil, fmt.Errorf("change %d: %w: %s change to store %q partition %d after %s changes",
				i, ErrInvalid, c.Kind, c.Store, c.Partition, kinds[sp])
		}
		data, index, err := rows(c.Kind, prefix, c.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("change %d to store %q partition %d: %w: %w", i, c.Store, c.Partition, ErrInvalid, err)
		}
		if c.Kind == statestore.KindSession && c.Value != nil {
			if _, start, end, _ := statestore.DecodeSessionKey(c.Key); end.Before(start) {
				return nil, nil, fmt.Errorf("change %d to store %q partition %d: %w", i, c.Store, c.Partition, statestore.ErrInvalidSession)
			}
		}
		writes := []op{{key: data, value: c.Value, del: c.Value == nil}}
		if index != nil {
			writes = append(writes, op{key: index, value: []byte{}, del: c.Value == nil})
		}
		if at, ok := seen[string(data)]; ok {
			copy(ops[at:], writes)
			continue
		}
		seen[string(data)] = len(ops)
		ops = append(ops, writes...)
	}
	return ops, kinds, nil
}

// Checkpoint returns the changelog position recorded for the store
// partition by the last Apply that named it, and whether there is one: the
// offset up to which the store's committed state reflects its changelog,
// and the newest writer generation applied. None means the state cannot be
// trusted: wipe it with DropPartition and restore the whole changelog.
func (db *DB) Checkpoint(store string, partition int32) (pos Position, ok bool, err error) {
	if err := validateName(store); err != nil {
		return Position{}, false, fmt.Errorf("badgerstore: checkpoint: %w", err)
	}
	key := metaKey(metaCheckpoint, store, partition)
	err = db.view(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			pos, ok = decodePosition(v)
			if !ok {
				return fmt.Errorf("%w: checkpoint %v", ErrCorrupt, v)
			}
			return nil
		})
	})
	if err != nil {
		return Position{}, false, fmt.Errorf("badgerstore: checkpoint of store %q partition %d: %w", store, partition, err)
	}
	return pos, ok, nil
}

// encodePosition is a checkpoint's value: the offset (8 bytes, big
// endian), then the writer generation (4 bytes) if it is not 0 — so a
// checkpoint without one reads as databases before writer generations
// wrote it.
func encodePosition(p Position) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(p.Offset))
	if p.Writer != 0 {
		b = binary.BigEndian.AppendUint32(b, uint32(p.Writer))
	}
	return b
}

// decodePosition reads encodePosition's value; false if it is not one.
func decodePosition(v []byte) (Position, bool) {
	if len(v) != 8 && len(v) != 12 {
		return Position{}, false
	}
	p := Position{Offset: int64(binary.BigEndian.Uint64(v))}
	if len(v) == 12 {
		p.Writer = int32(binary.BigEndian.Uint32(v[8:]))
	}
	return p, p.Offset >= 0 && p.Writer >= 0
}

// DropPartition deletes every row of the store partition, its checkpoint
// and its kind record: for a task whose state must be rebuilt from the
// changelog (a corrupt or missing checkpoint). Open handles of the store
// stay usable and see it empty. The checkpoint goes first, so a crash in
// the middle leaves rows without a checkpoint, which restore wipes again,
// never a checkpoint over missing rows.
//
// It uses Badger's DropPrefix, which stops all writes to the database while
// it runs; operations on the DB wait for it.
func (db *DB) DropPartition(store string, partition int32) error {
	if err := validateName(store); err != nil {
		return fmt.Errorf("badgerstore: drop partition: %w", err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	if db.readOnly {
		return ErrReadOnly
	}
	err := db.commit([]op{
		{key: metaKey(metaCheckpoint, store, partition), del: true},
		{key: metaKey(metaKind, store, partition), del: true},
	})
	if err == nil {
		err = db.bdb.DropPrefix(partitionPrefix(store, partition))
		db.cache.clear()
	}
	if err != nil {
		return fmt.Errorf("badgerstore: drop store %q partition %d: %w", store, partition, err)
	}
	return nil
}
