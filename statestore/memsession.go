package statestore

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// sessionItem is one entry of the in-memory session store: the value of the
// session [start, end] of key (Unix milliseconds).
type sessionItem struct {
	key        []byte
	start, end int64
	value      []byte
}

// compareSessionByKey orders by key, start, end: the store's iteration order.
func compareSessionByKey(a, b sessionItem) int {
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c
	}
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	return cmp.Compare(a.end, b.end)
}

// compareSessionByEnd orders by end, key, start: the expiry index's order.
func compareSessionByEnd(a, b sessionItem) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.start, b.start)
}

// memSession is the in-memory SessionStore.
type memSession struct {
	name   string
	closed atomic.Bool
	mu     sync.RWMutex
	byKey  *btree[sessionItem] // the entries
	expiry *btree[sessionItem] // (end, key, start) of every entry, values unset
}

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
	return &memSession{
		name:   name,
		byKey:  newBtree(compareSessionByKey),
		expiry: newBtree(compareSessionByEnd),
	}
}

// Name returns the store's name.
func (s *memSession) Name() string { return s.name }

// Close drops the store's contents. Later operations, and the Next of open
// iterators, return ErrClosed. Closing twice is not an error.
func (s *memSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed.Store(true)
	s.byKey = newBtree(compareSessionByKey)
	s.expiry = newBtree(compareSessionByEnd)
	return nil
}

// Put stores a copy of value for the session [start, end] of key. A nil value
// deletes the session. A session that ends before it starts is an error
// wrapping ErrInvalidSession.
func (s *memSession) Put(key []byte, start, end time.Time, value []byte) error {
	if value == nil {
		return s.Remove(key, start, end)
	}
	startMs, endMs := start.UnixMilli(), end.UnixMilli()
	if endMs < startMs {
		return fmt.Errorf("%w: %q ends at %d ms, before its start at %d ms", ErrInvalidSession, key, endMs, startMs)
	}
	buf := make([]byte, len(key)+len(value))
	n := copy(buf, key)
	copy(buf[n:], value)
	item := sessionItem{key: buf[:n:n], start: startMs, end: endMs, value: buf[n:]}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.byKey.Set(item)
	// Set even on overwrite: the index must not keep the old buffer, and
	// with it the old value, alive.
	s.expiry.Set(sessionItem{key: item.key, start: startMs, end: endMs})
	return nil
}

// Remove deletes the session [start, end] of key; removing a missing session
// is not an error.
func (s *memSession) Remove(key []byte, start, end time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	item := sessionItem{key: key, start: start.UnixMilli(), end: end.UnixMilli()}
	if old, ok := s.byKey.Delete(item); ok {
		s.expiry.Delete(sessionItem{key: old.key, start: old.start, end: old.end})
	}
	return nil
}

// FindSessions iterates, over a snapshot, the sessions of key that end at or
// after earliestEnd and start at or before latestStart, ordered by start
// (then end). It reads every session of key that starts at or before
// latestStart; retention keeps that number small.
func (s *memSession) FindSessions(key []byte, earliestEnd, latestStart time.Time) (SessionIterator, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	it := &memSessionIterator{
		key:         bytes.Clone(key),
		earliestEnd: earliestEnd.UnixMilli(),
		latestStart: latestStart.UnixMilli(),
	}
	it.closed = &s.closed
	it.cur = newBtreeCursor(compareSessionByKey, s.byKey.snapshot())
	it.cur.Seek(sessionItem{key: it.key, start: math.MinInt64, end: math.MinInt64})
	return it, nil
}

// ExpireBefore deletes every session that ends before cutoff.
func (s *memSession) ExpireBefore(cutoff time.Time) error {
	ms := cutoff.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	for {
		oldest, ok := s.expiry.Min()
		if !ok || oldest.end >= ms {
			return nil
		}
		s.expiry.Delete(oldest)
		s.byKey.Delete(oldest)
	}
}

// memSessionIterator walks a snapshot of a memSession. It is not safe for
// concurrent use.
type memSessionIterator struct {
	snapshotIter[sessionItem]
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
