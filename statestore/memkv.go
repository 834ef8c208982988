package statestore

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// kvItem is one entry of the in-memory key-value store. key and value share
// one allocation and are never modified once stored.
type kvItem struct {
	key, value []byte
}

func compareKV(a, b kvItem) int { return bytes.Compare(a.key, b.key) }

// memKeyValue is the in-memory KeyValueStore.
type memKeyValue struct {
	name   string
	closed atomic.Bool
	mu     sync.RWMutex
	tree   *btree[kvItem]
}

var _ KeyValueStore = (*memKeyValue)(nil)

// NewInMemoryKeyValue returns an empty in-memory KeyValueStore named name.
//
// Keys are ordered by bytes.Compare; a nil and an empty key are the same key.
// The store copies the keys and values it is given and those it returns, so
// callers may reuse their buffers. Iterators walk a snapshot taken when they
// are opened: writes made while iterating, even from the same goroutine, are
// allowed and are not seen by the iterator. A snapshot costs O(1); the first
// write after it copies O(log n) tree nodes.
//
// The store is safe for concurrent use: writes take a write lock, reads a
// read lock, and iterators hold no lock. An iterator itself is not safe for
// concurrent use.
func NewInMemoryKeyValue(name string) KeyValueStore {
	return &memKeyValue{name: name, tree: newBtree(compareKV)}
}

// Name returns the store's name.
func (s *memKeyValue) Name() string { return s.name }

// Close drops the store's contents. Later operations, and the Next of open
// iterators, return ErrClosed. Closing twice is not an error.
func (s *memKeyValue) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed.Store(true)
	s.tree = newBtree(compareKV)
	return nil
}

// Get returns a copy of the value of key.
func (s *memKeyValue) Get(key []byte) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	it, ok := s.tree.Get(kvItem{key: key})
	if !ok {
		return nil, false, nil
	}
	return bytes.Clone(it.value), true, nil
}

// Put stores copies of key and value. A nil value deletes key; an empty,
// non-nil value is stored.
func (s *memKeyValue) Put(key, value []byte) error {
	if value == nil {
		return s.Delete(key)
	}
	buf := make([]byte, len(key)+len(value))
	n := copy(buf, key)
	copy(buf[n:], value)
	item := kvItem{key: buf[:n:n], value: buf[n:]}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.tree.Set(item)
	return nil
}

// Delete removes key; deleting a missing key is not an error.
func (s *memKeyValue) Delete(key []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.tree.Delete(kvItem{key: key})
	return nil
}

// Range iterates the keys in [from, to) in ascending order over a snapshot.
// A nil from starts at the first key; a nil to runs to the last key (an
// empty, non-nil to is a bound below every key, so the range is empty).
func (s *memKeyValue) Range(from, to []byte) (Iterator, error) {
	return s.iterate(from, to, to == nil)
}

// PrefixScan iterates the keys that start with prefix in ascending order over
// a snapshot. An empty prefix matches every key.
func (s *memKeyValue) PrefixScan(prefix []byte) (Iterator, error) {
	end := prefixEnd(prefix)
	return s.iterate(prefix, end, end == nil)
}

func (s *memKeyValue) iterate(from, to []byte, open bool) (Iterator, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	it := &memKVIterator{open: open}
	it.closed = &s.closed
	it.cur = newBtreeCursor(compareKV, s.tree.snapshot())
	if !open {
		it.to = bytes.Clone(to)
	}
	if len(from) > 0 {
		it.cur.Seek(kvItem{key: from})
	}
	return it, nil
}

// ApproximateNumEntries returns the exact number of keys.
func (s *memKeyValue) ApproximateNumEntries() (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return int64(s.tree.Len()), nil
}

// prefixEnd returns the smallest key greater than every key that starts with
// prefix, or nil if there is none (prefix is empty or all 0xff).
func prefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := bytes.Clone(prefix[:i+1])
			end[i]++
			return end
		}
	}
	return nil
}

// memKVIterator walks a snapshot of a memKeyValue. It is not safe for
// concurrent use.
type memKVIterator struct {
	snapshotIter[kvItem]
	to         []byte
	open       bool   // no upper bound
	key, value []byte // copies of the current item's, made on demand
}

var _ Iterator = (*memKVIterator)(nil)

// Next advances to the next pair. It returns false at the end, after Close,
// or once the store is closed (then Err returns ErrClosed).
func (it *memKVIterator) Next() bool {
	it.key, it.value = nil, nil
	if !it.begin() {
		return false
	}
	item, ok := it.cur.Next()
	ok = ok && (it.open || bytes.Compare(item.key, it.to) < 0)
	return it.yield(item, ok)
}

// Key returns a copy of the current key, or nil when not positioned on one.
func (it *memKVIterator) Key() []byte {
	if it.valid && it.key == nil {
		it.key = cloneNonNil(it.item.key)
	}
	return it.key
}

// Value returns a copy of the current value, or nil when not positioned on
// one.
func (it *memKVIterator) Value() []byte {
	if it.valid && it.value == nil {
		it.value = cloneNonNil(it.item.value)
	}
	return it.value
}

// cloneNonNil returns a copy of b that is never nil.
func cloneNonNil(b []byte) []byte {
	return append(make([]byte, 0, len(b)), b...)
}
