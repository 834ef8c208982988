package statestore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// compareStagedSession orders by key, start, end: the store's order.
func compareStagedSession(a, b stagedItem) int {
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c
	}
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	return cmp.Compare(a.end, b.end)
}

// compareStagedSessionByEnd orders by end, key, start: the expiry order.
func compareStagedSessionByEnd(a, b stagedItem) int {
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.start, b.start)
}

// StagedSession is the staging overlay of a SessionStore: it implements
// SessionStore over a base store and keeps writes in memory until Commit or
// Reset. It is safe for concurrent use; its iterators are not. See
// NewStagedSession.
type StagedSession struct {
	base   SessionStore
	closed atomic.Bool
	mu     sync.RWMutex
	tree   *btree[stagedItem] // by key, start, end
	expiry *btree[stagedItem] // by end, key, start; values unset
	budget stagingBudget
	// cutoff is the latest staged ExpireBefore (Unix ms), noCutoff if none:
	// the base's sessions that end before it are hidden.
	cutoff int64
}

var (
	_ SessionStore = (*StagedSession)(nil)
	_ Staged       = (*StagedSession)(nil)
)

// NewStagedSession returns an overlay over base that stages up to limit
// bytes of writes. A staged session counts len(key)+16+len(value) bytes (its
// EncodeSessionKey key and value); limits, reads, snapshots, ownership of
// the base and concurrency are as for NewStagedKeyValue, and ExpireBefore is
// staged as for NewStagedWindow (by session end).
func NewStagedSession(base SessionStore, limit int64) (*StagedSession, error) {
	budget, err := newStagingBudget(KindSession, base, limit)
	if err != nil {
		return nil, err
	}
	s := &StagedSession{base: base, budget: budget}
	s.reset()
	return s, nil
}

// Base returns the committed store under the overlay: the store interactive
// queries read. Do not write to it while the overlay is open.
func (s *StagedSession) Base() SessionStore { return s.base }

// Name returns the base's name.
func (s *StagedSession) Name() string { return s.base.Name() }

// Kind returns KindSession.
func (s *StagedSession) Kind() Kind { return KindSession }

// Close drops the staged writes and closes the base. Later operations, and
// the Next of open iterators, return ErrClosed. Closing twice is not an
// error.
func (s *StagedSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.reset()
	return s.base.Close()
}

// Put stages the session [start, end] of key; a nil value stages its
// removal. A session that ends before it starts is an error wrapping
// ErrInvalidSession; a write that does not fit in the limit fails with a
// *StagingFullError.
func (s *StagedSession) Put(key []byte, start, end time.Time, value []byte) error {
	startMs, endMs := start.UnixMilli(), end.UnixMilli()
	if value != nil && endMs < startMs {
		return fmt.Errorf("%w: %q ends at %d ms, before its start at %d ms", ErrInvalidSession, key, endMs, startMs)
	}
	item := newStagedItem(key, startMs, endMs, value)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	old, had := s.tree.Get(item)
	if err := s.budget.replace(sessionSize(old, had), sessionSize(item, true)); err != nil {
		return err
	}
	s.tree.Set(item)
	s.expiry.Set(stagedItem{key: item.key, start: startMs, end: endMs})
	return nil
}

func sessionSize(it stagedItem, ok bool) int64 {
	if !ok {
		return 0
	}
	return int64(len(it.key) + sessionSuffix + len(it.value))
}

// Remove stages the removal of the session [start, end] of key; removing a
// missing session is not an error.
func (s *StagedSession) Remove(key []byte, start, end time.Time) error {
	return s.Put(key, start, end, nil)
}

// FindSessions iterates the sessions of key that end at or after
// earliestEnd and start at or before latestStart, ordered by start (then
// end), merging the staged writes with the base.
func (s *StagedSession) FindSessions(key []byte, earliestEnd, latestStart time.Time) (SessionIterator, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	// The base's sessions that end before the cutoff are hidden.
	base, err := s.base.FindSessions(key, maxMilli(earliestEnd, s.cutoff), latestStart)
	if err != nil {
		return nil, err
	}
	key = bytes.Clone(key)
	endMs, startMs := earliestEnd.UnixMilli(), latestStart.UnixMilli()
	m := &mergedIter{closed: &s.closed, cmp: compareStagedSession}
	m.base, m.baseClose = baseSessions(base)
	m.over, m.overClose = treeSource(s.tree, compareStagedSession,
		&stagedItem{key: key, start: math.MinInt64, end: math.MinInt64},
		func(_ *btreeCursor[stagedItem], item stagedItem) (skip, stop bool) {
			if !bytes.Equal(item.key, key) || item.start > startMs {
				return false, true
			}
			return item.end < endMs, false
		})
	return m, nil
}

// ExpireBefore stages the deletion of every session that ends before
// cutoff: staged sessions are dropped now, the base's are hidden until
// Commit deletes them (or Reset brings them back).
func (s *StagedSession) ExpireBefore(cutoff time.Time) error {
	ms := cutoff.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.cutoff = max(s.cutoff, ms)
	for {
		oldest, ok := s.expiry.Min()
		if !ok || oldest.end >= ms {
			return nil
		}
		s.expiry.Delete(oldest)
		if old, ok := s.tree.Delete(oldest); ok {
			s.budget.used -= sessionSize(old, true)
		}
	}
}

// Changes returns the staged writes — Key is EncodeSessionKey(key, start,
// end), Value the new value or nil for a delete — and, after a staged
// ExpireBefore, a delete for every base session it hides that has no staged
// write. SessionStore cannot list sessions across keys, so that needs a base
// that implements ExpiryScanner (the Badger stores do); with another base,
// Changes fails with an error wrapping errors.ErrUnsupported and Commit is
// the way to apply the overlay. The values are the overlay's own and must
// not be modified.
func (s *StagedSession) Changes() ([]Change, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	out := make([]Change, 0, s.tree.Len())
	cur := newBtreeCursor(compareStagedSession, s.tree.snapshot())
	defer cur.Close()
	for it, ok := cur.Next(); ok; it, ok = cur.Next() {
		out = append(out, Change{
			Key:   EncodeSessionKey(it.key, time.UnixMilli(it.start), time.UnixMilli(it.end)),
			Value: stagedValue(it),
		})
	}
	if s.cutoff == noCutoff {
		return out, nil
	}
	scanner, ok := s.base.(ExpiryScanner)
	if !ok {
		return nil, fmt.Errorf("statestore: staged session store %q: base %T cannot list the sessions ExpireBefore deletes (no ScanExpired); use Commit: %w",
			s.base.Name(), s.base, errors.ErrUnsupported)
	}
	return appendExpired(out, scanner, s.cutoff, func(enc []byte) (bool, error) {
		key, start, end, err := DecodeSessionKey(enc)
		if err != nil {
			return false, err
		}
		_, staged := s.tree.Get(stagedItem{key: key, start: start.UnixMilli(), end: end.UnixMilli()})
		return staged, nil
	})
}

// Commit applies a staged ExpireBefore to the base, then writes the staged
// sessions, then clears the overlay. If a base call fails, Commit returns
// its error and keeps the staged state (applying it again is harmless).
func (s *StagedSession) Commit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.cutoff != noCutoff {
		if err := s.base.ExpireBefore(time.UnixMilli(s.cutoff)); err != nil {
			return err
		}
	}
	cur := newBtreeCursor(compareStagedSession, s.tree.snapshot())
	defer cur.Close()
	for it, ok := cur.Next(); ok; it, ok = cur.Next() {
		start, end := time.UnixMilli(it.start), time.UnixMilli(it.end)
		var err error
		if it.del {
			err = s.base.Remove(it.key, start, end)
		} else {
			err = s.base.Put(it.key, start, end, it.value)
		}
		if err != nil {
			return err
		}
	}
	s.reset()
	return nil
}

// Reset drops the staged writes and the staged ExpireBefore.
func (s *StagedSession) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *StagedSession) reset() {
	s.tree = newBtree(compareStagedSession)
	s.expiry = newBtree(compareStagedSessionByEnd)
	s.budget.used = 0
	s.cutoff = noCutoff
}

// StagedBytes returns how many bytes are staged.
func (s *StagedSession) StagedBytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.budget.used
}
