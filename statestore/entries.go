package statestore

import (
	"bytes"
	"cmp"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds what the in-memory window and session stores and the
// three staging overlays share: one entry type, a layout per store kind
// (its order, its expiry order, its store keys), and the pair of B-trees —
// entries in the store's order, and an index in expiry order — that a
// window or session store keeps.

// entry is one entry of a window or session store, or one staged write of
// any kind: a key-value store uses key, a window store key and start, a
// session store key, start and end (Unix milliseconds). del marks a staged
// delete (value nil). key and value share one allocation and are never
// modified once stored.
type entry struct {
	key        []byte
	start, end int64
	value      []byte
	del        bool
}

// newEntry copies key and value into one allocation; a nil value makes a
// delete.
func newEntry(key []byte, start, end int64, value []byte) entry {
	buf := make([]byte, len(key)+len(value))
	n := copy(buf, key)
	copy(buf[n:], value)
	return entry{key: buf[:n:n], start: start, end: end, value: buf[n:], del: value == nil}
}

// identity returns e without its value: what an expiry index holds, and a
// lookup pivot.
func (e entry) identity() entry { return entry{key: e.key, start: e.start, end: e.end} }

// checkSession rejects the write of a session that ends before it starts
// (a removal, value nil, is not checked).
func checkSession(key []byte, start, end int64, value []byte) error {
	if value != nil && end < start {
		return fmt.Errorf("%w: %q ends at %d ms, before its start at %d ms", ErrInvalidSession, key, end, start)
	}
	return nil
}

// layout is what differs between the store kinds for the code they share.
type layout struct {
	kind Kind
	// cmp is the store's order: key, then start (windows), then end
	// (sessions).
	cmp func(a, b entry) int
	// byExpiry is the expiry index's order, led by expiresAt; nil for
	// key-value stores, which do not expire.
	byExpiry func(a, b entry) int
	// expiresAt is what ExpireBefore compares with its cutoff: a window's
	// start, a session's end.
	expiresAt func(e entry) int64
	// suffix is how many bytes the store key adds to the key: 0, 8 (a
	// window's start), 16 (a session's end and start).
	suffix int
	// encode returns e's store key, as Changes and changelogs carry it;
	// decode is its inverse.
	encode func(e entry) []byte
	decode func(b []byte) (entry, error)
}

var (
	kvLayout = &layout{
		kind:   KindKeyValue,
		cmp:    func(a, b entry) int { return bytes.Compare(a.key, b.key) },
		encode: func(e entry) []byte { return e.key },
		decode: func(b []byte) (entry, error) { return entry{key: b}, nil },
	}
	windowLayout = &layout{
		kind: KindWindow,
		cmp: func(a, b entry) int {
			return cmp.Or(bytes.Compare(a.key, b.key), cmp.Compare(a.start, b.start))
		},
		byExpiry: func(a, b entry) int {
			return cmp.Or(cmp.Compare(a.start, b.start), bytes.Compare(a.key, b.key))
		},
		expiresAt: func(e entry) int64 { return e.start },
		suffix:    windowSuffix,
		encode:    func(e entry) []byte { return EncodeWindowKey(e.key, time.UnixMilli(e.start)) },
		decode: func(b []byte) (entry, error) {
			key, start, err := DecodeWindowKey(b)
			return entry{key: key, start: start.UnixMilli()}, err
		},
	}
	sessionLayout = &layout{
		kind: KindSession,
		cmp: func(a, b entry) int {
			return cmp.Or(bytes.Compare(a.key, b.key), cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
		},
		byExpiry: func(a, b entry) int {
			return cmp.Or(cmp.Compare(a.end, b.end), bytes.Compare(a.key, b.key), cmp.Compare(a.start, b.start))
		},
		expiresAt: func(e entry) int64 { return e.end },
		suffix:    sessionSuffix,
		encode: func(e entry) []byte {
			return EncodeSessionKey(e.key, time.UnixMilli(e.start), time.UnixMilli(e.end))
		},
		decode: func(b []byte) (entry, error) {
			key, start, end, err := DecodeSessionKey(b)
			return entry{key: key, start: start.UnixMilli(), end: end.UnixMilli()}, err
		},
	}
)

// size is how many bytes e counts against a staging limit: its store key
// and its value; 0 if it is not there (ok false).
func (l *layout) size(e entry, ok bool) int64 {
	if !ok {
		return 0
	}
	return int64(len(e.key) + l.suffix + len(e.value))
}

// indexed holds entries in the store's order and, for kinds that expire,
// their identities in expiry order, so that expiring costs O(log n) per
// entry. It is not safe for concurrent use.
type indexed struct {
	l      *layout
	tree   *btree[entry]
	expiry *btree[entry] // nil for key-value stores
}

func newIndexed(l *layout) indexed {
	x := indexed{l: l, tree: newBtree(l.cmp)}
	if l.byExpiry != nil {
		x.expiry = newBtree(l.byExpiry)
	}
	return x
}

// get returns the entry with e's identity.
func (x *indexed) get(e entry) (entry, bool) { return x.tree.Get(e) }

// set stores e, replacing the entry with its identity.
func (x *indexed) set(e entry) {
	x.tree.Set(e)
	if x.expiry != nil {
		// Set even on overwrite: the index must not keep the old buffer,
		// and with it the old value, alive.
		x.expiry.Set(e.identity())
	}
}

// delete removes the entry with e's identity and returns it.
func (x *indexed) delete(e entry) (entry, bool) {
	old, ok := x.tree.Delete(e)
	if ok && x.expiry != nil {
		x.expiry.Delete(old.identity())
	}
	return old, ok
}

// expire removes every entry that expires before cutoff (Unix ms), calling
// dropped, if not nil, with each.
func (x *indexed) expire(cutoff int64, dropped func(entry)) {
	for {
		oldest, ok := x.expiry.Min()
		if !ok || x.l.expiresAt(oldest) >= cutoff {
			return
		}
		x.expiry.Delete(oldest)
		if old, ok := x.tree.Delete(oldest); ok && dropped != nil {
			dropped(old)
		}
	}
}

// cursor returns a cursor over a snapshot of the entries, in the store's
// order.
func (x *indexed) cursor() *btreeCursor[entry] { return newBtreeCursor(x.l.cmp, x.tree.snapshot()) }

// memTimed is what the in-memory window and session stores share: their
// entries under one lock, the name, Close and ExpireBefore.
type memTimed struct {
	name   string
	closed atomic.Bool
	mu     sync.RWMutex
	idx    indexed
}

func (s *memTimed) init(name string, l *layout) {
	s.name, s.idx = name, newIndexed(l)
}

// Name returns the store's name.
func (s *memTimed) Name() string { return s.name }

// Close drops the store's contents. Later operations, and the Next of open
// iterators, return ErrClosed. Closing twice is not an error.
func (s *memTimed) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed.Store(true)
	s.idx = newIndexed(s.idx.l)
	return nil
}

// put stores a copy of value for the entry with key, start and end; a nil
// value deletes it.
func (s *memTimed) put(key []byte, start, end int64, value []byte) error {
	var e entry
	if value != nil {
		e = newEntry(key, start, end, value) // outside the lock
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if value == nil {
		s.idx.delete(entry{key: key, start: start, end: end})
	} else {
		s.idx.set(e)
	}
	return nil
}

// get returns a copy of the value of the entry with e's identity.
func (s *memTimed) get(e entry) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	it, ok := s.idx.get(e)
	if !ok {
		return nil, false, nil
	}
	return bytes.Clone(it.value), true, nil
}

// snapshot returns a cursor over a snapshot of the entries, or ErrClosed.
func (s *memTimed) snapshot() (*btreeCursor[entry], error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.idx.cursor(), nil
}

// ExpireBefore deletes every entry that expires before cutoff: a window
// that starts before it, a session that ends before it.
func (s *memTimed) ExpireBefore(cutoff time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.idx.expire(cutoff.UnixMilli(), nil)
	return nil
}
