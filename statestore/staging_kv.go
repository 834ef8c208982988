package statestore

import "bytes"

// StagedKeyValue is the staging overlay of a KeyValueStore: it implements
// KeyValueStore over a base store and keeps writes in memory until Commit or
// Reset. It is safe for concurrent use; its iterators are not. See
// NewStagedKeyValue.
type StagedKeyValue struct{ staging[KeyValueStore] }

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
	return stage[StagedKeyValue](kvOverlay, base, limit)
}

// Base returns the committed store under the overlay: the store interactive
// queries read. Do not write to it while the overlay is open.
func (s *StagedKeyValue) Base() KeyValueStore { return s.base }

// Committed returns a read-only view of base with the overlay's frozen
// layers over it (see Staged.Committed); base must be a KeyValueStore.
func (s *StagedKeyValue) Committed(base Store) (Store, error) {
	return committedView[StagedKeyValue](&s.staging, base)
}

// Get returns a copy of the staged value of key, or the base's if key has
// no staged write.
func (s *StagedKeyValue) Get(key []byte) ([]byte, bool, error) {
	defer s.rlock()()
	if v, ok, fromBase, err := s.lookup(entry{key: key}); !fromBase {
		return v, ok, err
	}
	return s.base.Get(key)
}

// Put stages key = value; a nil value stages a delete. It fails with a
// *StagingFullError if the write does not fit in the limit.
func (s *StagedKeyValue) Put(key, value []byte) error {
	return s.put(newEntry(key, 0, 0, value))
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
	defer s.rlock()()
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
	var seek *entry
	if len(from) > 0 {
		seek = &entry{key: bytes.Clone(from)}
	}
	m := &mergedIter{closed: &s.closed, cmp: kvLayout.cmp}
	s.sources(m, seek, func(_ *btreeCursor[entry], item entry) (skip, stop bool) {
		return false, !open && bytes.Compare(item.key, to) >= 0
	})
	m.base, m.baseClose = baseKV(base)
	return m, nil
}

// ApproximateNumEntries returns the base's estimate plus the staged puts
// minus the staged deletes of every layer, at least zero: a staged put of
// a key the base (or an older layer) has, or a staged delete of a key it
// lacks, makes it inexact.
func (s *StagedKeyValue) ApproximateNumEntries() (int64, error) {
	defer s.rlock()()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	n, err := s.base.ApproximateNumEntries()
	if err != nil {
		return 0, err
	}
	n += int64(s.puts) - int64(s.idx.tree.Len()-s.puts)
	puts, dels := s.frozenEntries()
	n += int64(puts) - int64(dels)
	return max(n, 0), nil
}

var kvOverlay = &overlayKind[KeyValueStore]{
	layout: kvLayout,
	write: func(base KeyValueStore, e entry) error {
		if e.del {
			return base.Delete(e.key)
		}
		return base.Put(e.key, e.value)
	},
}
