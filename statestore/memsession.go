package statestore

import (
	"bytes"
	"math"
	"time"
)

// memSession is the in-memory SessionStore: the entries (key, start, end)
// and an index by end, in memTimed.
type memSession struct{ memTimed }

var _ SessionStore = (*memSession)(nil)

// NewInMemorySession returns an empty in-memory SessionStore named name.
//
// Sessions are ordered by key (bytes.Compare), then start, then end. Times
// are kept at millisecond precision: they are truncated with UnixMilli and
// returned as time.UnixMilli. A second index ordered by end makes
// ExpireBefore cost O(log n) per expired session.
//
// Copies, snapshots and concurrency are as for NewInMemoryKeyValue: the store
// copies what it is given and what it returns, iterators walk a snapshot (so
// the caller may write while iterating, as a session merge does), and the
// store is safe for concurrent use.
func NewInMemorySession(name string) SessionStore {
	s := &memSession{}
	s.init(name, sessionLayout)
	return s
}

// Put stores a copy of value for the session [start, end] of key. A nil value
// deletes the session. A session that ends before it starts is an error
// wrapping ErrInvalidSession.
func (s *memSession) Put(key []byte, start, end time.Time, value []byte) error {
	startMs, endMs := start.UnixMilli(), end.UnixMilli()
	if err := checkSession(key, startMs, endMs, value); err != nil {
		return err
	}
	return s.put(key, startMs, endMs, value)
}

// Remove deletes the session [start, end] of key; removing a missing session
// is not an error.
func (s *memSession) Remove(key []byte, start, end time.Time) error {
	return s.put(key, start.UnixMilli(), end.UnixMilli(), nil)
}

// FindSessions iterates, over a snapshot, the sessions of key that end at or
// after earliestEnd and start at or before latestStart, ordered by start
// (then end). It reads every session of key that starts at or before
// latestStart; retention keeps that number small.
func (s *memSession) FindSessions(key []byte, earliestEnd, latestStart time.Time) (SessionIterator, error) {
	cur, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	it := &memSessionIterator{
		key:         bytes.Clone(key),
		earliestEnd: earliestEnd.UnixMilli(),
		latestStart: latestStart.UnixMilli(),
	}
	it.closed = &s.closed
	it.cur = cur
	it.cur.Seek(entry{key: it.key, start: math.MinInt64, end: math.MinInt64})
	return it, nil
}

// memSessionIterator walks a snapshot of a memSession. It is not safe for
// concurrent use.
type memSessionIterator struct {
	snapshotIter[entry]
	key                      []byte
	earliestEnd, latestStart int64

	keyCopy, value []byte // copies of the current item's, made on demand
}

var _ SessionIterator = (*memSessionIterator)(nil)

// Next advances to the next session. It returns false at the end, after
// Close, or once the store is closed (then Err returns ErrClosed).
func (it *memSessionIterator) Next() bool {
	it.keyCopy, it.value = nil, nil
	if !it.begin() {
		return false
	}
	for {
		item, ok := it.cur.Next()
		if !ok || !bytes.Equal(item.key, it.key) || item.start > it.latestStart {
			return it.yield(item, false)
		}
		if item.end >= it.earliestEnd {
			return it.yield(item, true)
		}
	}
}

// Key returns a copy of the current key, or nil when not positioned on one.
func (it *memSessionIterator) Key() []byte {
	if it.valid && it.keyCopy == nil {
		it.keyCopy = cloneNonNil(it.item.key)
	}
	return it.keyCopy
}

// Start returns the start of the current session, at millisecond precision.
func (it *memSessionIterator) Start() time.Time {
	if !it.valid {
		return time.Time{}
	}
	return time.UnixMilli(it.item.start)
}

// End returns the end of the current session, at millisecond precision.
func (it *memSessionIterator) End() time.Time {
	if !it.valid {
		return time.Time{}
	}
	return time.UnixMilli(it.item.end)
}

// Value returns a copy of the current value, or nil when not positioned on
// one.
func (it *memSessionIterator) Value() []byte {
	if it.valid && it.value == nil {
		it.value = cloneNonNil(it.item.value)
	}
	return it.value
}
