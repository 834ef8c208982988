package statestore

import (
	"bytes"
	"math"
	"time"
)

// memWindow is the in-memory WindowStore: the entries (key, start) and an
// index by start, in memTimed.
type memWindow struct{ memTimed }

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
	s := &memWindow{}
	s.init(name, windowLayout)
	return s
}

// Put stores a copy of value for key in the window starting at start. A nil
// value deletes the window.
func (s *memWindow) Put(key []byte, start time.Time, value []byte) error {
	return s.put(key, start.UnixMilli(), 0, value)
}

// Get returns a copy of the value of key in the window starting at start.
func (s *memWindow) Get(key []byte, start time.Time) ([]byte, bool, error) {
	return s.get(entry{key: key, start: start.UnixMilli()})
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
	cur, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	it := &memWindowIterator{all: all, from: from.UnixMilli(), to: to.UnixMilli()}
	it.closed = &s.closed
	it.cur = cur
	if !all {
		it.key = bytes.Clone(key)
		it.cur.Seek(entry{key: it.key, start: it.from})
	}
	return it, nil
}

// memWindowIterator walks a snapshot of a memWindow. It is not safe for
// concurrent use.
type memWindowIterator struct {
	snapshotIter[entry]
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
		return it.yield(entry{}, false)
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
			it.cur.Seek(entry{key: item.key, start: it.from})
		case item.start > it.to:
			// key+0x00 is the smallest key after key.
			next := append(bytes.Clone(item.key), 0)
			it.cur.Seek(entry{key: next, start: math.MinInt64})
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
