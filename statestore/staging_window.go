package statestore

import (
	"bytes"
	"cmp"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// compareStagedWindow orders by key, then start: the store's order.
func compareStagedWindow(a, b stagedItem) int {
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c
	}
	return cmp.Compare(a.start, b.start)
}

// compareStagedWindowByStart orders by start, then key: the expiry order.
func compareStagedWindowByStart(a, b stagedItem) int {
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	return bytes.Compare(a.key, b.key)
}

// StagedWindow is the staging overlay of a WindowStore: it implements
// WindowStore over a base store and keeps writes in memory until Commit or
// Reset. It is safe for concurrent use; its iterators are not. See
// NewStagedWindow.
type StagedWindow struct {
	base   WindowStore
	closed atomic.Bool
	mu     sync.RWMutex
	tree   *btree[stagedItem] // by key, start
	expiry *btree[stagedItem] // by start, key; values unset
	budget stagingBudget
	// cutoff is the latest staged ExpireBefore (Unix ms), noCutoff if none:
	// the base's windows that start before it are hidden.
	cutoff int64
}

var (
	_ WindowStore = (*StagedWindow)(nil)
	_ Staged      = (*StagedWindow)(nil)
)

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
	budget, err := newStagingBudget(KindWindow, base, limit)
	if err != nil {
		return nil, err
	}
	s := &StagedWindow{base: base, budget: budget}
	s.reset()
	return s, nil
}

// Base returns the committed store under the overlay: the store interactive
// queries read. Do not write to it while the overlay is open.
func (s *StagedWindow) Base() WindowStore { return s.base }

// Name returns the base's name.
func (s *StagedWindow) Name() string { return s.base.Name() }

// Kind returns KindWindow.
func (s *StagedWindow) Kind() Kind { return KindWindow }

// Close drops the staged writes and closes the base. Later operations, and
// the Next of open iterators, return ErrClosed. Closing twice is not an
// error.
func (s *StagedWindow) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.reset()
	return s.base.Close()
}

// Put stages the value of key in the window starting at start; a nil value
// stages a delete. It fails with a *StagingFullError if the write does not
// fit in the limit.
func (s *StagedWindow) Put(key []byte, start time.Time, value []byte) error {
	item := newStagedItem(key, start.UnixMilli(), 0, value)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	old, had := s.tree.Get(item)
	if err := s.budget.replace(windowSize(old, had), windowSize(item, true)); err != nil {
		return err
	}
	s.tree.Set(item)
	s.expiry.Set(stagedItem{key: item.key, start: item.start})
	return nil
}

func windowSize(it stagedItem, ok bool) int64 {
	if !ok {
		return 0
	}
	return int64(len(it.key) + windowSuffix + len(it.value))
}

// Get returns a copy of the staged value of key in the window starting at
// start, or the base's if the window has no staged write and no staged
// ExpireBefore hides it.
func (s *StagedWindow) Get(key []byte, start time.Time) ([]byte, bool, error) {
	ms := start.UnixMilli()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	if it, ok := s.tree.Get(stagedItem{key: key, start: ms}); ok {
		if it.del {
			return nil, false, nil
		}
		return bytes.Clone(it.value), true, nil
	}
	if ms < s.cutoff {
		return nil, false, nil
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	fromMs, toMs := from.UnixMilli(), to.UnixMilli()
	m := &mergedIter{closed: &s.closed, cmp: compareStagedWindow}
	// The base's windows before the cutoff are hidden: ask from there.
	if baseFrom := maxMilli(from, s.cutoff); baseFrom.UnixMilli() <= toMs {
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
	var seek *stagedItem
	if !all {
		seek = &stagedItem{key: key, start: fromMs}
	}
	m.over, m.overClose = treeSource(s.tree, compareStagedWindow, seek,
		func(cur *btreeCursor[stagedItem], item stagedItem) (skip, stop bool) {
			if fromMs > toMs {
				return false, true
			}
			if !all {
				return false, !bytes.Equal(item.key, key) || item.start > toMs
			}
			switch {
			case item.start < fromMs:
				cur.Seek(stagedItem{key: item.key, start: fromMs})
				return true, false
			case item.start > toMs:
				// key+0x00 is the smallest key after key.
				cur.Seek(stagedItem{key: append(bytes.Clone(item.key), 0), start: math.MinInt64})
				return true, false
			}
			return false, false
		})
	return m, nil
}

// ExpireBefore stages the deletion of every window that starts before
// cutoff: staged windows are dropped now, the base's are hidden until Commit
// deletes them (or Reset brings them back).
func (s *StagedWindow) ExpireBefore(cutoff time.Time) error {
	ms := cutoff.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.cutoff = max(s.cutoff, ms)
	for {
		oldest, ok := s.expiry.Min()
		if !ok || oldest.start >= ms {
			return nil
		}
		s.expiry.Delete(oldest)
		if old, ok := s.tree.Delete(oldest); ok {
			s.budget.used -= windowSize(old, true)
		}
	}
}

// Changes returns the staged writes — Key is EncodeWindowKey(key, start),
// Value the new value or nil for a delete — and, after a staged
// ExpireBefore, a delete for every base window it hides that has no staged
// write. Those deletes are listed through the base's ExpiryScanner if it has
// one, else through FetchAll; they are not counted against the limit. The
// values are the overlay's own and must not be modified.
func (s *StagedWindow) Changes() ([]Change, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	out := make([]Change, 0, s.tree.Len())
	cur := newBtreeCursor(compareStagedWindow, s.tree.snapshot())
	defer cur.Close()
	for it, ok := cur.Next(); ok; it, ok = cur.Next() {
		out = append(out, Change{Key: EncodeWindowKey(it.key, time.UnixMilli(it.start)), Value: stagedValue(it)})
	}
	if s.cutoff == noCutoff {
		return out, nil
	}
	staged := func(key []byte, start int64) bool {
		_, ok := s.tree.Get(stagedItem{key: key, start: start})
		return ok
	}
	if scanner, ok := s.base.(ExpiryScanner); ok {
		return appendExpired(out, scanner, s.cutoff, func(enc []byte) (bool, error) {
			key, start, err := DecodeWindowKey(enc)
			return err == nil && staged(key, start.UnixMilli()), err
		})
	}
	it, err := s.base.FetchAll(time.UnixMilli(math.MinInt64), time.UnixMilli(s.cutoff-1))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for it.Next() {
		key, start := it.Key(), it.Window()
		if !staged(key, start.UnixMilli()) {
			out = append(out, Change{Key: EncodeWindowKey(key, start)})
		}
	}
	return out, it.Err()
}

// appendExpired appends a delete for every key scanner lists for cutoff
// that skip does not reject.
func appendExpired(out []Change, scanner ExpiryScanner, cutoff int64, skip func(enc []byte) (bool, error)) ([]Change, error) {
	it, err := scanner.ScanExpired(time.UnixMilli(cutoff))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for it.Next() {
		enc := it.Key()
		if staged, err := skip(enc); err != nil {
			return nil, err
		} else if !staged {
			out = append(out, Change{Key: enc})
		}
	}
	return out, it.Err()
}

// Commit applies a staged ExpireBefore to the base, then writes the staged
// windows, then clears the overlay. If a base call fails, Commit returns its
// error and keeps the staged state (applying it again is harmless).
func (s *StagedWindow) Commit() error {
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
	cur := newBtreeCursor(compareStagedWindow, s.tree.snapshot())
	defer cur.Close()
	for it, ok := cur.Next(); ok; it, ok = cur.Next() {
		if err := s.base.Put(it.key, time.UnixMilli(it.start), stagedValue(it)); err != nil {
			return err
		}
	}
	s.reset()
	return nil
}

// Reset drops the staged writes and the staged ExpireBefore.
func (s *StagedWindow) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *StagedWindow) reset() {
	s.tree = newBtree(compareStagedWindow)
	s.expiry = newBtree(compareStagedWindowByStart)
	s.budget.used = 0
	s.cutoff = noCutoff
}

// StagedBytes returns how many bytes are staged.
func (s *StagedWindow) StagedBytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.budget.used
}
