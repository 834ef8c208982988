package statestore

import (
	"bytes"
	"math"
	"time"
)

// The staging overlays of the two time-keyed stores: StagedWindow over a
// WindowStore and StagedSession over a SessionStore. Each is a thin typed
// wrapper of staging (staging.go): the wrapper turns its store's typed
// calls into entries and merges its store's iterators; staging does the
// rest. They share this file because their wrappers have the same shape
// and both stage ExpireBefore.

// StagedWindow is the staging overlay of a WindowStore: it implements
// WindowStore over a base store and keeps writes in memory until Commit or
// Reset. It is safe for concurrent use; its iterators are not. See
// NewStagedWindow.
type StagedWindow struct{ staging[WindowStore] }

// NewStagedWindow returns an overlay over base that stages up to limit bytes
// of writes. A staged window counts len(key)+8+len(value) bytes (its
// EncodeWindowKey key and value); limits, reads, snapshots, ownership of the
// base and concurrency are as for NewStagedKeyValue.
//
// ExpireBefore is staged too: it drops the staged windows that start before
// the cutoff and hides the base's, and Commit (or Changes) carries it to the
// base. Windows written after it are kept, as the base store would keep
// them.
func NewStagedWindow(base WindowStore, limit int64) (*StagedWindow, error) {
	return stage[StagedWindow](windowOverlay, base, limit)
}

// Base returns the committed store under the overlay: the store interactive
// queries read. Do not write to it while the overlay is open.
func (s *StagedWindow) Base() WindowStore { return s.base }

// Committed returns a read-only view of base with the overlay's frozen
// layers over it (see Staged.Committed); base must be a WindowStore.
func (s *StagedWindow) Committed(base Store) (Store, error) {
	return committedView[StagedWindow](&s.staging, base)
}

// Put stages the value of key in the window starting at start; a nil value
// stages a delete. It fails with a *StagingFullError if the write does not
// fit in the limit.
func (s *StagedWindow) Put(key []byte, start time.Time, value []byte) error {
	return s.put(newEntry(key, start.UnixMilli(), 0, value))
}

// Get returns a copy of the staged value of key in the window starting at
// start, or the base's if the window has no staged write and no staged
// ExpireBefore hides it.
func (s *StagedWindow) Get(key []byte, start time.Time) ([]byte, bool, error) {
	defer s.rlock()()
	if v, ok, fromBase, err := s.lookup(entry{key: key, start: start.UnixMilli()}); !fromBase {
		return v, ok, err
	}
	return s.base.Get(key, start)
}

// Fetch iterates the windows of key whose start is in [from, to], ordered by
// start, merging the staged writes with the base.
func (s *StagedWindow) Fetch(key []byte, from, to time.Time) (WindowIterator, error) {
	return s.iterate(key, false, from, to)
}

// FetchAll iterates the windows of every key whose start is in [from, to],
// ordered by key, then start, merging the staged writes with the base.
func (s *StagedWindow) FetchAll(from, to time.Time) (WindowIterator, error) {
	return s.iterate(nil, true, from, to)
}

func (s *StagedWindow) iterate(key []byte, all bool, from, to time.Time) (WindowIterator, error) {
	defer s.rlock()()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	fromMs, toMs := from.UnixMilli(), to.UnixMilli()
	m := &mergedIter{closed: &s.closed, cmp: windowLayout.cmp}
	// The base's windows before the cutoff are hidden: ask from there.
	if baseFrom := s.hiddenFrom(from); baseFrom.UnixMilli() <= toMs {
		var (
			base WindowIterator
			err  error
		)
		if all {
			base, err = s.base.FetchAll(baseFrom, to)
		} else {
			base, err = s.base.Fetch(key, baseFrom, to)
		}
		if err != nil {
			return nil, err
		}
		m.base, m.baseClose = baseWindows(base)
	}
	key = bytes.Clone(key)
	var seek *entry
	if !all {
		seek = &entry{key: key, start: fromMs}
	}
	s.sources(m, seek,
		func(cur *btreeCursor[entry], item entry) (skip, stop bool) {
			if fromMs > toMs {
				return false, true
			}
			if !all {
				return false, !bytes.Equal(item.key, key) || item.start > toMs
			}
			switch {
			case item.start < fromMs:
				cur.Seek(entry{key: item.key, start: fromMs})
				return true, false
			case item.start > toMs:
				// key+0x00 is the smallest key after key.
				cur.Seek(entry{key: append(bytes.Clone(item.key), 0), start: math.MinInt64})
				return true, false
			}
			return false, false
		})
	return m, nil
}

// ExpireBefore stages the deletion of every window that starts before
// cutoff: staged windows are dropped now, the base's are hidden until Commit
// deletes them (or Reset brings them back).
func (s *StagedWindow) ExpireBefore(cutoff time.Time) error { return s.expireBefore(cutoff) }

var windowOverlay = &overlayKind[WindowStore]{
	layout: windowLayout,
	write: func(base WindowStore, e entry) error {
		return base.Put(e.key, time.UnixMilli(e.start), stagedValue(e))
	},
	// A WindowStore lists every window before the cutoff with FetchAll.
	scanHidden: func(base WindowStore, cutoff int64, staged func(entry) bool, out []Change) ([]Change, error) {
		it, err := base.FetchAll(time.UnixMilli(math.MinInt64), time.UnixMilli(cutoff-1))
		if err != nil {
			return nil, err
		}
		defer it.Close()
		for it.Next() {
			e := entry{key: it.Key(), start: it.Window().UnixMilli()}
			if !staged(e) {
				out = append(out, Change{Key: windowLayout.encode(e)})
			}
		}
		return out, it.Err()
	},
}

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

// Committed returns a read-only view of base with the overlay's frozen
// layers over it (see Staged.Committed); base must be a SessionStore.
func (s *StagedSession) Committed(base Store) (Store, error) {
	return committedView[StagedSession](&s.staging, base)
}

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
	defer s.rlock()()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	// The base's sessions that end before the cutoff are hidden.
	base, err := s.base.FindSessions(key, s.hiddenFrom(earliestEnd), latestStart)
	if err != nil {
		return nil, err
	}
	key = bytes.Clone(key)
	endMs, startMs := earliestEnd.UnixMilli(), latestStart.UnixMilli()
	m := &mergedIter{closed: &s.closed, cmp: sessionLayout.cmp}
	m.base, m.baseClose = baseSessions(base)
	s.sources(m,
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
