package badgerstore

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/weirstream/weir/statestore"
)

// StoreStats describes one store partition of the database.
type StoreStats struct {
	// Store and Partition name the store partition.
	Store     string
	Partition int32
	// Kind is the kind recorded for it, zero if none.
	Kind statestore.Kind
	// Rows is the number of entries: keys, windows or sessions.
	Rows int64
	// Checkpoint is the recorded changelog offset and Writer the writer
	// generation recorded with it (see Position), if HasCheckpoint.
	Checkpoint    int64
	Writer        int32
	HasCheckpoint bool
}

// Stats returns every store partition that has rows, a kind record or a
// checkpoint, ordered by store, then partition: for `weir inspect` and
// progress reports.
//
// Row counts are exact for one snapshot of the database, and counting reads
// every key (not the values), so Stats costs time in proportion to the
// number of entries; call it for reports, not per record.
func (db *DB) Stats() ([]StoreStats, error) {
	byID := make(map[storeID]*StoreStats)
	stat := func(name string, partition int32) *StoreStats {
		id := storeID{name, partition}
		s, ok := byID[id]
		if !ok {
			s = &StoreStats{Store: name, Partition: partition}
			byID[id] = s
		}
		return s
	}
	err := db.view(func(txn *badger.Txn) error {
		if err := scanMeta(txn, metaKind, func(name string, partition int32, v []byte) error {
			if len(v) != 1 {
				return fmt.Errorf("%w: kind record of store %q partition %d: %v", ErrCorrupt, name, partition, v)
			}
			stat(name, partition).Kind = statestore.Kind(v[0])
			return nil
		}); err != nil {
			return err
		}
		if err := scanMeta(txn, metaCheckpoint, func(name string, partition int32, v []byte) error {
			pos, ok := decodePosition(v)
			if !ok {
				return fmt.Errorf("%w: checkpoint of store %q partition %d: %v", ErrCorrupt, name, partition, v)
			}
			s := stat(name, partition)
			s.Checkpoint, s.Writer, s.HasCheckpoint = pos.Offset, pos.Writer, true
			return nil
		}); err != nil {
			return err
		}

		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		var cur *StoreStats
		var curPrefix []byte
		for it.Seek([]byte{1}); it.Valid(); {
			k := it.Item().Key()
			name, partition, tag, ok := parseRowKey(k)
			if !ok {
				return fmt.Errorf("%w: row key %q names no store partition", ErrCorrupt, k)
			}
			if cur == nil || cur.Store != name || cur.Partition != partition {
				cur = stat(name, partition)
				curPrefix = partitionPrefix(name, partition)
			}
			switch tag {
			case tagData:
				cur.Rows++
				it.Next()
			case tagIndex:
				// Skip the index rows in one seek.
				it.Seek(withTag(curPrefix, tagIndex+1))
			default:
				return fmt.Errorf("%w: row key %q has unknown tag %q", ErrCorrupt, k, tag)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerstore: stats: %w", err)
	}
	out := make([]StoreStats, 0, len(byID))
	for _, s := range byID {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b StoreStats) int {
		return cmp.Or(strings.Compare(a.Store, b.Store), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// scanMeta calls fn for every metadata record of one kind (metaKind or
// metaCheckpoint).
func scanMeta(txn *badger.Txn, what byte, fn func(name string, partition int32, v []byte) error) error {
	prefix := []byte{0, what}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().Key()
		name, partition, _, ok := parseRowKey(append(k[len(prefix):len(k):len(k)], 0))
		if !ok {
			return fmt.Errorf("%w: metadata key %q", ErrCorrupt, k)
		}
		if err := it.Item().Value(func(v []byte) error { return fn(name, partition, v) }); err != nil {
			return err
		}
	}
	return nil
}

// Get returns the committed value of key in a store partition, for offline
// lookups: key is the store-level key, as in Change (for window and session
// stores the statestore.EncodeWindowKey or EncodeSessionKey key). A store
// partition with no kind record has no keys.
func (db *DB) Get(store string, partition int32, key []byte) (value []byte, ok bool, err error) {
	if err := validateName(store); err != nil {
		return nil, false, fmt.Errorf("badgerstore: get: %w", err)
	}
	fail := func(err error) ([]byte, bool, error) {
		return nil, false, fmt.Errorf("badgerstore: get from store %q partition %d: %w", store, partition, err)
	}
	if err := db.acquire(); err != nil {
		return fail(err)
	}
	defer db.release()
	kind, known, err := db.kindOf(metaKey(metaKind, store, partition))
	if err != nil {
		return fail(err)
	}
	if !known {
		return nil, false, nil
	}
	data, _, err := rows(kind, partitionPrefix(store, partition), key)
	if err != nil {
		return fail(fmt.Errorf("%w: %w", ErrInvalid, err))
	}
	err = db.bdb.View(func(txn *badger.Txn) error {
		item, err := txn.Get(data)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		value, err = item.ValueCopy(nil)
		if value == nil {
			value = []byte{}
		}
		ok = err == nil
		return err
	})
	if err != nil {
		return fail(err)
	}
	return value, ok, nil
}
