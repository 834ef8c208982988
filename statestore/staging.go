package statestore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
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
// committed state, so a query never sees an epoch that may still abort. An
// engine that applies committed epochs behind processing freezes them into
// layers (staging_layers.go); queries then read Committed.

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
	// Commit writes the frozen layers' changes, oldest first, and then
	// the staged changes to the base through its interface, and clears the
	// overlay.
	Commit() error
	// Reset drops the staged writes: after an abort, or after the engine
	// applied Changes to the base itself. Frozen layers are kept.
	Reset()
	// Freeze ends the staging layer once its epoch committed: its writes
	// become a frozen layer, read beneath the new staging layer until the
	// engine has applied the layer's Changes to the base and dropped it
	// (see Layer). It returns nil if nothing is staged.
	Freeze() *Layer
	// FreezePending is Freeze for an epoch whose commit is still
	// undecided: the layer is pending — read by the overlay, not by its
	// committed views — until the engine calls its Commit or Discard.
	FreezePending() *Layer
	// Frozen returns how many frozen layers the overlay holds.
	Frozen() int
	// Committed returns a read-only view of base — a store of the
	// overlay's kind over the same rows as the overlay's base, such as a
	// reader for interactive queries — with the overlay's frozen layers
	// over it, never its staging layer nor a pending layer (see
	// FreezePending): the committed state. Writes to it
	// fail; closing it closes base. Once the overlay is closed the view
	// reads base alone.
	Committed(base Store) (Store, error)
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

// noCutoff is the expiry cutoff of an overlay without a staged ExpireBefore:
// no time is before it.
const noCutoff = math.MinInt64

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

// overlayKind is what one kind of staging overlay supplies to the code the
// three share (staging): the layout of its entries, and how its staged
// state reaches its base B.
type overlayKind[B Store] struct {
	layout *layout
	// write applies one staged entry, a delete included, to the base.
	write func(base B, e entry) error
	// scanHidden appends a delete for every base entry that expires before
	// cutoff and is not staged, for a base that is no ExpiryScanner; nil
	// if the kind's interface cannot list them.
	scanHidden func(base B, cutoff int64, staged func(entry) bool, out []Change) ([]Change, error)
}

// expiring is the method window and session stores share.
type expiring interface{ ExpireBefore(cutoff time.Time) error }

// staging is the generic base of the staging overlays: StagedKeyValue,
// StagedWindow and StagedSession embed it and add their kind's reads and
// writes. It holds the staged entries (and, for windows and sessions, their
// expiry index), counts them against the limit, and commits or drops them.
type staging[B Store] struct {
	k      *overlayKind[B]
	base   B
	closed atomic.Bool
	mu     sync.RWMutex
	idx    indexed
	budget stagingBudget
	puts   int // staged puts (the rest of idx are deletes)
	// cutoff is the latest staged ExpireBefore (Unix ms), noCutoff if
	// none: the base's entries that expire before it are hidden.
	cutoff int64
	// frozen holds the committed layers not yet in the base (see Freeze),
	// shared with the overlay's views; view marks a view (Committed).
	frozen *frozenStack
	view   bool
}

var (
	_ KeyValueStore = (*StagedKeyValue)(nil)
	_ WindowStore   = (*StagedWindow)(nil)
	_ SessionStore  = (*StagedSession)(nil)
	_ Staged        = (*StagedKeyValue)(nil)
	_ Staged        = (*StagedWindow)(nil)
	_ Staged        = (*StagedSession)(nil)
)

// stage returns a new overlay S of kind k over base: what the constructors
// NewStagedKeyValue, NewStagedWindow and NewStagedSession share.
func stage[S any, B Store, PS interface {
	*S
	init(k *overlayKind[B], base B, limit int64) error
}](k *overlayKind[B], base B, limit int64) (PS, error) {
	s := PS(new(S))
	if err := s.init(k, base, limit); err != nil {
		return nil, err
	}
	return s, nil
}

// init validates the arguments every constructor shares and sets s up.
func (s *staging[B]) init(k *overlayKind[B], base B, limit int64) error {
	budget, err := newStagingBudget(k.layout.kind, base, limit)
	if err != nil {
		return err
	}
	s.k, s.base, s.budget = k, base, budget
	s.frozen = &frozenStack{}
	s.reset()
	return nil
}

// Name returns the base's name.
func (s *staging[B]) Name() string { return s.base.Name() }

// Kind returns the kind of the overlay and of its base.
func (s *staging[B]) Kind() Kind { return s.k.layout.kind }

// Close drops the staged writes and the frozen layers, and closes the
// base. Later operations, and the Next of open iterators, return
// ErrClosed. Closing twice is not an error. Closing a view (Committed)
// closes its base only.
func (s *staging[B]) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.reset()
	if !s.view {
		s.frozen.mu.Lock()
		s.frozen.layers = nil
		s.frozen.mu.Unlock()
	}
	return s.base.Close()
}

// put stages e (a delete if e.del), or fails with a *StagingFullError if it
// does not fit in the limit.
func (s *staging[B]) put(e entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	old, had := s.idx.get(e)
	if err := s.budget.replace(s.k.layout.size(old, had), s.k.layout.size(e, true)); err != nil {
		return err
	}
	s.idx.set(e)
	if had && !old.del {
		s.puts--
	}
	if !e.del {
		s.puts++
	}
	return nil
}

// writable reports why s takes no write, with s.mu held: it is closed
// (ErrClosed), or a read-only view (Committed).
func (s *staging[B]) writable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.view {
		return errReadOnly
	}
	return nil
}

// lookup answers a point read from the staged state — the staging layer,
// then the frozen layers — with rlock held: the staged value of e's
// identity (a copy), or its absence when a staged delete or a staged
// ExpireBefore hides it. fromBase says the base must answer.
func (s *staging[B]) lookup(e entry) (value []byte, ok, fromBase bool, err error) {
	if s.closed.Load() {
		return nil, false, false, ErrClosed
	}
	if it, found := s.idx.get(e); found {
		if it.del {
			return nil, false, false, nil
		}
		return bytes.Clone(it.value), true, false, nil
	}
	if s.cutoff != noCutoff && s.k.layout.expiresAt(e) < s.cutoff {
		return nil, false, false, nil
	}
	value, ok, fromBase = s.lookupFrozen(e)
	return value, ok, fromBase, nil
}

// expireBefore stages an ExpireBefore(cutoff): the staged entries that
// expire before it are dropped now, the base's are hidden until Commit
// deletes them (or Reset brings them back).
func (s *staging[B]) expireBefore(cutoff time.Time) error {
	ms := cutoff.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writable(); err != nil {
		return err
	}
	s.cutoff = max(s.cutoff, ms)
	s.idx.expire(ms, func(old entry) {
		s.budget.used -= s.k.layout.size(old, true)
		if !old.del {
			s.puts--
		}
	})
	return nil
}

// Changes returns the staged writes in the store's order — Key is the store
// key (the key; EncodeWindowKey(key, start); EncodeSessionKey(key, start,
// end)), Value the new value or nil for a delete — and, after a staged
// ExpireBefore, a delete for every base entry it hides that has no staged
// write. Those deletes are listed through the base's ExpiryScanner if it
// has one, else through the base's own interface where it can (FetchAll
// for a window store; a session store cannot, and Changes then fails with
// an error wrapping errors.ErrUnsupported: use Commit); they are not
// counted against the limit. The slices are the overlay's own and must not
// be modified; they stay valid after Reset.
func (s *staging[B]) Changes() ([]Change, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.changesOf(&s.idx, s.cutoff)
}

// changesOf returns the Changes of one layer: its entries idx and its
// staged ExpireBefore cutoff.
func (s *staging[B]) changesOf(idx *indexed, cutoff int64) ([]Change, error) {
	out := make([]Change, 0, idx.tree.Len())
	cur := idx.cursor()
	defer cur.Close()
	for it, ok := cur.Next(); ok; it, ok = cur.Next() {
		out = append(out, Change{Key: s.k.layout.encode(it), Value: stagedValue(it)})
	}
	if cutoff == noCutoff {
		return out, nil
	}
	staged := func(e entry) bool {
		_, ok := idx.get(e)
		return ok
	}
	if scanner, ok := any(s.base).(ExpiryScanner); ok {
		return appendExpired(out, scanner, cutoff, func(enc []byte) (bool, error) {
			e, err := s.k.layout.decode(enc)
			return err == nil && staged(e), err
		})
	}
	if s.k.scanHidden == nil {
		return nil, fmt.Errorf("statestore: staged %s store %q: base %T cannot list the entries ExpireBefore deletes (no ScanExpired); use Commit: %w",
			s.k.layout.kind, s.base.Name(), s.base, errors.ErrUnsupported)
	}
	return s.k.scanHidden(s.base, cutoff, staged, out)
}

// appendExpired appends a delete for every key scanner lists for cutoff
// that staged does not report as staged.
func appendExpired(out []Change, scanner ExpiryScanner, cutoff int64, staged func(enc []byte) (bool, error)) ([]Change, error) {
	it, err := scanner.ScanExpired(time.UnixMilli(cutoff))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for it.Next() {
		enc := it.Key()
		if ok, err := staged(enc); err != nil {
			return nil, err
		} else if !ok {
			out = append(out, Change{Key: enc})
		}
	}
	return out, it.Err()
}

// stagedValue returns the value a Change carries: nil for a delete.
func stagedValue(it entry) []byte {
	if it.del {
		return nil
	}
	return it.value
}

// Commit writes every layer to the base, the frozen ones first, oldest
// first, then the staging layer: for each, it applies a staged ExpireBefore
// to the base, then writes the staged writes in the store's order. Then it
// clears the overlay. If a base call fails, Commit returns its error and
// keeps the layers not yet written whole (applying one again is
// harmless), so the caller may retry.
func (s *staging[B]) Commit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.view {
		return errReadOnly
	}
	s.frozen.mu.Lock()
	defer s.frozen.mu.Unlock()
	for len(s.frozen.layers) > 0 {
		l := s.frozen.layers[0]
		if err := s.write(&l.idx, l.cutoff); err != nil {
			return err
		}
		s.frozen.layers = s.frozen.layers[1:]
	}
	if err := s.write(&s.idx, s.cutoff); err != nil {
		return err
	}
	s.reset()
	return nil
}

// write applies one layer to the base through its interface: its staged
// ExpireBefore, then its writes in the store's order.
func (s *staging[B]) write(idx *indexed, cutoff int64) error {
	if cutoff != noCutoff { // only window and session stores expire
		if err := any(s.base).(expiring).ExpireBefore(time.UnixMilli(cutoff)); err != nil {
			return err
		}
	}
	cur := idx.cursor()
	defer cur.Close()
	for it, ok := cur.Next(); ok; it, ok = cur.Next() {
		if err := s.k.write(s.base, it); err != nil {
			return err
		}
	}
	return nil
}

// Reset drops the staged writes and any staged ExpireBefore. Open iterators
// keep their snapshot.
func (s *staging[B]) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *staging[B]) reset() {
	s.idx = newIndexed(s.k.layout)
	s.budget.used = 0
	s.puts = 0
	s.cutoff = noCutoff
}

// StagedBytes returns how many bytes are staged.
func (s *staging[B]) StagedBytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.budget.used
}
