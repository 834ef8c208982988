package statestore

import (
	"bytes"
	"sync"
	"sync/atomic"
)

func compareStagedKV(a, b stagedItem) int { return bytes.Compare(a.key, b.key) }

// StagedKeyValue is the staging overlay of a KeyValueStore: it implements
// KeyValueStore over a base store and keeps writes in memory until Commit or
// Reset. It is safe for concurrent use; its iterators are not. See
// NewStagedKeyValue.
type StagedKeyValue struct {
	base   KeyValueStore
	closed atomic.Bool
	mu     sync.RWMutex
	tree   *btree[stagedItem]
	budget stagingBudget
	puts   int // staged puts (the rest of the tree are deletes)
}

var (
	_ KeyValueStore = (*StagedKeyValue)(nil)
	_ Staged        = (*StagedKeyValue)(nil)
)

// NewStagedKeyValue returns an overlay over base that stages up to limit
// bytes of writes. A staged put counts len(key)+len(value) bytes, a staged
// delete len(key); overwriting a staged key counts only its latest write. A
// write past the limit fails with a *StagingFullError (wrapping
// ErrStagingFull) and stages nothing. It is an error to give a nil base or a
// limit ≤ 0.
//
// Reads see the staged writes over the base: Get returns a staged value or
// the base's, Range and PrefixScan merge both in key order, and a staged
// delete hides the base's key. Iterators read a snapshot of both, taken when
// they are opened, so the caller may write while iterating. Copies are as
// for NewInMemoryKeyValue.
//
// The overlay owns its base while it is open: write to the base only
// through the overlay's Commit, or, for an engine that writes the base's
// storage itself (Badger), apply Changes and then call Reset. Interactive
// queries read Base, which holds only committed state.
//
// The overlay is safe for concurrent use; its iterators are not.
func NewStagedKeyValue(base KeyValueStore, limit int64) (*StagedKeyValue, error) {
	budget, err := newStagingBudget(KindKeyValue, base, limit)
	if err != nil {
		return nil, err
	}
	return &StagedKeyValue{base: base, tree: newBtree(compareStagedKV), budget: budget}, nil
}

// Base returns the committed store under the overlay: the store interactive
// queries read. Do not write to it while the overlay is open.
func (s *StagedKeyValue) Base() KeyValueStore { return s.base }

// Name returns the base's name.
func (s *StagedKeyValue) Name() string { return s.base.Name() }

// Kind returns KindKeyValue.
func (s *StagedKeyValue) Kind() Kind { return KindKeyValue }

// Close drops the staged writes and closes the base. Later operations, and
// the Next of open iterators, return ErrClosed. Closing twice is not an
// error.
func (s *StagedKeyValue) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.reset()
	return s.base.Close()
}

// Get returns a copy of the staged value of key, or the base's if key has
// no staged write.
func (s *StagedKeyValue) Get(key []byte) ([]byte, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, false, ErrClosed
	}
	if it, ok := s.tree.Get(stagedItem{key: key}); ok {
		if it.del {
			return nil, false, nil
		}
		return bytes.Clone(it.value), true, nil
	}
	return s.base.Get(key)
}

// Put stages key = value; a nil value stages a delete. It fails with a
// *StagingFullError if the write does not fit in the limit.
func (s *StagedKeyValue) Put(key, value []byte) error {
	item := newStagedItem(key, 0, 0, value)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	old, had := s.tree.Get(item)
	if err := s.budget.replace(kvSize(old, had), kvSize(item, true)); err != nil {
		return err
	}
	s.tree.Set(item)
	if had && !old.del {
		s.puts--
	}
	if !item.del {
		s.puts++
	}
	return nil
}

func kvSize(it stagedItem, ok bool) int64 {
	if !ok {
		return 0
	}
	return int64(len(it.key) + len(it.value))
}

// Delete stages the deletion of key; deleting a missing key is not an error.
func (s *StagedKeyValue) Delete(key []byte) error { return s.Put(key, nil) }

// Range iterates the keys in [from, to) of the overlay over the base, in
// key order; nil bounds are open.
func (s *StagedKeyValue) Range(from, to []byte) (Iterator, error) {
	return s.iterate(from, to, to == nil, false)
}

// PrefixScan iterates the keys that start with prefix, in key order.
func (s *StagedKeyValue) PrefixScan(prefix []byte) (Iterator, error) {
	end := prefixEnd(prefix)
	return s.iterate(prefix, end, end == nil, true)
}

func (s *StagedKeyValue) iterate(from, to []byte, open, prefix bool) (Iterator, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	var (
		base Iterator
		err  error
	)
	if prefix {
		base, err = s.base.PrefixScan(from)
	} else {
		base, err = s.base.Range(from, to)
	}
	if err != nil {
		return nil, err
	}
	to = bytes.Clone(to)
	var seek *stagedItem
	if len(from) > 0 {
		seek = &stagedItem{key: bytes.Clone(from)}
	}
	over, overClose := treeSource(s.tree, compareStagedKV, seek,
		func(_ *btreeCursor[stagedItem], item stagedItem) (skip, stop bool) {
			return false, !open && bytes.Compare(item.key, to) >= 0
		})
	m := &mergedIter{closed: &s.closed, cmp: compareStagedKV, over: over, overClose: overClose}
	m.base, m.baseClose = baseKV(base)
	return m, nil
}

// ApproximateNumEntries returns the base's estimate plus the staged puts
// minus the staged deletes, at least zero: a staged put of a key the base
// has, or a staged delete of a key it lacks, makes it inexact.
func (s *StagedKeyValue) ApproximateNumEntries() (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	n, err := s.base.ApproximateNumEntries()
	if err != nil {
		return 0, err
	}
	n += int64(s.puts) - int64(s.tree.Len()-s.puts)
	return max(n, 0), nil
}

// Changes returns the staged writes in key order: Key is the store key,
// Value the new value or nil for a delete. The slices are the overlay's own
// and must not be modified; they stay valid after Reset.
func (s *StagedKeyValue) Changes() ([]Change, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	out := make([]Change, 0, s.tree.Len())
	cur := newBtreeCursor(compareStagedKV, s.tree.snapshot())
	defer cur.Close()
	for it, ok := cur.Next(); ok; it, ok = cur.Next() {
		out = append(out, Change{Key: it.key, Value: stagedValue(it)})
	}
	return out, nil
}

// stagedValue returns the value a Change carries: nil for a delete.
func stagedValue(it stagedItem) []byte {
	if it.del {
		return nil
	}
	return it.value
}

// Commit writes the staged changes to the base in key order, then clears the
// overlay. If a base write fails, Commit returns its error and keeps the
// staged writes (writing them again is harmless), so the caller may retry.
func (s *StagedKeyValue) Commit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	cur := newBtreeCursor(compareStagedKV, s.tree.snapshot())
	defer cur.Close()
	for it, ok := cur.Next(); ok; it, ok = cur.Next() {
		var err error
		if it.del {
			err = s.base.Delete(it.key)
		} else {
			err = s.base.Put(it.key, it.value)
		}
		if err != nil {
			return err
		}
	}
	s.reset()
	return nil
}

// Reset drops the staged writes. Open iterators keep their snapshot.
func (s *StagedKeyValue) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *StagedKeyValue) reset() {
	s.tree = newBtree(compareStagedKV)
	s.budget.used = 0
	s.puts = 0
}

// StagedBytes returns how many bytes are staged.
func (s *StagedKeyValue) StagedBytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.budget.used
}
