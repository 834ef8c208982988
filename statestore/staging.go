package statestore

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// This file holds what the staging overlays (StagedKeyValue, StagedWindow,
// StagedSession) share.
//
// A staging overlay sits between a task's processors and its committed
// store (the base). The writes of the epoch or batch in flight are kept in
// memory, in a copy-on-write B-tree, and reads merge them with the base:
// a processor reads its own writes, and a staged delete hides the base's
// entry. When the epoch commits, the engine moves the staged writes to the
// base — Commit does it through the base's own interface; a Badger engine
// instead takes Changes, writes them with the changelog checkpoint in one
// Badger batch, and calls Reset. When the epoch aborts, Reset drops the
// staged writes: the base never saw them, so nothing is wiped or restored.
//
// Interactive queries read Base, never the overlay: the base only holds
// committed state, so a query never sees an epoch that may still abort.

// ErrStagingFull is wrapped by the error a staged store's write returns when
// the write would take the staged bytes past the overlay's limit. The write
// is not staged; the engine should commit the epoch early, or abort it, and
// never drop the write silently. Test with errors.Is; the error is a
// *StagingFullError.
var ErrStagingFull = errors.New("statestore: staged writes exceed the limit")

// StagingFullError is the error a staged store's write returns when it does
// not fit in the overlay's limit. It wraps ErrStagingFull.
type StagingFullError struct {
	// Store is the name of the store written.
	Store string
	// Limit is the overlay's limit in bytes.
	Limit int64
	// Staged is how many bytes were staged before the write.
	Staged int64
	// Write is how many bytes the write would have added.
	Write int64
}

// Error returns "statestore: staged writes exceed N bytes" with the store and
// the sizes.
func (e *StagingFullError) Error() string {
	return fmt.Sprintf("statestore: staged writes exceed %d bytes: store %q has %d bytes staged, a write needs %d more",
		e.Limit, e.Store, e.Staged, e.Write)
}

// Unwrap returns ErrStagingFull.
func (e *StagingFullError) Unwrap() error { return ErrStagingFull }

// Change is one staged write as a batch applies it: the store-level key —
// for window stores EncodeWindowKey(key, start), for session stores
// EncodeSessionKey(key, start, end) — and the new value, nil to delete.
type Change struct {
	Key, Value []byte
}

// Staged is what the three staging overlays share: what an engine needs to
// commit or drop an epoch's state writes without knowing the store kinds.
// Each overlay also has a typed Base method returning the committed store.
type Staged interface {
	Store
	// Kind returns the kind of the overlay (and of its base).
	Kind() Kind
	// Changes returns the staged writes, each key at most once, in no
	// particular order. Apply them all, then call Reset.
	Changes() ([]Change, error)
	// Commit writes the staged changes to the base through its interface
	// and clears the overlay.
	Commit() error
	// Reset drops the staged writes: after an abort, or after the engine
	// applied Changes to the base itself.
	Reset()
	// StagedBytes returns how many bytes are staged (see the constructors
	// for how they are counted).
	StagedBytes() int64
}

// ExpiryScanner is an optional capability of window and session stores,
// used by the staging overlays to list what a staged ExpireBefore deletes
// from the base (see StagedWindow.Changes).
type ExpiryScanner interface {
	// ScanExpired iterates, over a snapshot, the keys of the entries
	// ExpireBefore(cutoff) would delete, in any order: EncodeWindowKey
	// keys for a window store (start before cutoff), EncodeSessionKey keys
	// for a session store (end before cutoff). Values are empty.
	ScanExpired(cutoff time.Time) (Iterator, error)
}

// NewStaged returns the staging overlay of kind over base, which must
// implement the interface kind names: a convenience over NewStagedKeyValue,
// NewStagedWindow and NewStagedSession for engines that hold stores as
// Store.
func NewStaged(base Store, kind Kind, limit int64) (Staged, error) {
	switch kind {
	case KindKeyValue:
		if kv, ok := base.(KeyValueStore); ok {
			return NewStagedKeyValue(kv, limit)
		}
	case KindWindow:
		if w, ok := base.(WindowStore); ok {
			return NewStagedWindow(w, limit)
		}
	case KindSession:
		if s, ok := base.(SessionStore); ok {
			return NewStagedSession(s, limit)
		}
	default:
		return nil, fmt.Errorf("statestore: stage store: unknown kind %d", int(kind))
	}
	return nil, fmt.Errorf("statestore: stage %s store: base %T is not a %s store", kind, base, kind)
}

// stagedItem is one staged write of any kind: a key-value store uses key,
// a window store key and start, a session store key, start and end (Unix
// milliseconds). value is nil for a staged delete (del). key and value share
// one allocation and are never modified once staged.
type stagedItem struct {
	key        []byte
	start, end int64
	value      []byte
	del        bool
}

// noCutoff is the expiry cutoff of an overlay without a staged ExpireBefore:
// no time is before it.
const noCutoff = math.MinInt64

// newStagedItem copies key and value into one allocation.
func newStagedItem(key []byte, start, end int64, value []byte) stagedItem {
	buf := make([]byte, len(key)+len(value))
	n := copy(buf, key)
	copy(buf[n:], value)
	return stagedItem{key: buf[:n:n], start: start, end: end, value: buf[n:], del: value == nil}
}

// stagingBudget counts an overlay's staged bytes against its limit.
type stagingBudget struct {
	store string
	limit int64
	used  int64
}

// newStagingBudget validates the arguments every constructor shares.
func newStagingBudget(kind Kind, base Store, limit int64) (stagingBudget, error) {
	if base == nil {
		return stagingBudget{}, fmt.Errorf("statestore: stage %s store: nil base", kind)
	}
	if limit <= 0 {
		return stagingBudget{}, fmt.Errorf("statestore: stage %s store %q: limit %d bytes, want > 0", kind, base.Name(), limit)
	}
	return stagingBudget{store: base.Name(), limit: limit}, nil
}

// replace accounts for an entry of oldSize bytes (0 if none) replaced by one
// of newSize bytes, or returns a *StagingFullError and changes nothing.
func (b *stagingBudget) replace(oldSize, newSize int64) error {
	next := b.used - oldSize + newSize
	if newSize > oldSize && next > b.limit {
		return &StagingFullError{Store: b.store, Limit: b.limit, Staged: b.used, Write: newSize - oldSize}
	}
	b.used = next
	return nil
}

// maxMilli returns the later of two Unix millisecond times as a time.Time.
func maxMilli(t time.Time, ms int64) time.Time {
	if t.UnixMilli() >= ms {
		return t
	}
	return time.UnixMilli(ms)
}
