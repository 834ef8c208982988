package statestore

import (
	"bytes"
	"cmp"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// windowItem is one entry of the in-memory window store: the value of key in
// the window starting at start (Unix milliseconds).
type windowItem struct {
	key   []byte
	start int64
	value []byte
}

// compareWindowByKey orders by key, then start: the store's iteration order.
func compareWindowByKey(a, b windowItem) int {
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.start, b.start)
}

// compareWindowByStart orders by start, then key: the expiry index's order.
func compareWindowByStart(a, b windowItem) int {
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	return bytes.Compare(a.key, b.key)
}

// memWindow is the in-memory WindowStore.
type memWindow struct {
	name   string
	closed atomic.Bool
	mu     sync.RWMutex
	byKey  *btree[windowItem] // the entries
	expiry *btree[windowItem] // (start, key) of every entry, values unset
}

var _ WindowStore = (*memWindow)(nil)

// NewInMemoryWindow returns an empty in-memory WindowStore named name.
//
// Entries are ordered by key (bytes.Compare), then window start. Times are
// kept at millisecond precision (Kafka timestamps are milliseconds): a start
// is truncated with UnixMilli, and returned as time.UnixMilli. A second index
// ordered by start makes ExpireBefore cost O(log n) per expired window.
//
// Copies, snapshots and concurrency are as for NewInMemoryKeyValue: the store
// copies what it is given and what it returns, iterators walk a snapshot (so
// the caller may write while iterating), and the store is safe for
// concurrent use.
func NewInMemoryWindow(name string) WindowStore {
	return &memWindow{
		name:   name,
		byKey:  newBtree(compareWindowByKey),
		expiry: newBtree(compareWindowByStart),
	}
}

// Name returns the store's name.
func (s *memWindow) Name() string { return s.name }

// Close drops the store's contents. Later operations, and the Next of open
// iterators, return ErrClosed. Closing twice is not an error.
func (s *memWindow) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed.Store(true)
	s.byKey = newBtree(compareWindowByKey)
	s.expiry = newBtree(compareWindowByStart)
	return nil
}

// Put stores a copy of value for key in the window starting at start. A nil
// value deletes the window.
func (s *memWindow) Put(key []byte, start time.Time, value []byte) error {
	ms := start.UnixMilli()
	if value == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed.Load() {
			return ErrClosed
		}
		s.delete(windowItem{key: key, start: ms})
		return nil
	}
	buf := make([]byte, len(key)+len(value))
	n := copy(buf, key)
	copy(buf[n:], value)
	item := windowItem{key: buf[:n:n], start: ms, value: buf[n:]}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.byKey.Set(item)
	// Set even on overwrite: the index must not keep the old buffer, and
	// with it the old value, alive.
	s.expiry.Set(windowItem{key: item.key, start: ms})
	return nil
}

// delete removes item's entry from both indexes. The caller holds the write
// lock.
func (s *memWindow) delete(item windowItem) {
	if old, ok := s.byKey.Delete(item); ok {
		s.expiry.Delete(windowItem{key: old.key, start: old.start})
	}
}

// Get returns a copy of the value of key in the window starting at start.
func (s *memWindow) Get(key []byte, start time.Time) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	it, ok := s.byKey.Get(windowItem{key: key, start: start.UnixMilli()})
	if !ok {
		return nil, false, nil
	}
	return bytes.Clone(it.value), true, nil
}

// Fetch iterates the windows of key whose start is in [from, to], ordered by
// start, over a snapshot. from after to gives an empty iterator.
func (s *memWindow) Fetch(key []byte, from, to time.Time) (WindowIterator, error) {
	return s.iterate(key, false, from, to)
}

// FetchAll iterates the windows of every key whose start is in [from, to],
// ordered by key, then start, over a snapshot. It seeks past the windows out
// of range, so its cost grows with the number of keys and of matches, not of
// windows.
func (s *memWindow) FetchAll(from, to time.Time) (WindowIterator, error) {
	return s.iterate(nil, true, from, to)
}

func (s *memWindow) iterate(key []byte, all bool, from, to time.Time) (WindowIterator, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	it := &memWindowIterator{all: all, from: from.UnixMilli(), to: to.UnixMilli()}
	it.closed = &s.closed
	it.cur = newBtreeCursor(compareWindowByKey, s.byKey.snapshot())
	if !all {
		it.key = bytes.Clone(key)
		it.cur.Seek(windowItem{key: it.key, start: it.from})
	}
	return it, nil
}

// ExpireBefore deletes every window that starts before cutoff.
func (s *memWindow) ExpireBefore(cutoff time.Time) error {
	ms := cutoff.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	for {
		oldest, ok := s.expiry.Min()
		if !ok || oldest.start >= ms {
			return nil
		}
		s.expiry.Delete(oldest)
		s.byKey.Delete(oldest)
	}
}

// memWindowIterator walks a snapshot of a memWindow. It is not safe for
// concurrent use.
type memWindowIterator struct {
	snapshotIter[windowItem]
	all      bool   // FetchAll: every key
	key      []byte // Fetch: the key
	from, to int64

	keyCopy, value []byte // copies of the current item's, made on demand
}

var _ WindowIterator = (*memWindowIterator)(nil)

// Next advances to the next window. It returns false at the end, after
// Close, or once the store is closed (then Err returns ErrClosed).
func (it *memWindowIterator) Next() bool {
	it.keyCopy, it.value = nil, nil
	if !it.begin() {
		return false
	}
	if it.from > it.to {
		return it.yield(windowItem{}, false)
	}
	for {
		item, ok := it.cur.Next()
		if !ok {
			return it.yield(item, false)
		}
		if !it.all {
			// Fetch seeked to (key, from): stop at the first window past
			// the range.
			ok = bytes.Equal(item.key, it.key) && item.start <= it.to
			return it.yield(item, ok)
		}
		switch {
		case item.start < it.from:
			it.cur.Seek(windowItem{key: item.key, start: it.from})
		case item.start > it.to:
			// key+0x00 is the smallest key after key.
			next := append(bytes.Clone(item.key), 0)
			it.cur.Seek(windowItem{key: next, start: math.MinInt64})
		default:
			return it.yield(item, true)
		}
	}
}

// Key returns a copy of the current key, or nil when not positioned on one.
func (it *memWindowIterator) Key() []byte {
	if it.valid && it.keyCopy == nil {
		it.keyCopy = cloneNonNil(it.item.key)
	}
	return it.keyCopy
}

// Window returns the start of the current window, at millisecond precision.
func (it *memWindowIterator) Window() time.Time {
	if !it.valid {
		return time.Time{}
	}
	return time.UnixMilli(it.item.start)
}

// Value returns a copy of the current value, or nil when not positioned on
// one.
func (it *memWindowIterator) Value() []byte {
	if it.valid && it.value == nil {
		it.value = cloneNonNil(it.item.value)
	}
	return it.value
}
