package badgerstore

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/weirstream/weir/statestore"
)

// storeBase is what the three store kinds share: the handle's identity, its
// key prefixes, its closed flag, and the lock that serialises its writes.
type storeBase struct {
	db        *DB
	name      string
	partition int32
	kind      statestore.Kind
	data      []byte // <name> 0x00 <partition> 'd'
	index     []byte // <name> 0x00 <partition> 'x'
	closed    atomic.Bool
	// reader handles (DB.Reader) refuse writes.
	reader bool
	// writeMu serialises the handle's writes, so ExpireBefore's read of
	// what it deletes and its deletes are not interleaved with a Put.
	writeMu sync.Mutex
}

// Name returns the store's name.
func (s *storeBase) Name() string { return s.name }

// Close releases the handle: later operations, and the Next of its open
// iterators, return statestore.ErrClosed. The rows stay in the database.
// Closing twice is not an error.
func (s *storeBase) Close() error {
	s.closed.Store(true)
	return nil
}

// wrap adds the store's name and partition to a Badger error.
func (s *storeBase) wrap(err error) error {
	if err == nil || errors.Is(err, statestore.ErrClosed) {
		return err
	}
	return fmt.Errorf("badgerstore: store %q partition %d: %w", s.name, s.partition, err)
}

// read runs fn in a read transaction.
func (s *storeBase) read(fn func(txn *badger.Txn) error) error {
	if s.closed.Load() {
		return statestore.ErrClosed
	}
	if err := s.db.acquire(); err != nil {
		return statestore.ErrClosed
	}
	defer s.db.release()
	if s.closed.Load() {
		return statestore.ErrClosed
	}
	return s.wrap(s.db.safeView(fn))
}

// write commits ops (see DB.write).
func (s *storeBase) write(ops ...op) error {
	return s.writing(func() error { return s.db.write(ops) })
}

// writing runs fn, a write of the store's rows, under the store's write
// lock and a reference to the DB, once the store is open and writable;
// it returns fn's error wrapped with the store's name.
func (s *storeBase) writing(fn func() error) error {
	if s.closed.Load() {
		return statestore.ErrClosed
	}
	if s.reader {
		return fmt.Errorf("badgerstore: store %q partition %d: %w", s.name, s.partition, ErrReadOnly)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.db.acquire(); err != nil {
		return statestore.ErrClosed
	}
	defer s.db.release()
	if s.closed.Load() {
		return statestore.ErrClosed
	}
	return s.wrap(fn())
}

// get returns a copy of the value of a row, never nil when found, from
// the DB's read cache if it holds the row.
func (s *storeBase) get(key []byte) (value []byte, ok bool, err error) {
	if s.closed.Load() {
		return nil, false, statestore.ErrClosed
	}
	value, ok, hit, gen := s.db.cache.get(key)
	if hit {
		return value, ok, nil
	}
	err = s.read(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if value, err = item.ValueCopy(nil); err != nil {
			return err
		}
		if value == nil {
			value = []byte{}
		}
		ok = true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	s.db.cache.fill(key, value, ok, gen)
	return value, ok, nil
}

// count returns the number of rows with prefix, reading keys only.
func (s *storeBase) count(prefix []byte) (int64, error) {
	var n int64
	err := s.read(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	return n, err
}

// kvStore is the Badger KeyValueStore: one data row per key,
// <prefix> 'd' <key> → value.
type kvStore struct{ *storeBase }

var _ statestore.KeyValueStore = (*kvStore)(nil)

func (s *kvStore) dataKey(key []byte) []byte {
	return append(append(make([]byte, 0, len(s.data)+len(key)), s.data...), key...)
}

// Get returns a copy of the value of key.
func (s *kvStore) Get(key []byte) ([]byte, bool, error) {
	return s.get(s.dataKey(key))
}

// Put sets key to value; a nil value deletes key, an empty one is stored.
func (s *kvStore) Put(key, value []byte) error {
	if value == nil {
		return s.Delete(key)
	}
	return s.write(op{key: s.dataKey(key), value: value})
}

// Delete removes key; deleting a missing key is not an error.
func (s *kvStore) Delete(key []byte) error {
	return s.write(op{key: s.dataKey(key), del: true})
}

// Range iterates the keys in [from, to) over a snapshot; nil bounds are
// open, and an empty, non-nil to is below every key.
func (s *kvStore) Range(from, to []byte) (statestore.Iterator, error) {
	var upper []byte
	if to != nil {
		upper = s.dataKey(to)
	}
	return s.iterate(s.dataKey(from), upper)
}

// PrefixScan iterates the keys that start with prefix over a snapshot.
func (s *kvStore) PrefixScan(prefix []byte) (statestore.Iterator, error) {
	lower := s.dataKey(prefix)
	return s.iterate(lower, prefixEnd(lower))
}

func (s *kvStore) iterate(lower, upper []byte) (statestore.Iterator, error) {
	c, err := s.openCursor(s.data, lower, upper)
	if err != nil {
		return nil, err
	}
	return &kvIterator{iterState{c: c}}, nil
}

// ApproximateNumEntries returns the number of keys. It counts them over a
// snapshot, reading keys only, so it costs time in proportion to the size
// of the store; the result is exact for that snapshot.
func (s *kvStore) ApproximateNumEntries() (int64, error) {
	return s.count(s.data)
}

// kvIterator walks the rows of a kvStore.
type kvIterator struct{ iterState }

var _ statestore.Iterator = (*kvIterator)(nil)

// Next advances to the next pair. It returns false at the end, after
// Close, or once the store is closed (then Err returns
// statestore.ErrClosed).
func (it *kvIterator) Next() bool {
	it.reset()
	skip := len(it.c.store.data)
	return it.c.step(func() (bool, error) {
		k, ok := it.c.advance()
		if !ok {
			return false, nil
		}
		return it.yield(bytes.Clone(k[skip:]), 0, 0)
	})
}
