package badgerstore

import (
	"bytes"
	"fmt"
	"time"

	"github.com/weirstream/weir/statestore"
)

// sessionStore is the Badger SessionStore: a data row
// <prefix> 'd' esc(key) time(start) time(end) → value and an index row
// <prefix> 'x' time(end) esc(key) time(start) per session (see the layout
// in layout.go). Data rows sort by key, start, end: the order FindSessions
// promises, with no sorting.
type sessionStore struct{ *storeBase }

var (
	_ statestore.SessionStore  = (*sessionStore)(nil)
	_ statestore.ExpiryScanner = (*sessionStore)(nil)
)

// Put stores the session [start, end] of key; a nil value deletes it. A
// session that ends before it starts is an error wrapping
// statestore.ErrInvalidSession.
func (s *sessionStore) Put(key []byte, start, end time.Time, value []byte) error {
	if value == nil {
		return s.Remove(key, start, end)
	}
	startMs, endMs := start.UnixMilli(), end.UnixMilli()
	if endMs < startMs {
		return fmt.Errorf("%w: %q ends at %d ms, before its start at %d ms", statestore.ErrInvalidSession, key, endMs, startMs)
	}
	return s.write(
		op{key: sessionBody(s.data, key, startMs, endMs), value: value},
		op{key: sessionIndexBody(s.index, key, startMs, endMs), value: []byte{}},
	)
}

// Remove deletes the session [start, end] of key; removing a missing
// session is not an error.
func (s *sessionStore) Remove(key []byte, start, end time.Time) error {
	startMs, endMs := start.UnixMilli(), end.UnixMilli()
	return s.write(
		op{key: sessionBody(s.data, key, startMs, endMs), del: true},
		op{key: sessionIndexBody(s.index, key, startMs, endMs), del: true},
	)
}

// FindSessions iterates, over a snapshot, the sessions of key that end at
// or after earliestEnd and start at or before latestStart, ordered by start
// (then end): one range scan over the sessions of key that start at or
// before latestStart, as the in-memory store reads them.
func (s *sessionStore) FindSessions(key []byte, earliestEnd, latestStart time.Time) (statestore.SessionIterator, error) {
	lower := appendEscaped(bytes.Clone(s.data), key)
	upper := prefixEnd(appendTime(bytes.Clone(lower), latestStart.UnixMilli()))
	c, err := s.openCursor(s.data, lower, upper)
	if err != nil {
		return nil, err
	}
	return &sessionIterator{iterState: iterState{c: c}, earliestEnd: earliestEnd.UnixMilli()}, nil
}

// ExpireBefore deletes every session that ends before cutoff: one scan of
// the index up to cutoff, in chunks as for the window store.
func (s *sessionStore) ExpireBefore(cutoff time.Time) error {
	return s.expire(appendTime(bytes.Clone(s.index), cutoff.UnixMilli()), func(body []byte) ([]byte, error) {
		key, start, end, err := decodeSessionIndex(body)
		return sessionBody(s.data, key, start, end), err
	})
}

// ScanExpired iterates the EncodeSessionKey keys of the sessions that end
// before cutoff, over a snapshot, in end order.
func (s *sessionStore) ScanExpired(cutoff time.Time) (statestore.Iterator, error) {
	c, err := s.openCursor(s.index, s.index, appendTime(bytes.Clone(s.index), cutoff.UnixMilli()))
	if err != nil {
		return nil, err
	}
	return &expiredIterator{iterState: iterState{c: c}, encode: func(body []byte) ([]byte, error) {
		key, start, end, err := decodeSessionIndex(body)
		return statestore.EncodeSessionKey(key, time.UnixMilli(start), time.UnixMilli(end)), err
	}}, nil
}

// sessionIterator walks the data rows of one key of a sessionStore.
type sessionIterator struct {
	iterState
	earliestEnd int64
}

var _ statestore.SessionIterator = (*sessionIterator)(nil)

// Next advances to the next session. It returns false at the end, after
// Close, or once the store is closed (then Err returns
// statestore.ErrClosed).
func (it *sessionIterator) Next() bool {
	it.reset()
	data := it.c.store.data
	return it.c.step(func() (bool, error) {
		for k, ok := it.c.advance(); ok; k, ok = it.c.advance() {
			key, start, end, err := decodeSessionBody(k[len(data):])
			if err != nil {
				return false, fmt.Errorf("%w: session row %q: %w", ErrCorrupt, k, err)
			}
			if end >= it.earliestEnd {
				return it.yield(key, start, end)
			}
		}
		return false, nil
	})
}

// Start returns the start of the current session, at millisecond precision.
func (it *sessionIterator) Start() time.Time {
	if !it.valid {
		return time.Time{}
	}
	return time.UnixMilli(it.start)
}

// End returns the end of the current session, at millisecond precision.
func (it *sessionIterator) End() time.Time {
	if !it.valid {
		return time.Time{}
	}
	return time.UnixMilli(it.end)
}
