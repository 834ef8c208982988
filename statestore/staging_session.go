package statestore

import (
	"bytes"
	"math"
	"time"
)

// StagedSession is the staging overlay of a SessionStore: it implements
// SessionStore over a base store and keeps writes in memory until Commit or
// Reset. It is safe for concurrent use; its iterators are not. See
// NewStagedSession.
type StagedSession struct{ staging[SessionStore] }

// NewStagedSession returns an overlay over base that stages up to limit
// bytes of writes. A staged session counts len(key)+16+len(value) bytes (its
// EncodeSessionKey key and value); limits, reads, snapshots, ownership of
// the base and concurrency are as for NewStagedKeyValue, and ExpireBefore is
// staged as for NewStagedWindow (by session end).
func NewStagedSession(base SessionStore, limit int64) (*StagedSession, error) {
	return stage[StagedSession](sessionOverlay, base, limit)
}

// Base returns the committed store under the overlay: the store interactive
// queries read. Do not write to it while the overlay is open.
func (s *StagedSession) Base() SessionStore { return s.base }

// Put stages the session [start, end] of key; a nil value stages its
// removal. A session that ends before it starts is an error wrapping
// ErrInvalidSession; a write that does not fit in the limit fails with a
// *StagingFullError.
func (s *StagedSession) Put(key []byte, start, end time.Time, value []byte) error {
	startMs, endMs := start.UnixMilli(), end.UnixMilli()
	if err := checkSession(key, startMs, endMs, value); err != nil {
		return err
	}
	return s.put(newEntry(key, startMs, endMs, value))
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
	m := &mergedIter{closed: &s.closed, cmp: sessionLayout.cmp}
	m.base, m.baseClose = baseSessions(base)
	m.over, m.overClose = treeSource(&s.idx,
		&entry{key: key, start: math.MinInt64, end: math.MinInt64},
		func(_ *btreeCursor[entry], item entry) (skip, stop bool) {
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
func (s *StagedSession) ExpireBefore(cutoff time.Time) error { return s.expireBefore(cutoff) }

// sessionOverlay has no scanHidden: SessionStore cannot list sessions
// across keys, so Changes after a staged ExpireBefore needs a base that is
// an ExpiryScanner (the Badger stores are).
var sessionOverlay = &overlayKind[SessionStore]{
	layout: sessionLayout,
	write: func(base SessionStore, e entry) error {
		start, end := time.UnixMilli(e.start), time.UnixMilli(e.end)
		if e.del {
			return base.Remove(e.key, start, end)
		}
		return base.Put(e.key, start, end, e.value)
	},
}
